"""What the seams hand each other through the loop, so that none of them imports another: the model's Reply, the
parser's ToolCall and BadCall, the one error a tool raises (ToolError, which the toolbox turns into an error
result), and the ending a seam can bring about (ChatError: a model call failed), of the family agent.py catches
(TaskEnded)."""

from __future__ import annotations

from dataclasses import dataclass, field

RAN_TO_LIMIT = 0.8  # a reply cut off with this share of its limit written ran to the limit, not the window's end


class TaskEnded(Exception):
    """A task ended without an answer; str(error) is the one line the user sees (and a sub-agent's parent reads).
    The family: ChatError (a model call failed), and agent.py's TaskStopped (the loop stopped) and AnswerIncomplete
    (the model stopped without an answer); agent.py's `attempt` catches them all, in one place, and exits 1 (a
    sub-agent's: run_subagent, for its delegate call's result)."""


class ChatError(TaskEnded):
    """A model call failed; str(error) is the one line to show the user.

    `status`, `detail` (the server's own words) and `body` (its JSON, if any) are set for an HTTP error
    response, so a caller can tell a refusal it can act on (a prompt too long for the model's window, with
    the window in llama.cpp's `n_ctx`) from one it cannot.
    """

    def __init__(self, message: str, status: int | None = None, detail: str = "", body=None):
        super().__init__(message)
        self.status = status
        self.detail = detail
        self.body = body


@dataclass
class Reply:
    text: str  # the assistant's text ("" when content was null)
    finish_reason: str | None = None  # "stop", "length", ...
    usage: dict[str, int] = field(default_factory=dict)  # prompt_tokens, completion_tokens, ...: the counts reported
    native_calls: list[str] = field(default_factory=list)  # names in message.tool_calls: a format we never ask for
    reasoning: str = ""  # reasoning the server sent apart from the text (reasoning_content): shown, never sent back
    streamed: bool = False  # the text was handed to on_delta piece by piece as it arrived
    window_full: bool = False  # cut off ("length") at the end of the context window, not at an output limit
    limit: int | None = None  # the most tokens the reply was asked to hold (max_tokens), if any
    overran: bool = False  # the client read it no further: it ran far past its limit (a server that ignores it)

    def no_answer(self, text: str) -> str | None:
        """Why this reply, which calls no tool, is no answer (`text` is what it says, reasoning left out); None
        when it is one. A reply cut off, filtered, or holding only reasoning must not be taken as done."""
        if self.finish_reason == "length" and self.window_full:
            return ("The model's answer was cut off: the context window is full (the conversation and the answer "
                    "did not fit in it together), even after compacting. Start a new session (/reset in the REPL), "
                    "ask for a shorter answer, or give the model a larger window (the server's context size, and "
                    "--context-tokens to match).")
        if self.finish_reason == "length" and self.ran_to_limit():
            return (f"The model's reply ran to its limit of {self.limit:,} tokens (--max-reply-tokens) without a tool "
                    "call or an end: it may be repeating itself. Ask again, perhaps for a smaller step; if the answer "
                    "really is that long, raise PLAINAGENT_MAX_REPLY_TOKENS.")
        if self.finish_reason == "length":
            return ("The model's answer was cut off at its output token limit, so it is incomplete. Ask it to go "
                    "on, or to answer more briefly. (If the server's context window is smaller than plainagent's "
                    "budget, set --context-tokens to it: a full window cuts answers too.)")
        if self.finish_reason == "content_filter":
            return "The provider's content filter stopped the answer, so it is incomplete."
        if self.native_calls:  # the model meant to act, in a format we do not read: its text is no answer
            return (f"The model answered with a native function call ({', '.join(self.native_calls)}) instead of "
                    "a `tool:` line, which is all plainagent reads. Try again, or try a model that follows the "
                    "system prompt.")
        if not text.strip():
            what = "only reasoning" if self.text.strip() or self.reasoning.strip() else "empty"
            return f"The model's reply was {what}: there is no answer. Try again, or try another model."
        return None

    def tokens(self) -> int:
        """The reply's tokens: the server's count, or an estimate (3 bytes a token, text and reasoning) where it
        counted none, or too few for what it sent (no token is 8 bytes: a count of a piece, not of the reply)."""
        counted = self.usage.get("completion_tokens") if isinstance(self.usage, dict) else None
        written = len((self.text + self.reasoning).encode("utf-8", errors="replace"))
        plausible = isinstance(counted, int) and counted > 0 and 8 * counted >= written
        return counted if plausible else round(written / 3)

    def ran_to_limit(self) -> bool:
        """Whether a reply cut off ("length") stopped at the limit it was asked for (most of it, at least: the
        estimate may fall short), rather than at the end of the window."""
        return self.overran or (bool(self.limit) and self.tokens() >= RAN_TO_LIMIT * self.limit)


@dataclass
class ToolCall:
    name: str
    args: dict
    repair: str | None = None  # the repair that made the arguments readable, if one was needed


@dataclass
class BadCall:
    problem: str  # what could not be read, in a sentence for the model
    name: str = "?"
    args: dict = field(default_factory=dict)  # none could be read


class ToolError(Exception):
    """A tool could not do what was asked; the message tells the model why and what to do instead. tools.py's
    run_tool turns it into an error result, never a crash."""
