"""The model seam as a session uses it: `SessionModel.chat(messages) -> Reply`, the client with the armour a person
needs around it.

The client (client.py's `Client`) is a BareModel (bare.py): the bare request, sent with retries, streaming and one
clear line per failure. `SessionModel` has the same `chat(messages) -> Reply`, so the loop cannot tell them apart,
and adds:
  - the reply shown as it streams in, with a spinner until its first byte that says what it waits for, and how
    long it may (cli/display.py `LiveReply`);
  - each call's tokens added to the session's count: the server's `usage`, or our estimate when it reports
    none (llama.cpp's server sends none in a stream), so /tokens never says 0 for a session that cost tokens;
    a request interrupted by Ctrl-C is counted too (its prompt, and the reply as far as it came): the server
    read the one and wrote the other, and the user pays for both;
  - the history fitted to the token budget before each request, and a server's refusal for length survived:
    the history shrinks to the window the refusal states and the same turn is asked again; so too a reply cut
    off where the window ended (finish_reason "length" with the window full): at most MAX_REFUSALS times a
    turn (the work itself is the history's: history/session_history.py `SessionHistory.fit`, `.refused`, `.cut_off`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from harness.common.counting import BYTES_PER_TOKEN, size_in_bytes
from harness.common.hosts import is_local
from harness.common.seam_types import ChatError, Reply
from harness.model.client import Client

if TYPE_CHECKING:  # for the annotations only: the history module does not need to load for this one
    from harness.history.session_history import SessionHistory


class Display(Protocol):  # the user's side shows the reply (cli/display.py's LiveReply): what this seam needs of it
    def start(self) -> None: ...
    def show(self, kind: str, text: str) -> None: ...  # a piece: kind "text", "reasoning", "restart" or "waiting"
    def finish(self) -> None: ...

MIN_REPLY_LIMIT = 256  # tokens a reply is always let hold, however little room the budget leaves
MAX_REFUSALS = 2  # refusals for length (or replies cut at the window) survived per turn, before the turn fails


class SessionModel:
    """The client, shown, counted, and kept inside the window; `chat(messages) -> Reply` like the client's."""

    def __init__(self, client: Client, display: Display | None = None, history: SessionHistory | None = None,
                 tokens: dict | None = None):
        self.client = client
        self.display = display  # shows each turn's reply as it streams in; None shows nothing
        self.history = history  # fitted before each request, and told of each reply; None: neither
        if history is not None and hasattr(client, "endpoint"):  # a server here: a cut is most likely its window's
            history.budget.local = is_local(client.endpoint)
        # The session's count; a sub-agent adds to its parent's, since the user pays for both.
        self.tokens = tokens if tokens is not None else {"prompt_tokens": 0, "completion_tokens": 0}
        self.n_requests = 0  # model calls so far
        self.n_estimated = 0  # model calls whose tokens we estimated: the server reported none

    def chat(self, messages: list[dict]) -> Reply:
        """One turn: `messages` is the history's own list, which fitting it to the budget changes in place."""
        for n_refusals in range(MAX_REFUSALS + 1):
            if self.history is not None:
                self.history.fit()  # compacts first if this request would not fit the budget
            started, received = time.monotonic(), []
            try:
                reply = self.send(messages, received)
            except KeyboardInterrupt:
                self.count(messages, Reply("".join(received)))
                raise
            except ChatError as error:  # a refusal for length shrinks the history, and the turn is asked again
                asked = getattr(self.client, "limit", None)  # the reply's limit: part of what passed the window
                if self.history is None or not self.history.refused(error, n_refusals == MAX_REFUSALS, asked):
                    raise
                continue
            self.count(messages, reply)
            if self.history is not None:
                self.history.answered(reply, time.monotonic() - started)
                # A reply cut off where the window ended: the history is fitted to what that taught, and asked again.
                if reply.finish_reason == "length" and self.history.cut_off(reply, last=n_refusals == MAX_REFUSALS):
                    continue
            return reply
        raise AssertionError("unreachable: the last try returns or raises")

    def chat_unshown(self, messages: list[dict]) -> Reply:
        """A model call that is not a turn (compaction's summary): counted, but neither shown nor fitted."""
        try:
            reply = self.call(messages)
        except KeyboardInterrupt:
            self.count(messages, Reply(""))
            raise
        self.count(messages, reply)
        return reply

    def call(self, messages: list[dict], show: Callable[[str, str], None] | None = None) -> Reply:
        """The client's chat, with the most tokens its reply may hold: the user's limit (--max-reply-tokens), and
        never more than the budget leaves beside the request (a server refuses a request whose limit passes its
        window). A client without a limit of its own (a test's) is asked as the bare model is."""
        most = getattr(self.client, "reply_tokens", None)
        if not most:
            return self.client.chat(messages, show) if show else self.client.chat(messages)
        room = self.history.budget.tokens - self.history.budget.estimate(messages) if self.history else most
        reply = self.client.chat(messages, show, limit=max(MIN_REPLY_LIMIT, min(most, room)))
        if room < most and reply.finish_reason == "length" and reply.ran_to_limit():
            reply.window_full = True  # it ran to the room the budget left beside the request: the window is full
        return reply

    def send(self, messages: list[dict], received: list[str]) -> Reply:
        """The client's reply, shown as it streams in; `received` keeps its pieces, for the count if interrupted."""
        if self.display is None:
            return self.call(messages)

        def show(kind: str, text: str) -> None:
            if kind == "restart":  # the client asks again: what came of the earlier attempt is gone
                received.clear()
            elif kind != "waiting":  # (what the client waits for is the spinner's, not the reply's)
                received.append(text)  # reasoning is written, and billed, like the text
            self.display.show(kind, text)

        self.display.start()
        try:
            reply = self.call(messages, show)
            if not reply.streamed:  # a whole reply (--no-stream): shown at once, as its stream would have been
                for kind, text in (("reasoning", reply.reasoning), ("text", reply.text)):
                    if text:
                        self.display.show(kind, text)
            return reply
        finally:  # also when interrupted: the next line starts on a line of its own
            self.display.finish()

    def count(self, messages: list[dict], reply: Reply) -> None:
        """Add a call's tokens to the count: the server's, or our estimate when it reports none."""
        self.n_requests += 1
        usage = reply.usage if isinstance(reply.usage, dict) else {}
        if not isinstance(usage.get("prompt_tokens"), int):
            self.n_estimated += 1
            per_token = self.history.budget.bytes_per_token if self.history is not None else BYTES_PER_TOKEN
            usage = {"prompt_tokens": round(size_in_bytes(messages) / per_token),
                     "completion_tokens": round(len(reply.text.encode("utf-8", errors="replace")) / per_token)}
        for key in self.tokens:
            value = usage.get(key)
            self.tokens[key] += value if isinstance(value, int) else 0
