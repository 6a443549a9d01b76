"""The model seam, the request itself: what every model call sends, and where. Each turn sends the whole
conversation (the API keeps no state) as JSON to {base_url}/chat/completions, the key as a Bearer token, and the
reply is the first choice's message.

`BareModel.chat` is that and nothing else. client.py's `Client` is a BareModel: it sends this same request
(`request`, to `endpoint`, with `headers`) on one kept-open connection, with retries, streaming, deadlines and one
clear line for every way it can fail. That is the one a session uses; the tour of the loop reads this one.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import requests

from harness.common.seam_types import ChatError, Reply


def chat_url(base_url: str) -> str:
    """Apply the base URL rule: keep the user's path, strip '/' and a pasted '/chat/completions', append it,
    before any query (Azure's `?api-version=`); a fragment, which never reaches a server, is dropped.

    >>> chat_url("http://localhost:11434/v1/chat/completions/"), chat_url("https://r.example/d?api-version=1")
    ('http://localhost:11434/v1/chat/completions', 'https://r.example/d/chat/completions?api-version=1')
    """
    scheme, netloc, path, query, _ = urlsplit(base_url.strip())
    path = path.rstrip("/").removesuffix("/chat/completions")
    return urlunsplit((scheme, netloc, path + "/chat/completions", query, ""))


class BareModel:
    """`chat(messages) -> Reply`: one POST of the conversation, one reply read."""

    def __init__(self, base_url: str, api_key: str | None, model: str):
        self.endpoint, self.model = chat_url(base_url), model  # {base_url}/chat/completions; /model changes it
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}  # a local server needs no key

    def request(self, messages: list[dict]) -> dict:
        """The JSON body: the model's name and the whole conversation, [{"role": "system", "content": ...}, ...]."""
        return {"model": self.model, "messages": messages}

    def chat(self, messages: list[dict]) -> Reply:
        try:
            response = requests.post(self.endpoint, headers=self.headers, json=self.request(messages),
                                     timeout=(10, 300))
        except requests.RequestException as error:  # refused, unreachable, timed out: the request never got answered
            raise ChatError(f"Could not reach {self.endpoint}: {error}") from None
        if response.status_code != 200:
            raise ChatError(f"{response.status_code} from {self.endpoint}: {response.text[:300]}")
        try:
            data = response.json()  # {"choices": [{"message": {"content": ...}, "finish_reason": ...}], "usage": ...}
            choice = data["choices"][0]
            return Reply(text=choice["message"]["content"] or "", finish_reason=choice.get("finish_reason"),
                         usage=data.get("usage") or {})
        except (ValueError, KeyError, IndexError, TypeError):  # not JSON, or not a chat completion
            raise ChatError(f"200 from {self.endpoint}, but no chat completion: {response.text[:300]}") from None
