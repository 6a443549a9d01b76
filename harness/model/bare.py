"""The model seam with nothing around it: one POST of the conversation, one reply read. Each turn sends the
whole conversation (the API keeps no state) to {base_url}/chat/completions, and the reply is the first choice's
message. A session's model (model.py's SessionModel) sends the same request through client.py's `Client`, with
retries, streaming, deadlines, a size cap, and one clear line for every way it can fail.
"""

from __future__ import annotations

import requests

from harness.common.seam_types import ChatError, Reply
from harness.model.client import chat_url


class BareModel:
    """`chat(messages) -> Reply`, like the session's Client: the loop cannot tell the two apart."""

    def __init__(self, base_url: str, api_key: str | None, model: str):
        self.url, self.model = chat_url(base_url), model  # {base_url}/chat/completions
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}  # a local server needs no key

    def chat(self, messages: list[dict]) -> Reply:
        body = {"model": self.model, "messages": messages}  # [{"role": "system", "content": ...}, ...]
        try:
            response = requests.post(self.url, headers=self.headers, json=body, timeout=(10, 300))
        except requests.RequestException as error:  # refused, unreachable, timed out: the request never got answered
            raise ChatError(f"Could not reach {self.url}: {error}") from None
        if response.status_code != 200:
            raise ChatError(f"{response.status_code} from {self.url}: {response.text[:300]}")
        try:
            data = response.json()  # {"choices": [{"message": {"content": ...}, "finish_reason": ...}], "usage": ...}
            choice = data["choices"][0]
            return Reply(text=choice["message"]["content"] or "", finish_reason=choice.get("finish_reason"),
                         usage=data.get("usage") or {})
        except (ValueError, KeyError, IndexError, TypeError):  # not JSON, or not a chat completion
            raise ChatError(f"200 from {self.url}, but no chat completion: {response.text[:300]}") from None
