"""The HTTP client: one POST to {base_url}/chat/completions, with retries, and one clear line per failure.

No vendor SDK: the request is plain JSON over `requests`. One `requests.Session` serves the whole run, so
every model call of a session reuses one TCP (and TLS) connection. Everything that can go wrong on the
way — refused connections, timeouts, 4xx/5xx, HTML from a proxy, a 200 that carries an error — ends as a
`ChatError` whose message is the single line the user sees.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests
import urllib3

# Statuses worth another try: the request may well succeed a moment later. 400/401/403/404/422 never do.
RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504, 529}
# Words in a 429's error code/type that mean "out of money", not "too fast": waiting will not help.
QUOTA_WORDS = ("quota", "insufficient", "billing", "credit", "balance")
# Model families that reject the `stop` parameter outright (OpenAI reasoning models).
NO_STOP_MODELS = re.compile(r"^(o\d|gpt-5)", re.IGNORECASE)


class ChatError(Exception):
    """A model call failed; str(error) is the one line to show the user.

    `status` and `detail` (the server's own words) are set for an HTTP error response, so a caller can
    tell a refusal it can act on (a prompt too long for the model's window) from one it cannot.
    """

    def __init__(self, message: str, status: int | None = None, detail: str = ""):
        super().__init__(message)
        self.status = status
        self.detail = detail


@dataclass
class Reply:
    text: str  # the assistant's text ("" when content was null)
    finish_reason: str | None = None  # "stop", "length", ...
    usage: dict = field(default_factory=dict)  # prompt_tokens, completion_tokens, ... as the server reported


def chat_url(base_url: str) -> str:
    """Apply the base URL rule: keep the user's path, strip '/' and a pasted '/chat/completions', append it.

    >>> chat_url("http://localhost:11434/v1/chat/completions/")
    'http://localhost:11434/v1/chat/completions'
    """
    base = base_url.strip().rstrip("/")
    if base.endswith("/chat/completions"):
        base = base[: -len("/chat/completions")]
    return base + "/chat/completions"


class Client:
    """Talks to one OpenAI-compatible endpoint for the whole session."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        connect_timeout: float = 10.0,  # seconds to open the connection
        read_timeout: float = 300.0,  # seconds of silence allowed while waiting for bytes
        deadline: float = 600.0,  # seconds for one whole request, body included
        max_retries: int = 3,  # further attempts after the first, on retryable failures only
        retry_after_cap: float = 60.0,  # longest Retry-After we wait out; longer ones fail at once
        stop: list[str] | None = None,  # stop sequences; None sends none
        sleep: Callable[[float], None] = time.sleep,
        log: Callable[[str], None] = lambda line: None,
    ):
        self.url = chat_url(base_url)
        self.base_url = base_url
        self.model = model
        self.timeout = (connect_timeout, read_timeout)
        self.deadline = deadline
        self.max_retries = max_retries
        self.retry_after_cap = retry_after_cap
        # Sending `stop` to a model that rejects it costs a 400 on every call; leave it out up front.
        self.stop = stop if stop and not NO_STOP_MODELS.match(model.rsplit("/", 1)[-1]) else None
        self.sleep = sleep
        self.log = log
        self.session = requests.Session()
        self.session.headers["User-Agent"] = "plainagent/0.1"
        if api_key:  # local servers (Ollama, LM Studio) run without one; then no Authorization header
            self.session.headers["Authorization"] = f"Bearer {api_key}"

    def chat(self, messages: list[dict]) -> Reply:
        """Send the conversation, return the assistant's reply, or raise ChatError with one clear line."""
        body: dict = {"model": self.model, "messages": messages}
        if self.stop:
            body["stop"] = self.stop
        response = self._post_with_retries(body)
        if response.status_code == 400 and self.stop and "stop" in server_message(response).lower():
            # The model refuses `stop`: it was only an optimisation, so drop it for the rest of the session.
            self.log(f"{self.model} rejects the 'stop' parameter; sending requests without it")
            self.stop = None
            del body["stop"]
            response = self._post_with_retries(body)
        if response.status_code != 200:
            raise ChatError(self._describe_failure(response), response.status_code, server_message(response))
        return parse_completion(response, self.url)

    def _post_with_retries(self, body: dict) -> requests.Response:
        """POST until a response that is final: success, a non-retryable status, or retries spent."""
        for attempt in range(self.max_retries + 1):
            last_try = attempt == self.max_retries
            try:
                response = self._post(body)
            except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as error:
                if last_try:
                    raise ChatError(describe_connection_error(error, self.url)) from None
                delay = self._backoff(attempt)
                self.log(f"{short_reason(error)} from {self.url}; retrying in {delay:.1f} s")
            except requests.RequestException as error:  # a malformed URL and the like: retrying cannot help
                raise ChatError(f"Request to {self.url} failed: {error}") from None
            else:
                if response.status_code not in RETRY_STATUSES or last_try or is_quota_exhausted(response):
                    return response
                delay = retry_after(response)
                if delay is None:
                    delay = self._backoff(attempt)
                elif delay > self.retry_after_cap:
                    raise ChatError(
                        f"{response.status_code} from {self.url}: the server asks to wait {delay:.0f} s "
                        f"before retrying; try again later. {server_message(response)}".rstrip()
                    )
                self.log(f"{response.status_code} from {self.url}; retrying in {delay:.1f} s "
                         f"(attempt {attempt + 2} of {self.max_retries + 1})")
            self.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _post(self, body: dict) -> requests.Response:
        """One POST, read whole within the deadline (requests' timeouts only bound each socket wait)."""
        give_up_at = time.monotonic() + self.deadline
        response = self.session.post(self.url, json=body, timeout=self.timeout, stream=True)
        chunks = []
        try:
            # read1 returns whatever has arrived, so a server that drips bytes forever meets the deadline.
            while chunk := response.raw.read1(65536):
                chunks.append(chunk)
                if time.monotonic() > give_up_at:
                    response.close()
                    raise requests.Timeout(f"no complete response within {self.deadline:g} s")
        # Reading `raw` ourselves means urllib3's errors reach us unwrapped; give them requests' names,
        # as requests' own iter_content would.
        except urllib3.exceptions.ReadTimeoutError:
            raise requests.Timeout(f"no data for {self.timeout[1]:g} s while reading the response") from None
        except urllib3.exceptions.HTTPError as error:
            raise requests.exceptions.ChunkedEncodingError(error) from None
        # Hand requests the body we read, then return the connection to the pool for the next call.
        response._content, response._content_consumed = b"".join(chunks), True
        response.close()
        return response

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: about 0.5, 1, 2, 4 s (capped at 8), each up to 25% shorter."""
        return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * random.random())

    def _describe_failure(self, response: requests.Response) -> str:
        """One line for a final non-200 response: what failed and what to do."""
        status, message = response.status_code, server_message(response)
        where = f"{status} from {self.url}"
        if status in (401, 403):
            return f"{where}: the API key was refused; check OPENAI_API_KEY. {message}".rstrip()
        if status == 404:
            hint = f"check the model name '{self.model}' (OPENAI_MODEL) and the base URL (OPENAI_BASE_URL)"
            if not re.search(r"/v\d", urlsplit(self.base_url).path):
                hint += f"; the base URL has no version path: did you mean {self.base_url.rstrip('/')}/v1?"
            return f"{where}: {hint}. {message}".rstrip()
        if status == 429 and is_quota_exhausted(response):
            return f"{where}: quota or credit exhausted; check your plan and billing. {message}".rstrip()
        return f"{where}: {message or response.reason}"


def parse_completion(response: requests.Response, url: str) -> Reply:
    """Read a 200 response body into a Reply; anything that is not a usable completion is a ChatError."""
    try:
        data = response.json()
    except ValueError:
        raise ChatError(f"200 from {url} but the body is not JSON: {snippet(response.text)}") from None
    if not isinstance(data, dict):
        raise ChatError(f"200 from {url} but the body is not a JSON object: {snippet(response.text)}")
    if data.get("error"):
        raise ChatError(f"200 from {url} carrying an error: {error_text(data['error'])}")
    choices = data.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise ChatError(f"200 from {url} with no choices in the reply: {snippet(response.text)}")
    message = choices[0].get("message") or {}
    return Reply(
        text=content_text(message.get("content")),
        finish_reason=choices[0].get("finish_reason"),
        usage=data.get("usage") or {},
    )


def content_text(content) -> str:
    """The text of a message's content: null -> "", a list of parts -> their text parts joined."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def retry_after(response: requests.Response) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, or `Retry-After` in seconds or as an HTTP date."""
    if value := response.headers.get("retry-after-ms"):
        try:
            return max(float(value) / 1000, 0.0)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def is_quota_exhausted(response: requests.Response) -> bool:
    """A 429 whose error code or type says the quota/credit is gone (OpenAI: insufficient_quota)."""
    if response.status_code != 429:
        return False
    error = error_object(response)
    labels = f"{error.get('code', '')} {error.get('type', '')}".lower()
    return any(word in labels for word in QUOTA_WORDS)


def error_object(response: requests.Response) -> dict:
    """The `error` object of a JSON error body, or {} when there is none."""
    try:
        data = response.json()
    except ValueError:
        return {}
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {}


def server_message(response: requests.Response) -> str:
    """The server's own words about a failure, from the shapes providers use, or the start of the body."""
    try:
        data = response.json()
    except ValueError:
        return f"Body: {snippet(response.text)}" if response.text.strip() else ""
    if isinstance(data, dict):
        for key in ("error", "message", "detail"):  # OpenAI / many proxies / FastAPI servers such as vLLM
            if data.get(key):
                return error_text(data[key])
    return snippet(response.text)


def error_text(error) -> str:
    """Text of an `error` value: OpenAI's {"message", "code"}, Ollama's plain string, or anything else."""
    if isinstance(error, dict):
        message = str(error.get("message") or error)
        code = error.get("code") or error.get("type")
        return f"{message} ({code})" if code and str(code) not in message else message
    return str(error)


def snippet(text: str, limit: int = 200) -> str:
    """The first `limit` characters of a body on one line (an HTML error page, say)."""
    return " ".join(text.split())[:limit]


def short_reason(error: Exception) -> str:
    """'timed out' or 'connection failed', for progress lines."""
    return "timed out" if isinstance(error, requests.Timeout) else "connection failed"  # (or broke)


def describe_connection_error(error: Exception, url: str) -> str:
    """One line for a request that never got a response."""
    if isinstance(error, requests.Timeout):
        return f"Timed out talking to {url}: {str(error).rstrip('.')}. Is the server overloaded? Try again later."
    if isinstance(error, requests.exceptions.ChunkedEncodingError):
        return f"The connection to {url} broke before the whole response arrived. Try again."
    return f"Could not connect to {url}: is the server running and OPENAI_BASE_URL right?"
