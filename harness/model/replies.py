"""What the server sent, read: a completion into a `Reply`, a failure into one line, a request that never got
a whole response into one line. Every field is checked before use (a server may send any shape), and what
reaches the screen is printable text only. `client.py` sends the requests; this module reads the answers.
"""

from __future__ import annotations

import codecs
import email.utils
import json
import math
import re
import time

import requests
import urllib3

from harness.common.hosts import host_of
from harness.common.seam_types import ChatError, Reply
from harness.common.text_files import repaired
from prompt import JSON_TYPES  # how a JSON value is named, for the user as for the model

# Words in a 429's error code/type that mean "out of money", not "too fast": waiting will not help.
QUOTA_WORDS = ("quota", "insufficient", "billing", "credit", "balance")


# --- reading a completion: every field the server sends is checked before use ---


def parse_completion(response: requests.Response, url: str) -> Reply:
    """Read a 200 response body into a Reply; anything that is not a usable completion is a ChatError."""
    try:
        data = read_json(response)
    except ValueError:
        raise ChatError(f"200 from {url} but the body is not JSON: {body_snippet(response)}") from None
    if not isinstance(data, dict):
        raise ChatError(f"200 from {url} but the body is not a JSON object: {body_snippet(response)}")
    if data.get("error"):
        raise ChatError(f"200 from {url} carrying an error: {error_text(data['error'])}")
    choices = data.get("choices")
    if not choices:
        raise ChatError(f"200 from {url} with no choices in the reply: {body_snippet(response)}")
    if not isinstance(choices, list):
        raise unreadable(url, "choices", choices, "a list", response)
    choice = choices[0]
    if not isinstance(choice, dict):
        raise unreadable(url, "choices[0]", choice, "an object", response)
    message = choice.get("message")
    if message is None:  # null or missing: a reply with no content (filtered, say)
        message = {}
    if not isinstance(message, dict):
        raise unreadable(url, "choices[0].message", message, "an object", response)
    try:
        text = content_text(message.get("content"))
    except ValueError as error:
        raise ChatError(f"200 from {url} but choices[0].message.content {error}: {body_snippet(response)}") from None
    refusal = message.get("refusal")  # OpenAI puts a refusal here, with a null content
    if not text and isinstance(refusal, str):
        text = refusal
    text = repaired(text)
    finish_reason = choice.get("finish_reason")
    return Reply(
        text=text,
        native_calls=[native_call_name(call) or "?" for call in native_calls(message.get("tool_calls"))],
        # Metadata, not the reply: one in a shape we cannot read tells as much as none.
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        usage=token_counts(data.get("usage")),
    )


def native_calls(tool_calls) -> list:
    """The entries of a message's (or a delta's) native `tool_calls`, whatever shape the server gave it: a list,
    one call on its own, or nothing."""
    if isinstance(tool_calls, list):
        return tool_calls
    return [tool_calls] if tool_calls else []


def native_call_name(call) -> str | None:
    """The function name one native tool call gives, or None when its shape names none (any shape is possible:
    `{"function": "read_file"}`, a string, null), so that reading it can never fail."""
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    return snippet(name, limit=100) or None if isinstance(name, str) else None


def unreadable(url: str, where: str, value, expected: str, response: requests.Response) -> ChatError:
    """The error for a field in a shape we cannot read: '… choices[0].message is a string, not an object'."""
    found = JSON_TYPES.get(type(value), type(value).__name__)
    return ChatError(f"200 from {url} but {where} is {found}, not {expected}: {body_snippet(response)}")


