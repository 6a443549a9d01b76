"""Compaction's two ways of shrinking a history: older tool results become stubs, older turns a summary.

Helpers of `SessionHistory.compact` (session_history.py), which decides when to compact and how far; these say
how. Each takes the messages and the calls behind their results and changes copies, so a compaction that would
not shrink the history can be dropped whole. What is never touched: the system prompt, the current task's
message, the latest results of the current task, and an earlier summary (it holds everything before it).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from harness.common.counting import count
from harness.history.budget import Budget
from harness.modes.permissions import READING_TOOLS
from prompt import render_result, render_results

COMPACT_TO = 0.5  # compaction stops once the history is this small, so the next one is many turns away
RECENT_SHARE = 0.25  # share of the budget the recent turns a summary keeps verbatim may take
# Tools whose output can be had again by calling them again: the reading ones, but delegate (a sub-agent's answer
# costs a whole sub-agent run, and may differ).
REREADABLE = set(READING_TOOLS) - {"delegate"}

# The words the model reads about compaction (kept here, next to what they describe).
SUMMARY_PROMPT = """\
You keep the notes of a coding agent whose conversation has grown too long for its context window. The \
oldest turns of that conversation follow; they are about to be removed. Write what the agent must remember \
to carry on without them: the user's requests and how each ended; decisions made and why; facts found \
(file names, functions, line numbers, values, errors, commands that worked); files changed and how; what \
is left to do. Be specific and brief: at most 250 words of plain text. Do not call tools."""
SUMMARY_HEAD = "(The earlier part of this session was replaced by this summary to save context.)\n\n"
SUMMARY_ACK = "(Understood: I will carry on from this summary.)"
SUMMARY_INPUT_MESSAGE = 2000  # characters of each message shown to the summarizer


def stub_results(messages: list[dict], results: dict[int, dict], fits: Callable[[], bool]) -> int:
    """Replace tool results with stubs, oldest first, until `fits()`; the latest results of the current
    task stay whole. Changes `messages` and `results` in place; returns how many were replaced."""
    task, n_stubbed = current_task(messages, results) or 0, 0
    for index in sorted(results):
        if fits() or index == max(results) > task:
            break
        record = results[index]
        if record.get("stubbed"):
            continue
        stub = stub_text(record)
        if len(stub) < len(messages[index]["content"]):
            messages[index] = {"role": "user", "content": stub}
            results[index] = {**record, "stubbed": True}
            n_stubbed += 1
    return n_stubbed


def stub_text(record: dict, note: str = "") -> str:
    """A results message's stub: each call, and what its output was."""
    return render_results([render_result(call["name"], call["ok"], describe_removed(call, note))
                           for call in record["calls"]], record["notes"])


def describe_removed(call: dict, note: str = "") -> str:
    """A stub's text: what the output was, and how to get it again (or `note`, why not whole)."""
    what = f"{count(call.get('lines', 0), 'line')}, {call.get('bytes', 0):,} bytes"
    if note:
        return f"(Output removed to save context: {what}. {note})"
    if call["name"] in REREADABLE:
        return (f"(Output removed to save context: {what}. If you need it again, call "
                f"{call['name']}({json.dumps(call['args'], ensure_ascii=False)}).)")
    return f"(Output removed to save context: {what}, of {describe_call(call['name'], call['args'])}.)"


def describe_call(name: str, args: dict) -> str:
    """name({args}) with long strings shortened: enough to say what the call was."""
    short = {key: value[:60] + "…" if isinstance(value, str) and len(value) > 60 else value
             for key, value in args.items()}
    return f"{name}({json.dumps(short, ensure_ascii=False)})"


def summarize_older(messages: list[dict], results: dict[int, dict], budget: Budget,
                    summarize: Callable[[str], str], worth: float = 0,
                    before_task: bool = False) -> tuple[list[dict], dict[int, dict], int] | None:
    """Replace the older turns with one summary, keeping the system prompt, the current task's message and
    the recent turns (up to RECENT_SHARE of the budget) verbatim: [system, summary, ack, (task), recent...];
    `before_task` (for /compact) summarizes everything before the current task, and no more.
    None when the older turns hold fewer than `worth` tokens, or nothing but an earlier summary."""
    task = current_task(messages, results)
    start = recent_start(messages, budget, task, RECENT_SHARE)
    if before_task and task is not None:
        start = task
    older = [index for index in range(1, start) if index != task]
    older_messages = [messages[index] for index in older]
    if all(map(is_summary, older_messages)) or budget.estimate(older_messages) < worth:
        return None
    kept = ([task] if task is not None and task < start else []) + list(range(start, len(messages)))
    text = render_turns(messages, results, older, budget)
    head = [messages[0], {"role": "user", "content": SUMMARY_HEAD + summarize(text)},
            {"role": "assistant", "content": SUMMARY_ACK}]
    new_messages = head + [messages[index] for index in kept]
    new_results = {len(head) + position: results[index] for position, index in enumerate(kept) if index in results}
    return new_messages, new_results, len(older)


def is_summary(message: dict) -> bool:
    """True for an earlier summary or its acknowledgement: summarizing them again would add nothing."""
    return message["content"].startswith(SUMMARY_HEAD) or message["content"] == SUMMARY_ACK


def current_task(messages: list[dict], results: dict[int, dict]) -> int | None:
    """The index of the last message the user wrote (not results, not a summary), if any."""
    return next((index for index in range(len(messages) - 1, 0, -1)
                 if messages[index]["role"] == "user" and index not in results
                 and not messages[index]["content"].startswith(SUMMARY_HEAD)), None)


def recent_start(messages: list[dict], budget: Budget, task: int | None, keep: float) -> int:
    """Where the recent turns kept verbatim begin: as many as fit `keep` of the budget, at least the last
    message, and starting so that roles alternate after [system, summary (user), ack (assistant)] and the task."""
    start, size = len(messages), 0
    while start > 1:
        size += budget.estimate([messages[start - 1]])
        if size > keep * budget.tokens:
            break
        start -= 1
    start = min(start, len(messages) - 1)
    if task is not None and start > task:  # the task goes first, so the kept turns start with the model's
        if messages[start]["role"] != "assistant":
            start -= 1
    elif messages[start]["role"] != "user":
        start += 1
    return start


def render_turns(messages: list[dict], results: dict[int, dict], indices: list[int], budget: Budget) -> str:
    """The turns to summarize as plain text, each shortened, the oldest dropped first to fit half the budget
    (an earlier summary always stays: it holds everything before it)."""
    parts = []
    for index in indices:
        message = messages[index]
        who = "Tool results" if index in results else message["role"].capitalize()
        content = message["content"]
        if len(content) > SUMMARY_INPUT_MESSAGE:
            more = len(content) - SUMMARY_INPUT_MESSAGE
            content = content[:SUMMARY_INPUT_MESSAGE] + f"\n[… {more:,} more characters]"
        parts.append((message["content"].startswith(SUMMARY_HEAD), f"{who}:\n{content}"))
    room = COMPACT_TO * budget.tokens * budget.bytes_per_token - len(SUMMARY_PROMPT)
    while len(parts) > 1 and sum(len(text.encode()) for _, text in parts) > room:
        oldest = next((position for position, (is_summary, _) in enumerate(parts) if not is_summary), None)
        if oldest is None:
            break
        del parts[oldest]
    return "\n\n".join(text for _, text in parts)
