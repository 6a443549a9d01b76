"""The history seam as a session uses it: the conversation kept inside a token budget, and recorded.

Every request resends the whole history, so without a budget a session soon passes the model's window and
every request after that fails. `SessionHistory` has the bare history's `messages`, `add` and `add_results`
(agent.py `History`), records every message in the transcript as it is added (so --resume can carry on), and:
  - estimates each request's size in tokens before it goes out (`budget.py`: UTF-8 bytes, calibrated with
    the server's `usage.prompt_tokens`, or the prompt size a refusal states), and keeps room for the reply:
    a tenth of the budget, more once longer replies were seen (`Budget.most`);
  - cuts one reply's results to RESULTS_SHARE of what the system prompt leaves, keeping head and tail;
  - once a request would pass COMPACT_AT of the budget (less, when the reply needs more room), compacts,
    stopping as soon as the history fits:
      1. older tool results become one-line stubs (the tool, its arguments, the size, how to get it again);
         the latest results stay whole;
      2. if that is not enough, the older turns become one summary, written by one model call with its own
         short prompt (cut to SUMMARY_SHARE of the budget); the recent turns stay verbatim;
      3. if it is still past COMPACT_AT, the current task's results are cut further, newest first (or
         stubbed with a note to ask for less), as far as they go: what is left past COMPACT_AT is the model's
         own words and the task's, kept whole; a request that leaves the reply no room is not sent;
    a compaction that would not shrink the history is dropped;
    the system prompt and the current task's message are never changed, and the model's own words are kept
    over tool output. Between compactions the history is only appended to, so providers' prompt caches
    keep hitting (the other rewrites: /reset, and /mode, which replaces the system prompt);
  - takes a server's refusal for length (a 400 saying "maximum context length", ...) as news about the
    window: lowers the budget to the limit the message states, cuts the current results to the new share,
    compacts, and sends the same turn again;
  - takes a reply cut off where the window ended (finish_reason "length", the window full) the same way: the
    window or the estimate corrected, more room kept for the reply, compacted, the turn asked again;
  - does not learn from a count that looks cut (a server that cuts prompts silently), and warns about it.
`fit`, `refused` and `cut_off` are called around each request by the model's armour (model/session_model.py).
Nothing here talks to the terminal: lines for the user go to `log`, records to the transcript.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from harness.common.counting import count, size_in_bytes
from harness.common.redaction import Secret
from harness.common.seam_types import ChatError, Reply
from harness.common.text_files import split_lines
from harness.history.budget import Budget, stated_prompt, window_refusal
from harness.history.compaction import (
    COMPACT_TO,
    SUMMARY_PROMPT,
    current_task,
    stub_results,
    stub_text,
    summarize_older,
)
from harness.history.transcript import Transcript
from prompt import render_result, render_results


class Result(Protocol):  # tools.py's CallResult: what the history keeps of each call's outcome
    name: str
    args: dict
    ok: bool
    output: str
    seconds: float

RAN_AWAY_KEPT = 2000  # characters kept of a reply that ran to its limit without a call: the rest is not sent again
RAN_AWAY_NOTE = "\n(... {n:,} more characters of this reply were cut here: it ran to its limit without a call.)"
SUMMARY_WORTH = 0.1  # share of the budget the older turns must hold to be worth a model call to summarize
RESULTS_SHARE = 0.5  # share of the budget one reply's results may take; longer outputs are cut, with a note

SUMMARY_MAX = 3000  # characters of summary kept, should the model not keep it brief...
SUMMARY_SHARE = 0.1  # ...and no more than this share of the budget, or a small budget would lose more than it gains
MIN_CUT = 500  # bytes: a cut output smaller than this is not worth keeping; it becomes a stub
TOO_LONG_NOTE = ("It is too long for the context window: ask for less at a time (read_file with offset and limit, a "
                 "narrower search, a command with less output).")
CUT_NOTE = ("(Cut here to fit the context budget: this result has {lines}, {total:,} bytes; the {size:,} "
            "bytes between here and its last lines are not shown. Ask for less at a time: read_file with offset and "
            "limit, a narrower search, a command with less output.)\n")


# --- the history, kept inside the budget ---


class SessionHistory:
    """The conversation as the model is sent it, with the bookkeeping that keeps it inside the budget.

    `messages` is the list the loop sends (appended to; rewritten in place only by a compaction, /reset and
    /mode); `results` remembers, for each results message, the calls behind it (never sent), so compaction
    can stub them.
    """

    def __init__(self, messages: list[dict], tokens: int, summarize_with: Callable[[list[dict]], Reply] | None = None,
                 transcript: Transcript | None = None, log: Callable[[str], None] = lambda line: None,
                 secret: Secret | str = "", opens_call: Callable[..., bool | None] = lambda line, **_: False):
        self.messages = messages
        self.opens_call = opens_call  # the parser's: whether a line opens a call (agent.py hands it over)
        self.ran_away = False  # the last reply ran to its limit: kept cut, unless it holds calls
        # The session's key (the workspace's Secret; a bare key in tests): blanked from every message added.
        self.secret = secret if isinstance(secret, Secret) else Secret(secret)
        self.results: dict[int, dict] = {}  # index of a results message -> {"calls": [...], "notes": [...]}
        self.outputs: dict[int, tuple[list[Result], list[str]]] = {}  # the current task's results, whole
        self.budget = Budget(tokens)
        self.summarize_with = summarize_with  # the model call that writes a summary (Model.chat_unshown); None: none
        self.transcript = transcript or Transcript()
        self.log = log

    def add(self, role: str, content: str, **record) -> None:
        """Append a message, and record it (with `record`'s extra fields) in the transcript."""
        if role == "user" and "results" not in record:  # a new task: the last one's results will not be cut again
            self.outputs.clear()
        if role == "assistant" and self.ran_away:  # junk the model may repeat: cut, up to its first call, if any
            call = next((line.start() for line in re.finditer(r"^.*$", content, re.MULTILINE)
                         if self.opens_call(line[0], complete=True)), len(content))
            if call > RAN_AWAY_KEPT:
                content = (content[:RAN_AWAY_KEPT] + RAN_AWAY_NOTE.format(n=len(content[:call].rstrip("\n"))
                                                                         - RAN_AWAY_KEPT) + "\n" * (call < len(content))
                           + content[call:])
        self.ran_away = False
        # A pasted task or the model's own words: sent on as a resume reads them back.
        content = self.secret.redact(content)
        self.messages.append({"role": role, "content": content})
        self.transcript.write("message", message=self.messages[-1], **record)

    def add_results(self, results: list[Result], notes: list[str]) -> None:
        """Append one reply's results as one user message, cut to fit the budget if they are very long."""
        for result in results:
            self.transcript.write("tool", name=result.name, ok=result.ok, seconds=round(result.seconds, 3))
        record = {"calls": [{"name": result.name, "args": result.args, "ok": result.ok,
                             "bytes": len(result.output.encode("utf-8", errors="surrogatepass")),
                             "lines": len(split_lines(result.output))} for result in results], "notes": notes}
        self.results[len(self.messages)] = record
        self.outputs[len(self.messages)] = (results, notes)
        self.add("user", render_fitted(results, notes, self.results_room()), results=record)

    def resume_from(self, messages: list[dict], results: dict[int, dict], tokens: int | None) -> bool:
        """Carry on a resumed session (--resume): its messages after the system prompt, the calls behind its
        results, and the budget it learnt from a server's window, if lower than ours. True when it had ended
        abruptly: a request left without a reply, or a reply whose calls never got their results."""
        self.messages[1:], self.results = messages, results
        if tokens:
            self.budget.tokens = min(tokens, self.budget.tokens)
        last = self.messages[-1]
        calls = last["role"] == "assistant" and self.has_calls(last["content"])
        return len(self.messages) > 1 and (last["role"] == "user" or calls)

    def has_calls(self, text: str) -> bool:
        return any(self.opens_call(line, complete=True) for line in split_lines(text))

    def reset(self) -> None:
        """Forget the conversation but the system prompt (/reset). Recorded as a compaction down to the system
        prompt, so --resume carries on from the new conversation."""
        del self.messages[1:]
        self.results, self.outputs = {}, {}
        self.transcript.write("compaction", done=["/reset"], before=0, after=0, messages=self.messages, results={})

    def results_room(self) -> int:
        """Bytes one reply's results may take: RESULTS_SHARE of what the budget leaves beside the system prompt."""
        free = self.budget.tokens - self.budget.estimate(self.messages[:1])
        return max(int(RESULTS_SHARE * free * self.budget.bytes_per_token), 0)

    def fit(self) -> None:
        """Before each request (model.py calls it): compact if the request would pass COMPACT_AT of the
        budget, then cut the current task's results if it still does."""
        self.compact()
        self.fit_request()

    def refused(self, error: ChatError, last: bool = False, asked: int | None = None) -> bool:
        """After a failed request: True if it was a refusal for length, now survived (the budget lowered to
        the window the server states, the history fitted to it), so the same turn can be sent again; False
        for any other failure. `last`: no more tries are left, so the refusal is the task's end, in one line;
        `asked`: the reply's limit the request carried (max_tokens), which the window must hold too."""
        is_refusal, limit = window_refusal(error)
        if not is_refusal:
            return False
        if last:
            self.check_task_fits(self.budget.tokens)
            raise ChatError(f"{error} The history was compacted to about {self.budget.estimate(self.messages):,} "
                            "tokens and still does not fit; start a new session, or give a smaller "
                            "--context-tokens.") from None
        self.lower_budget(error, limit, asked)
        self.fit()
        return True

    def cut_off(self, reply: Reply, last: bool = False) -> bool:
        """After a reply cut off (finish_reason "length"): True if it met the end of the context window, now
        learnt (the window, or how far our estimate fell short, and the room a reply needs) and the history
        fitted to it, so the same turn can be asked again; the reply is marked `window_full` either way. False
        for a reply cut at the server's own output limit, and on the `last` try (the task ends, saying which)."""
        tokens = reply_tokens(reply, self.budget.bytes_per_token)
        if reply.window_full or reply.ran_to_limit() or not self.budget.window_full(self.messages, tokens, reply.usage):
            return False  # its limit (--max-reply-tokens, or the room the budget left), or the server's own
        reply.window_full = True
        if last:
            return False
        self.budget.learn_window(self.messages, tokens, reply.usage)
        self.log(f"The reply was cut off: the context window is full (the request and the reply filled it), so what "
                 f"came of the reply is discarded; the context budget is now {self.budget.tokens:,} tokens, "
                 f"{self.budget.most():,} of them for the request. Compacting and asking again.")
        self.transcript.write("budget", tokens=self.budget.tokens, reason="a reply cut off at the window's end")
        self.fit()
        return True

    def answered(self, reply: Reply, seconds: float) -> None:
        """After a request that was answered: record it, and learn the server's bytes per token from it."""
        self.transcript.write("request", usage=reply.usage, seconds=round(seconds, 3),
                              estimate=self.budget.estimate(self.messages))
        if warning := self.budget.calibrate(self.messages, reply.usage):  # a prompt the server cut: its window
            self.log(f"plainagent: {warning}")
            self.transcript.write("budget", tokens=self.budget.tokens, reason="the server cut the prompt silently")
        if reply.finish_reason != "length":  # a cut reply says nothing of the room it would have taken
            self.budget.answered(reply_tokens(reply, self.budget.bytes_per_token))
        self.ran_away = reply.finish_reason == "length" and reply.ran_to_limit()

    def lower_budget(self, error: ChatError, limit: int | None, asked: int | None = None) -> None:
        self.budget.refused(self.messages, limit, stated_prompt(error), asked)
        window = f" of {limit:,} tokens" if limit else ""
        self.log(f"The server refused the request as too long for the model's context window{window}; "
                 f"the context budget is now {self.budget.tokens:,} tokens. Compacting and sending it again.")
        self.transcript.write("budget", tokens=self.budget.tokens, reason=getattr(error, "detail", "") or str(error))
        self.cut_current_results(lambda index, size: self.results_room())  # they were sized for the old budget

    def fit_request(self) -> None:
        """Never send a request estimated past the compaction share of the budget: after compaction (which leaves
        the current task's latest results whole) cut those results further, newest first; a task too large on its
        own is a failure with its own advice. What is left past that share (the model's own words) may stay, as
        long as the room kept for the reply stays free (`Budget.most`)."""
        def excess() -> float:  # bytes past the compaction share of the budget
            return ((self.budget.estimate(self.messages) - self.budget.compact_share() * self.budget.tokens)
                    * self.budget.bytes_per_token)

        if excess() > 0:
            self.cut_current_results(lambda index, size: int(size - excess()) if excess() > 0 else size)
        if self.budget.estimate(self.messages) > self.budget.most():
            self.check_task_fits(self.budget.most())
            raise ChatError(f"the history is about {self.budget.estimate(self.messages):,} tokens and cannot be "
                            f"compacted below {self.budget.most():,}, the context budget of {self.budget.tokens:,} "
                            "less the room kept for the reply; start a new session, or raise --context-tokens if "
                            "the model's window allows.")

    def check_task_fits(self, window: int) -> None:
        """A ChatError with the right advice when the system prompt and the task alone pass `window` tokens:
        no compaction and no new session helps then. The advice is for the larger of the two: a large
        AGENTS.md with a small budget is not fixed by shortening a five-token task."""
        task = current_task(self.messages, self.results)
        if task is None or self.budget.estimate([self.messages[0], self.messages[task]]) <= window:
            return
        system, asked = (self.budget.estimate([message]) for message in (self.messages[0], self.messages[task]))
        room = f"the context budget of {window:,}" if window >= self.budget.tokens else \
            f"the {window:,} a request may hold (the context budget of {self.budget.tokens:,} less room for the reply)"
        if asked > system:
            also = "" if asked > window else f" and the system prompt about {system:,}"
            raise ChatError(f"the task itself is about {asked:,} tokens{also}, more than {room}: shorten "
                            f"{'it' if asked > window else 'the task'}, or put it in a file and ask to read that file.")
        also = "" if system > window else f" and the task about {asked:,}"
        raise ChatError(f"the system prompt is about {system:,} tokens{also}, more than {room}: the tools' "
                        "descriptions and any AGENTS.md instructions go with every request. "
                        "Shorten AGENTS.md, or give the model a larger window (--context-tokens, and a local "
                        "server's own context size).")

    def cut_current_results(self, room: Callable[[int, int], int]) -> None:
        """Cut the current task's results, newest first, each to `room(index, its size in bytes)`; those too
        small to keep a useful part, or whose outputs are no longer at hand (a resumed session), become stubs
        saying how to read less. The new history is recorded like a compaction."""
        before, done = self.budget.estimate(self.messages), 0
        task = current_task(self.messages, self.results) or 0
        for index in sorted((index for index in self.results if index > task), reverse=True):
            size = len(self.messages[index]["content"].encode("utf-8", errors="surrogatepass"))
            target = room(index, size)
            if target >= size or self.results[index].get("stubbed"):
                continue
            if index in self.outputs and target >= MIN_CUT:
                content = render_fitted(*self.outputs[index], target)
                over = len(content.encode("utf-8", errors="surrogatepass")) - target  # the frames and notes
                content = render_fitted(*self.outputs[index], target - over) if over > 0 else content
            else:
                content = stub_text(self.results[index], TOO_LONG_NOTE)
                self.results[index] = {**self.results[index], "stubbed": True}
            self.messages[index] = {"role": "user", "content": content}
            done += 1
        if done:
            self.record_compaction(["the latest tool results cut to fit the budget"], before)

    def compact(self, force: bool = False) -> str | None:
        """Compact when the next request would pass COMPACT_AT of the budget (or when forced, as far as
        it goes); returns the line saying what was done, which is also logged, or None."""
        before = self.budget.estimate(self.messages)
        if not force and before <= self.budget.compact_share() * self.budget.tokens:
            return None
        goal = 0.0 if force else COMPACT_TO
        messages, results = list(self.messages), {index: dict(record) for index, record in self.results.items()}
        done = []
        if n_stubbed := stub_results(messages, results, lambda: self.budget.fits(messages, goal)):
            done.append("1 older tool result replaced by a stub" if n_stubbed == 1
                        else f"{n_stubbed:,} older tool results replaced by stubs")
        if not self.budget.fits(messages, goal):
            # A summary costs a model call: below the trigger it must at least free SUMMARY_WORTH of the budget.
            share = self.budget.compact_share()
            worth = 0 if force or not self.budget.fits(messages, share) else SUMMARY_WORTH * self.budget.tokens
            summarized = summarize_older(messages, results, self.budget, self.summarize, worth, before_task=force)
            if summarized:
                messages, results, n_replaced = summarized
                done.append(f"{count(n_replaced, 'older message')} replaced by a summary")
        if not done or self.budget.estimate(messages) >= before:  # a summary as long as what it replaced
            return None
        moved = {id(message): index for index, message in enumerate(messages)}  # a summary moves what it keeps
        self.outputs = {moved[id(self.messages[index])]: outputs for index, outputs in self.outputs.items()
                        if id(self.messages[index]) in moved}
        self.messages[:] = messages
        self.results = results
        return self.record_compaction(done, before, show=not force)

    def record_compaction(self, done: list[str], before: int, show: bool = True) -> str:
        """Record the new history in the transcript, and return the line saying what was done (logged unless
        `show` is False: /compact shows it itself)."""
        after = self.budget.estimate(self.messages)
        line = (f"Context compacted: {'; '.join(done)} ({before:,} → {after:,} tokens, "
                f"budget {self.budget.tokens:,}).")
        self.transcript.write("compaction", done=done, before=before, after=after, messages=self.messages,
                              results=self.results)
        if show:
            self.log(line)
        return line

    def summarize(self, text: str) -> str:
        """One model call, with its own prompt, that sums up the turns in `text`; a fallback if it fails."""
        request = [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": text}]
        try:
            if self.summarize_with is None:
                raise ChatError("no model to write it")
            reply = self.summarize_with(request)
        except ChatError as error:
            return f"(No summary could be written: {error}) The replaced turns ended:\n…{text[-1500:]}"
        summary = re.sub(r"(?s)\A\s*<think>.*?</think>", "", reply.text).strip()
        most = min(SUMMARY_MAX, int(SUMMARY_SHARE * self.budget.tokens * self.budget.bytes_per_token))
        if len(summary.encode("utf-8", errors="surrogatepass")) > most:
            summary = (summary.encode("utf-8", errors="surrogatepass")[:most].decode("utf-8", errors="ignore")
                       + " [… the rest of the summary was cut]")
        return summary or f"(The summary came back empty.) The replaced turns ended:\n…{text[-1500:]}"


def reply_tokens(reply: Reply, bytes_per_token: float) -> int:
    """The tokens a reply took: the server's count, or our estimate of its text and reasoning."""
    counted = reply.usage.get("completion_tokens") if isinstance(reply.usage, dict) else None
    if isinstance(counted, int) and counted >= 0:
        return counted
    return round(size_in_bytes([{"content": reply.text + reply.reasoning}]) / bytes_per_token)


def render_fitted(results: list[Result], notes: list[str], room: int) -> str:
    """One reply's results as one message, the outputs cut to share `room` bytes if they are longer."""
    outputs = fit_outputs([result.output for result in results], room)
    return render_results([render_result(result.name, result.ok, output) for result, output in zip(results, outputs)],
                          notes)


def fit_outputs(outputs: list[str], room: int) -> list[str]:
    """Cut outputs whose total passes `room` bytes: the shortest stay whole, the rest share what is left,
    each keeping its head and tail and a note on how to get the rest."""
    sizes = [len(output.encode("utf-8", errors="surrogatepass")) for output in outputs]
    if sum(sizes) <= room:
        return outputs
    share, left = {}, room
    for position in sorted(range(len(outputs)), key=sizes.__getitem__):  # water-filling, smallest first
        share[position] = min(sizes[position], left // (len(outputs) - len(share)))
        left -= share[position]
    return [output if share[position] >= sizes[position] else cut(output, share[position])
            for position, output in enumerate(outputs)]


def cut(output: str, room: int) -> str:
    """The head and the tail of `output` in about `room` bytes, cut at line ends, with a note between them
    on what is missing: a command's summary and errors come at its end, a file's start says what it is."""
    data = output.encode("utf-8", errors="surrogatepass")
    half = max(room - 300, 0) // 2  # the note takes about 300 bytes
    head = data[:half].decode("utf-8", errors="ignore")
    head = head[:head.rindex("\n") + 1] if "\n" in head else head
    tail = data[len(data) - half:].decode("utf-8", errors="ignore") if half else ""
    tail = tail[tail.index("\n") + 1:] if "\n" in tail else tail
    missing = len(data) - sum(len(part.encode("utf-8", errors="surrogatepass")) for part in (head, tail))
    note = CUT_NOTE.format(lines=count(len(split_lines(output)), "line"), total=len(data), size=missing)
    return head + ("" if head.endswith("\n") or not head else "\n") + note + tail