def content_text(content) -> str:
    """The text of a message's content: null -> "", a string, or a list of parts -> their text joined.

    >>> content_text([{"type": "text", "text": "a"}, {"type": "text", "text": None}, {"type": "image_url"}, "b"])
    'ab'

    Parts without text (null, or an image) are skipped; content that holds something other than text
    raises ValueError saying what it holds.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ValueError(f"is {JSON_TYPES.get(type(content), 'not text')}, not text")
    texts = []
    for part in content:
        text = part.get("text") if isinstance(part, dict) else part
        if text is None:
            continue
        if not isinstance(text, str):
            raise ValueError(f"has a part that is {JSON_TYPES.get(type(text), 'not text')}, not text")
        texts.append(text)
    return "".join(texts)


def token_counts(usage) -> dict[str, int]:
    """The whole-number counts in a `usage` object; anything else there is no count we can add up."""
    if not isinstance(usage, dict):
        return {}
    return {key: value for key, value in usage.items() if isinstance(value, int) and not isinstance(value, bool)}


def error_body(response: requests.Response):
    """A failure's body as JSON, or None when it is not JSON."""
    try:
        return read_json(response)
    except ValueError:
        return None


def read_json(response: requests.Response):
    """The body parsed as JSON; ValueError if it is not (JSON nested too deep for Python counts as not)."""
    try:
        return json.loads(response.content.removeprefix(codecs.BOM_UTF8))  # a BOM is no reason to refuse a reply
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


# --- reading a failure ---


def retry_after(response: requests.Response) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, or `Retry-After` in seconds or as an HTTP date."""
    if value := response.headers.get("retry-after-ms"):
        try:
            return max(finite(float(value)) / 1000, 0.0)
        except ValueError:
            pass
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(finite(float(value)), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def finite(number: float) -> float:
    """`number`, or ValueError for nan and inf (float() accepts both, and sleep(nan) is a crash)."""
    if not math.isfinite(number):
        raise ValueError(f"not a finite number: {number}")
    return number


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
        data = read_json(response)
    except ValueError:
        return {}
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {}


def server_message(response: requests.Response) -> str:
    """The server's own words about a failure, from the shapes providers use, or the start of the body."""
    try:
        data = read_json(response)
    except ValueError:
        return f"Body: {body_snippet(response)}" if response.content.strip() else ""
    if isinstance(data, dict):
        for key in ("error", "message", "detail"):  # OpenAI / many proxies / FastAPI servers such as vLLM
            if data.get(key):
                return error_text(data[key])
    return body_snippet(response)


def error_text(error) -> str:
    """Text of an `error` value: OpenAI's {"message", "code"}, Ollama's plain string, or anything else."""
    if isinstance(error, dict):
        message = error.get("message")
        if not (isinstance(message, str) and message.strip()):
            message = json.dumps(error, ensure_ascii=False)
        code = error.get("code") or error.get("type")
        if isinstance(code, (str, int)) and str(code) not in message:
            message = f"{message} ({code})"
    else:
        message = error if isinstance(error, str) else json.dumps(error, ensure_ascii=False)
    return snippet(message, limit=1000)


