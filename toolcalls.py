"""Reading tool calls out of the model's plain-text reply: `tool: NAME({json})` at the start of a line.

Models do not write the format exactly as told: they wrap calls in code fences, bullets or bold, spread
the JSON over lines, use Python dicts or curly quotes, write the result themselves and carry on, or get cut
off. The parser accepts every clear intention, answers every unclear one with a `BadCall` saying what to
fix (never silence), and never produces a call the model did not write.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field

MAX_CALLS = 10  # calls run from one reply; more is usually a model that has stopped waiting for results

# What may stand before `tool:` on its line: indentation, list markers, quote marks, bold and backticks.
PREFIX = r"^[ \t]*(?:(?:[-*+]|\d+[.)])[ \t]+|>[ \t]*|[`*_]+[ \t]*)*"
CALL_LINE = re.compile(PREFIX + r"tool:", re.IGNORECASE)
# MULTILINE, because it is matched at a line start inside the reply (`^` would otherwise mean position 0).
CALL_HEAD = re.compile(PREFIX + r"tool:[ \t]*([A-Za-z_][\w.-]*)[ \t]*\(", re.IGNORECASE | re.MULTILINE)
# Where a reply stops being the model's own turn: it has started writing the results, or the user's part.
INVENTED_TURN = re.compile(PREFIX + r"(?:tool_result\s*\(|<tool_result>|User:|Human:|Observation:)", re.IGNORECASE)
MENTION = re.compile(r"tool:[ \t]*([A-Za-z_]\w*)[ \t]*\(", re.IGNORECASE)
JSON_STYLE = re.compile(r'<tool_call>|<function_call|"name"\s*:\s*"(\w+)"\s*,\s*"(?:arguments|parameters)"')
THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
UNCLOSED_THINK = re.compile(r"\A\s*<think>.*", re.DOTALL)  # a reply cut off while still reasoning
CURLY_DOUBLE = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"'})
LONE_BACKSLASH = re.compile(r'\\(?![\\"/bfnrt]|u[0-9a-fA-F]{4})')


@dataclass
class ToolCall:
    name: str
    args: dict
    repair: str | None = None  # the repair that made the arguments readable, if one was needed


@dataclass
class BadCall:
    problem: str  # what could not be read, in a sentence for the model
    name: str = "?"


@dataclass
class ParsedReply:
    text: str  # the reply as kept in the history: without <think> blocks, cut before an invented result
    calls: list[ToolCall | BadCall] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # told to the model with the results


class Unreadable(Exception):
    """The arguments of a call could not be read; the message says why."""


def parse_reply(reply: str, tool_names: list[str], finish_reason: str | None = None) -> ParsedReply:
    """Find the tool calls in a reply, in order.

    >>> parse_reply('Let me look.\\ntool: read_file({"path": "a.py"})', ["read_file"]).calls
    [ToolCall(name='read_file', args={'path': 'a.py'}, repair=None)]
    """
    text = reply.replace("\r\n", "\n").replace("\r", "\n")
    text = UNCLOSED_THINK.sub("", THINK_BLOCK.sub("", text))
    if "</think>" in text:  # a reasoning block whose opening tag the server stripped
        text = text.split("</think>", 1)[1]
    text = text.strip("\n")
    parsed = ParsedReply(text)
    position = 0
    while position < len(text):
        line_end = end_of_line(text, position)
        line = text[position:line_end]
        if INVENTED_TURN.match(line):
            parsed.text = text[:position].rstrip()
            parsed.notes.append("Your reply went on after your tool calls as if their results had come back; "
                                "everything from that point was discarded. Wait for the real results.")
            break
        if CALL_LINE.match(line):
            call, end = read_call(text, position, tool_names, finish_reason)
            parsed.calls.append(call)
            line_end = max(line_end, end_of_line(text, end))  # a call's JSON may run over several lines
        elif bare := bare_call(line, tool_names):
            parsed.calls.append(BadCall(f"A line starts with {bare}( but not with `tool:`, so it was not run "
                                        f"as a call. Write it as tool: {bare}({{...}}).", bare))
        position = line_end + 1
    if not parsed.calls:
        if problem := unplaced_call(parsed.text, tool_names):
            parsed.calls.append(BadCall(problem))
        elif parsed.notes:  # an invented result and no call: the model believed it had called something
            parsed.calls.append(BadCall("Your reply has no tool call, yet it goes on as if a result had come."))
    if len(parsed.calls) > MAX_CALLS:
        parsed.notes.append(f"Only the first {MAX_CALLS} calls of a reply are run; "
                            f"{len(parsed.calls) - MAX_CALLS} were dropped. Send them again after these results.")
        del parsed.calls[MAX_CALLS:]
    for call in parsed.calls:
        if isinstance(call, ToolCall) and call.repair:
            parsed.notes.append(f"The arguments of {call.name} were not valid JSON; they were read after "
                                f"{call.repair}. Write plain JSON next time.")
    return parsed


def read_call(text: str, start: int, tool_names: list[str],
              finish_reason: str | None) -> tuple[ToolCall | BadCall, int]:
    """Read the call whose line starts at `start`; returns it (or what is wrong) and where it ended."""
    head = CALL_HEAD.match(text, start)
    if not head:
        line = text[start:].split("\n", 1)[0].strip()
        return BadCall(f"The line {line[:80]!r} starts with tool: but not with a tool name and '('."), start
    name = head.group(1)
    if name not in tool_names:
        return BadCall(f'There is no tool "{name}". The tools are: {", ".join(tool_names)}.', name), head.end()
    try:
        args, end, repair = read_arguments(text, head.end())
    except Unreadable as error:
        problem = str(error)
        if finish_reason == "length":
            problem = ("Your reply was cut off at the output token limit inside this call, so it was not run. "
                       "Continue with smaller steps: e.g. create a long file in parts.")
        close = matching_paren(text, head.end() - 1)  # skip the broken call's lines, whatever they hold
        return BadCall(f"The call to {name} could not be read: {problem}", name), close or head.end()
    return ToolCall(name, args, repair), end


def read_arguments(text: str, start: int) -> tuple[dict, int, str | None]:
    """Arguments from just after '(' to the closing ')': strict JSON first, then the few safe repairs."""
    position = skip_space(text, start)
    if text.startswith(")", position):
        return {}, position + 1, None
    try:
        value, end = json.JSONDecoder(strict=False).raw_decode(text, position)
        if isinstance(value, str):  # a JSON string holding the object: decode it once more
            value = json.loads(value, strict=False)
        if not isinstance(value, dict):
            raise Unreadable("the arguments must be one JSON object, like {\"path\": \"a.py\"}.")
        end = skip_space(text, end)
        if not text.startswith(")", end):
            raise Unreadable("expected ')' right after the JSON object.")
        return value, end + 1, None
    except json.JSONDecodeError as error:
        complaint = f"the arguments are not valid JSON ({error.msg}, at character {error.pos - position + 1})."
    close = matching_paren(text, start - 1)
    if close is None:
        raise Unreadable(complaint + " No closing ')' was found either.")
    inner = text[position:close]
    for repair, candidate in candidate_repairs(inner):
        if isinstance(candidate, dict) and all(isinstance(key, str) for key in candidate):
            return candidate, close + 1, repair
    raise Unreadable(complaint)


def candidate_repairs(inner: str):
    """(repair, value) for each repair in order; only these, since guessing further changes the code sent."""
    curly = inner.translate(CURLY_DOUBLE)
    attempts = [("straightening curly quotes", curly),
                ("doubling backslashes that start no JSON escape", LONE_BACKSLASH.sub(r"\\\\", inner)),
                ("straightening quotes and doubling backslashes", LONE_BACKSLASH.sub(r"\\\\", curly))]
    for repair, candidate in attempts:
        if candidate != inner:
            try:
                yield repair, json.loads(candidate, strict=False)
            except json.JSONDecodeError:
                pass
    for source in dict.fromkeys([inner, curly]):
        try:
            yield "reading it as a Python dict", ast.literal_eval(source.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass


def matching_paren(text: str, open_at: int) -> int | None:
    """Index of the ')' closing the '(' at open_at, skipping brackets and parentheses inside strings."""
    depth, quote, position = 0, None, open_at
    closing_quote = {'"': '"', "'": "'", "\u201c": "\u201d"}
    while position < len(text):
        char = text[position]
        if quote:
            if char == "\\":
                position += 1
            elif char == closing_quote[quote]:
                quote = None
        elif char in closing_quote:
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return position if char == ")" else None
        position += 1
    return None


def end_of_line(text: str, position: int) -> int:
    """Index of the newline ending the line that holds `position`, or the end of the text."""
    end = text.find("\n", position)
    return len(text) if end == -1 else end


def skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\n":
        position += 1
    return position


def bare_call(line: str, tool_names: list[str]) -> str | None:
    """The tool name of a line like `read_file({...})`: a call missing its `tool:` prefix."""
    match = re.match(PREFIX + r"([A-Za-z_]\w*)[ \t]*\([ \t]*\{", line)
    return match.group(1) if match and match.group(1) in tool_names else None


def unplaced_call(text: str, tool_names: list[str]) -> str | None:
    """For a reply without calls: a call written mid-sentence or in a JSON format is not an answer."""
    mention = next((m for m in MENTION.finditer(text) if m.group(1) in tool_names), None)
    if mention:
        return ("A tool call must start its own line; it was found in the middle of a line: "
                f"{text[mention.start():mention.start() + 60]!r}.")
    style = JSON_STYLE.search(text)
    if style and (style.group(1) is None or style.group(1) in tool_names):
        return "That looks like a JSON or XML function call; this program only reads `tool:` lines."
    return None
