"""Reading a streamed reply: server-sent events (SSE) from raw bytes, put together into one `Reply`.

With `stream: true` a server sends the reply as it is generated, one event per piece:

    data: {"choices": [{"delta": {"content": "Hel"}, "finish_reason": null}]}
    data: {"choices": [{"delta": {"content": "lo"}, "finish_reason": "stop"}]}
    data: {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2}}
    data: [DONE]

Lines are cut from the bytes at `\\n` and only then decoded, so a character split between two network reads
arrives whole (decoding each read on its own would garble it, and splitting decoded text with
`str.splitlines` would also break lines at U+2028, which models write inside code). A reply is complete when
`[DONE]` or a `finish_reason` arrives; a stream that ends with neither was cut, and nothing of it is used.
What the server sends is data: every field is checked before use, and a lone surrogate repaired, as for a whole
reply (replies.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from harness.common.text_files import repaired
from harness.model.replies import native_call_name, native_calls


class StreamCut(Exception):
    """The stream ended before the reply was complete (no [DONE], no finish_reason): it must be asked again."""


class StreamError(Exception):
    """The server reported an error inside the stream, or sent an event we cannot read; str() says which."""


@dataclass
class Event:
    """One server-sent event: its type ("message" unless the server names another) and its data lines joined."""

    kind: str
    data: str
    whole: bool = True  # False for the last event when the stream ended inside it (before its blank line)


def read_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The lines in a stream of byte chunks, decoded whole, without their `\\r\\n` or `\\n`.

    >>> list(read_lines([b"da", b"ta: \\xe4\\xb8", b"\\xad\\r\\n\\n"]))
    ['data: 中', '']
    """
    pending = b""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.removesuffix(b"\r").decode("utf-8", errors="replace")
    if pending:  # a last line without its line break: the stream was cut there, and the reader will say so
        yield pending.removesuffix(b"\r").decode("utf-8", errors="replace")


def read_events(lines: Iterable[str]) -> Iterator[Event]:
    """The events in SSE lines: `data:` lines (with or without a space) up to a blank line make one event.

    A line starting with `:` is a comment (servers send them to keep a quiet connection open). llama.cpp's
    server writes a failure as an `error: {...}` line of its own, so that field is an event too.
    """
    kind, data = "message", []
    for line in lines:
        if not line:
            if data:
                yield Event(kind, "\n".join(data))
            kind, data = "message", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
        elif name == "error":
            yield Event("error", value)
    if data:
        yield Event(kind, "\n".join(data), whole=False)


@dataclass
class Streamed:
    """What a stream has said so far."""

    text: list[str] = field(default_factory=list)  # content deltas, in order
    reasoning: list[str] = field(default_factory=list)  # reasoning deltas: shown, never sent back
    finish_reason: str | None = None
    usage: dict = field(default_factory=dict)
    native_calls: list[str] = field(default_factory=list)
    done: bool = False  # [DONE] arrived
    overran: bool = False  # read no further: it ran past max_bytes, a reply that does not stop
    n_bytes: int = 0  # of text and reasoning so far, in UTF-8 (a token is 1 to 4 of them, CJK's 3)


def read_stream(chunks: Iterable[bytes], on_delta: Callable[[str, str], None] | None = None,
                on_finish: Callable[[], None] = lambda: None, max_bytes: int | None = None) -> Streamed:
    """Read a whole SSE stream; `on_delta(kind, text)` sees each piece as it arrives ("text" or "reasoning"),
    and `on_finish()` is called once, when a finish_reason arrives (the reply is whole; a usage chunk and
    [DONE] may follow, or a server may hold the stream open). A reply past `max_bytes` (text and reasoning) ends
    there, as if the server had cut it off ("length"): a server that ignores the reply's limit stops nowhere.

    Raises StreamError for an error the server reports, StreamCut when the stream ends before the reply did.
    """
    streamed = Streamed()
    for event in read_events(read_lines(chunks)):
        if event.data.strip() == "[DONE]":
            streamed.done = True
            break
        if not event.whole and not is_json(event.data):
            break  # cut in the middle of an event
        finished = streamed.finish_reason is not None
        take_event(event, streamed, on_delta or (lambda kind, text: None))
        if not finished and max_bytes and streamed.n_bytes > max_bytes:
            streamed.finish_reason, streamed.overran = "length", True  # what follows is more of the same
            on_finish()
            break
        if not finished and streamed.finish_reason is not None:
            on_finish()
    if not streamed.done and streamed.finish_reason is None:
        raise StreamCut("the stream ended before the reply was complete")
    return streamed


def take_event(event: Event, streamed: Streamed, on_delta: Callable[[str, str], None]) -> None:
    """Add one event's pieces to `streamed`, passing each on to `on_delta`."""
    try:
        data = json.loads(event.data)
    except (ValueError, RecursionError):
        if event.kind == "error":
            raise StreamError(f"an error in the stream: {event.data[:500]}") from None
        raise StreamError(f"an event in the stream is not JSON: {event.data[:200]}") from None
    if event.kind == "error" or (isinstance(data, dict) and data.get("error")):
        raise StreamError(f"an error in the stream: {describe_error(data)}")
    if not isinstance(data, dict):
        raise StreamError(f"an event in the stream is not a JSON object: {event.data[:200]}")
    if isinstance(data.get("usage"), dict):  # in the last chunk, whose choices are [] (OpenAI), or in every one
        streamed.usage = data["usage"]
    choices = data.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        return  # a usage chunk, or one carrying nothing we read
    choice = choices[0]
    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
    for kind, key in (("reasoning", "reasoning_content"), ("reasoning", "reasoning"), ("text", "content")):
        piece = delta_text(delta.get(key))
        if piece:  # kept as sent (a pair split between two deltas is joined whole), shown repaired
            (streamed.text if kind == "text" else streamed.reasoning).append(piece)
            streamed.n_bytes += len(piece.encode("utf-8", errors="replace"))
            on_delta(kind, repaired(piece))
    for call in native_calls(delta.get("tool_calls")):  # only the name matters: we say we never asked for them
        if name := native_call_name(call):  # in a call's first delta; the later ones carry its arguments
            streamed.native_calls.append(name)
        function = call.get("function") if isinstance(call, dict) else None  # its arguments count to the limit:
        arguments = function.get("arguments") if isinstance(function, dict) else None  # a call can run on too
        streamed.n_bytes += len(arguments.encode("utf-8", errors="replace")) if isinstance(arguments, str) else 0
    if isinstance(choice.get("finish_reason"), str):
        streamed.finish_reason = choice["finish_reason"]


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def delta_text(content) -> str:
    """A delta's text: a string, a list of parts (their text joined), or nothing ("" for null and the rest)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [part.get("text") if isinstance(part, dict) else part for part in content]
    return "".join(text for text in texts if isinstance(text, str))


def describe_error(data) -> str:
    """The server's words from an error event: {"error": {"message": ...}}, {"message": ...}, or the JSON."""
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"][:1000]
    return (error if isinstance(error, str) else json.dumps(error, ensure_ascii=False))[:1000]


class FirstEvent:
    """Watches a stream's bytes for the start of its first event: anything but blank lines and comments
    (`: ping`, which servers send while the model reads a long prompt)."""

    def __init__(self):
        self.begun = False
        self.line = b""  # the last line so far, which may still turn out to be a comment

    def see(self, chunk: bytes) -> None:
        if not self.begun:
            *lines, self.line = (self.line + chunk).split(b"\n")
            self.begun = any(line.strip() and not line.lstrip().startswith(b":") for line in (*lines, self.line))