def body_snippet(response: requests.Response, limit: int = 200) -> str:
    """The start of a body on one printable line (an HTML error page, say), or what it is when not text."""
    try:  # the charset the server named, else UTF-8: a guessed charset turns binary into plausible text
        text = response.content.decode(response.encoding or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        text = response.content.decode("utf-8", errors="replace")
    if not text.strip():
        return "(an empty body)"
    noise = sum(1 for char in text if char == "\ufffd" or not (char.isprintable() or char.isspace()))
    if noise > len(text) // 20:
        encoding = response.headers.get("Content-Encoding")
        what = f"{len(response.content)} bytes that are not text"
        return f"({what}, Content-Encoding: {one_line(encoding)})" if encoding else f"({what})"
    return snippet(text, limit)


def snippet(text: str, limit: int = 200) -> str:
    """The first `limit` characters of `text` on one line."""
    return one_line(text)[:limit]


def one_line(text: str) -> str:
    """`text` as one line of printable characters: a server's words must not move the cursor or ring the bell."""
    return " ".join("".join(char for char in text if char.isprintable() or char.isspace()).split())


# --- a request that never got a whole response ---


def error_chain(error: BaseException) -> list[BaseException]:
    """The error and those it wraps, outermost first (requests and urllib3 nest them in args, reason, cause)."""
    chain: list[BaseException] = []
    while error is not None and error not in chain:
        chain.append(error)
        inner = [getattr(error, "reason", None), error.__cause__, *error.args]  # ssl's `reason` is a str
        error = next((link for link in inner if isinstance(link, BaseException)), None)
    return chain


def is_broken_connection(error: BaseException) -> bool:
    """True when the connection was made and then lost (reset, closed early, body cut short), not refused.

    requests calls both a ConnectionError; urllib3's ProtocolError inside says the connection had been made.
    """
    lost = (urllib3.exceptions.ProtocolError, requests.exceptions.ChunkedEncodingError, ConnectionResetError)
    return any(isinstance(link, lost) for link in error_chain(error))


def describe_connection_error(error: Exception, url: str) -> str:
    """One line for a request that never got a whole response."""
    chain = error_chain(error)
    if isinstance(error, requests.ConnectTimeout):
        return (f"Timed out connecting to {url}: is the server running and OPENAI_BASE_URL right? (A longer wait: "
                "--connect-timeout or PLAINAGENT_CONNECT_TIMEOUT.)")
    if isinstance(error, requests.Timeout):
        return f"Timed out talking to {url}: {str(error).rstrip('.')}. Is the server overloaded? Try again later."
    if is_broken_connection(error):
        return f"The connection to {url} broke before the whole response arrived. Try again."
    if any(isinstance(link, urllib3.exceptions.NameResolutionError) for link in chain):
        return f"Could not connect to {url}: the host name {host_of(url)} was not found; check OPENAI_BASE_URL."
    if any(isinstance(link, requests.exceptions.SSLError) for link in chain):
        return f"Could not make a secure connection to {url}: {one_line(str(chain[-1]))}"
    return f"Could not connect to {url}: is the server running and OPENAI_BASE_URL right?"


# --- a 400 about a parameter we sent ---

# How servers say a parameter is not theirs (OpenAI, vLLM, llama.cpp, LiteLLM, Azure); a 400 that names max_tokens
# without such words is about its value ("max_tokens is too large", "the valid range of max_tokens is [1, 8192]").
UNSUPPORTED = (r"(?i)unsupported|unrecognized|unknown|not supported|extra (?:fields|inputs)|not permitted|"
               r"not allowed|does not (?:support|accept)|invalid (?:request )?(?:argument|parameter)s?\b")
# What a refused limit's value says the most is: "at most 16384", "[1, 8192]", "less than or equal to 4096"; vLLM:
# "maximum context length is 4096 tokens and your request has 500 input tokens" (the rest is the reply's).
STATED_CAP = (r"(?i)at most (\d+)", r"\[\s*\d+\s*,\s*(\d+)\s*\]", r"(?i)less than or equal to (\d+)")
WINDOW_AND_INPUT = r"(?i)maximum context length is (\d+) tokens and your request has (\d+) input tokens"


def rejected_parameter(body: dict, response: requests.Response, optional: tuple[str, ...]) -> str | None:
    """The optional parameter a 400 names as one the server does not take, if we sent it: 'Unsupported
    parameter: stop'. A reply limit whose value it refuses is reply_cap's."""
    message = server_message(response)
    named = next((name for name in optional if name in body and name in message.lower()), None)
    if named and named.startswith("max_") and not re.search(UNSUPPORTED, message):
        return None
    return named


def reply_cap(body: dict, response: requests.Response) -> int | None:
    """The most tokens a reply may ask for, by a 400 that refuses the limit's value; None if it says none."""
    message, asked = server_message(response), body.get("max_tokens") or body.get("max_completion_tokens")
    if not asked or not re.search(r"max_(?:completion_)?tokens", message):
        return None
    if stated := re.search(WINDOW_AND_INPUT, message):
        cap = int(stated[1]) - int(stated[2])
    else:
        cap = next((int(found[1]) for pattern in STATED_CAP if (found := re.search(pattern, message))), None)
    return cap if cap and 0 < cap < asked else None
