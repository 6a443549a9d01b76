"""Reading tool calls out of the model's plain-text reply: `tool: NAME({json})` at the start of a line.

Models do not write the format exactly as told: they wrap calls in code fences, bullets or bold, spread
the JSON over lines, use Python dicts or curly quotes, write the result themselves and carry on, or get cut
off. The parser accepts every clear intention, answers every unclear one with a `BadCall` saying what to
fix (never silence), and never produces a call the model did not write. Three rules keep it so:

- A call's arguments are read exactly as written. Nothing is removed or rewritten inside them (not a
  `<think>` tag, not a line ending, not a protocol word), and the history keeps every call as written.
- Reasoning is only ever leading: a `<think>` block at the start, or the text before a `</think>` whose
  opening tag the server stripped, if that comes before the first call. A tag anywhere else is text.
- Only the protocol is taken as protocol: a `tool:` line naming a tool in the call's shape, and a
  `tool_result(` line. An answer that says "User: admin (id 1)" or "Tool: pytest, all green." is an answer.
- What starts like a call to a known tool and is not one is answered with the call to write, never taken as
  the answer: `tool: read_file {"path": "a.py"}` (no parentheses), `tool: read_file a.py`, `read_file({...})`
  (no `tool:`), a call written as JSON (json_calls.py). Printed as an answer, it would end the task with
  nothing done, and the model would never know.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from harness.common.seam_types import BadCall, ToolCall

# Lines end where the files' lines do (CRLF, LF or CR): one line model for the parser, read_file and edit_file.
# The parser only finds line breaks with it, never rewrites them: a CRLF inside an argument stays a CRLF.
from harness.common.text_files import LINE_BREAK
from harness.parser.arguments import Unreadable, matching_paren, read_arguments, skip_space
from harness.parser.json_calls import JSON_STYLE, corrected, json_call, json_object, python_call
from prompt import UNKNOWN_TOOL

MAX_CALLS = 10  # calls run from one reply; more is usually a model that has stopped waiting for results
# What may stand before `tool:` on its line: indentation, list markers, check boxes, quote marks, bold, backticks.
# Possessive (`*+`): "****" can be split into marks in many ways, and trying them all on a line of 40 underscores
# (a common separator) would take hours.
PREFIX = r"[ \t]*+(?:(?:[-*+]|\d+[.)]|\[[ xX]\])[ \t]+|>[ \t]*|[`*_]+[ \t]*)*+"
LINE_PREFIX = re.compile(PREFIX)
EMPHASIS = r"[`*_]*"  # bold, italics or code marks around a word
NAME = r"[A-Za-z_]\w*(?:[.-]\w+)*"  # a tool's name: read_file, mcp.fetch-url
# `tool:` and the name after it: (keyword, name, the '(' opening the arguments if there is one). Markdown may
# wrap the keyword (`**tool:**`, `**tool**:`, `` `tool:` ``) or the name.
HEAD = re.compile(rf"(tool){EMPHASIS}:[`*_ \t]*+({NAME})[`*]*[ \t]*(\()?", re.IGNORECASE)
# Between two calls on one line: `tool: a({...}); tool: b({...})`, `... && ...`, `... and then ...`, backticks.
BETWEEN_CALLS = re.compile(r"(?:[ \t;,&`*_]|\b(?:and|then)\b)*")
# Where a reply stops being the model's own turn: a result line, the protocol's own word. A speaker's name
# ("User:", "Observation:") is not the protocol, and answers hold such lines ("User: admin (id 1)").
RESULT_LINE = re.compile(PREFIX + r"(?:tool_result[ \t]*\(|<tool_result>)", re.IGNORECASE)
INVENTED = ("Your reply went on after your tool calls as if their results had come back; everything from "
            "that point was discarded. Wait for the real results.")
INVENTED_ALONE = ("Your reply wrote a tool result itself, though it called no tool; everything from that point was "
                  "discarded. A result comes only after a call, once your reply has ended.")


@dataclass
class ParsedReply:
    text: str  # the reply as kept in the history: without leading reasoning, cut before an invented turn
    calls: list[ToolCall | BadCall] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # told to the model with the results


def parse_reply(reply: str, tool_names: list[str], finish_reason: str | None = None) -> ParsedReply:
    """Find the tool calls in a reply, in order.

    >>> parse_reply('Let me look.\\ntool: read_file({"path": "a.py"})', ["read_file"]).calls
    [ToolCall(name='read_file', args={'path': 'a.py'}, repair=None)]
    """
    text = drop_reasoning(reply, tool_names)
    parsed = ParsedReply(text)
    mentions = []  # `tool: NAME({...})` in the middle of a prose line: not run, but never in silence
    position = 0
    while position < len(text):
        line_end = end_of_line(text, position)
        line = text[position:line_end]
        if RESULT_LINE.match(line):
            parsed.text = text[:position].rstrip()
            parsed.notes.append(INVENTED if parsed.calls else INVENTED_ALONE)
            break
        if head := call_head(text, LINE_PREFIX.match(text, position).end(), tool_names):
            end = read_calls(text, head, tool_names, finish_reason, parsed.calls)
            line_end = end_of_line(text, end)  # a call's JSON may run over several lines
            mentions += find_mentions(text[end:line_end], tool_names)
        elif near := near_call(text, position, tool_names) or bare_call(text, position, tool_names):
            call, end = near  # a line that starts like a call is answered: never taken as the answer, nor dropped
            parsed.calls.append(call)
            line_end = end_of_line(text, end)
        else:
            mentions += find_mentions(line, tool_names)
        position = next_line(text, line_end)
    if not parsed.calls:
        if unplaced := unplaced_call(parsed.text, mentions, tool_names):
            parsed.calls.append(unplaced)
        elif parsed.notes:  # an invented result and no call: the model believed it had called something
            parsed.calls.append(BadCall("Your reply has no tool call, yet it goes on as if a result had come."))
    else:
        parsed.notes += [f"{mention!r} stands in the middle of a line, so it was not run. If you meant it, "
                         "write it on its own line." for mention in mentions]
    if len(parsed.calls) > MAX_CALLS:
        parsed.notes.append(f"Only the first {MAX_CALLS} calls of a reply are run; "
                            f"{len(parsed.calls) - MAX_CALLS} were dropped. Send them again after these results.")
        del parsed.calls[MAX_CALLS:]
    for call in parsed.calls:
        if isinstance(call, ToolCall) and call.repair:
            parsed.notes.append(f"The arguments of {call.name} were not valid JSON; they were read after "
                                f"{call.repair}. Write plain JSON next time.")
    return parsed


# --- an ordinary call: `tool: NAME({...})` at the start of a line ---


def call_head(text: str, position: int, tool_names: Collection[str] | None) -> re.Match | None:
    """`tool: NAME` at `position`, if it has the shape of a call rather than of a sentence.

    A call opens its arguments with `({` or `()`, or has '(' right after a known name, or after any name
    when `tool:` is written exactly as the protocol spells it, lower case (`tool: bash(ls)`, a tool the
    model imagined). `tool: NAME` alone on its line is a call too, one that lost its arguments. Anything
    else is prose: `Tool: pytest, all green.`, `tool: read_file (3 times)`, `tool: read_file with a path
    argument`. `tool_names` None counts every name as known.
    """
    head = HEAD.match(text, position)
    if not head:
        return None
    keyword, name, paren = head.groups()
    if paren:
        opens = text.startswith(("{", ")"), skip_space(text, head.end()))
        spaced = bool(text[head.end(2):head.start(3)].strip("`*"))  # `read_file (`: words, not a call
        known = tool_names is None or name in tool_names
        return head if opens or (not spaced and (known or keyword == "tool")) else None
    if keyword == "tool" and end_of_line(text, head.end()) == head.end():
        return head
    return None


def read_calls(text: str, head: re.Match, tool_names: list[str], finish_reason: str | None,
               calls: list[ToolCall | BadCall]) -> int:
    """Read the call at `head` and any that directly follow it on its line; returns where the last ended."""
    while True:
        call, end = read_call(text, head, tool_names, finish_reason)
        calls.append(call)
        head = call_head(text, BETWEEN_CALLS.match(text, end).end(), tool_names)
        if head is None:
            return end


def read_call(text: str, head: re.Match, tool_names: list[str],
              finish_reason: str | None) -> tuple[ToolCall | BadCall, int]:
    """Read the call that `head` starts; returns it (or what is wrong) and where it ended."""
    name, end = head.group(2), head.end()
    args, repair, problem = None, None, f"its arguments must follow in parentheses, like tool: {name}({{...}})."
    if head.group(3):
        try:
            args, end, repair = read_arguments(text, head.end())
        except Unreadable as error:
            end, problem = error.end, str(error)
    if name not in tool_names:
        return BadCall(UNKNOWN_TOOL.format(name=name, names=", ".join(tool_names)), name), end
    if args is None:
        if finish_reason == "length":
            problem = ("Your reply was cut off (at its token limit) inside this call, so it was not run. "
                       "Continue with smaller steps: e.g. create a long file in parts.")
        return BadCall(f"The call to {name} could not be read: {problem}", name), end
    return ToolCall(name, args, repair), end


def end_of_line(text: str, position: int) -> int:
    """Index of the line break ending the line that holds `position`, or the end of the text."""
    found = LINE_BREAK.search(text, position)
    return found.start() if found else len(text)


def next_line(text: str, line_end: int) -> int:
    """Where the line after the one ending at `line_end` starts."""
    return line_end + (2 if text.startswith("\r\n", line_end) else 1)


# --- the tolerance: reasoning, calls as they stream in, lines that only look like calls, mentions ---

# The start of a line that the rest of a reply still to come could make a call line: the marks before `tool:`
# (a list marker or check box still without its blank), the head's words so far, and the blanks after its '('.
# A line start that no longer matches has its answer from call_head settled: `opens_call` relies on that.
UNFINISHED_HEAD = re.compile(PREFIX + r"(?:[-*+]|\d+[.)]?|\[(?:[ xX]\]?)?)?"  # a marker without its blank yet
                             rf"(?:t(?:o(?:o(?:l{EMPHASIS}(?::[`*_ \t]*"  # t, to, too, tool, **tool**:
                             rf"(?:{NAME}[.-]?[`*]*[ \t]*(?:\([ \t\r\n]*)?)?"  # the name, '(', the blanks after it
                             r")?)?)?)?)?", re.IGNORECASE)
MENTION = re.compile(r"(?<!\w)" + HEAD.pattern, re.IGNORECASE)
# A known name and its JSON arguments without `tool:`: `read_file({...})`, `read_file {...}`, `read_file: {...}`.
BARE_HEAD = re.compile(PREFIX + r"([A-Za-z_]\w*)[ \t]*(?:(\()[ \t]*|:?[ \t]*)(?=\{)")
# The end of reasoning whose opening tag the server stripped ends its line; `split('</think>')` in an answer does not.
LEADING_BLANK_LINES = re.compile(rf"\A(?:[ \t]*(?:{LINE_BREAK.pattern}))+")
ORPHAN_CLOSE = re.compile(r"</think>[ \t]*(?=\r|\n|\Z)")
# A line that starts like a call and is not one: after the name, blanks and perhaps a colon before what follows.
AFTER_NAME = re.compile(r"[`*]*[ \t]*:?[ \t]*")


def drop_reasoning(reply: str, tool_names: list[str]) -> str:
    """The reply without its leading reasoning; the rest is returned as written, byte for byte.

    >>> drop_reasoning("<think>plan</think>\\nThe answer is 4.", [])
    'The answer is 4.'
    """
    text = reply
    close = ORPHAN_CLOSE.search(text)  # a server that puts `<think>` in the prompt sends only `</think>`
    if close and "<think>" not in text[:close.start()]:
        before_call = close.start() < first_call_line(text, tool_names)
        # After a call, only a `</think>` on a line of its own, outside any call's arguments, ends reasoning:
        # the calls the model planned while reasoning are not calls, and never run.
        alone = not text[text.rfind("\n", 0, close.start()) + 1:close.start()].strip()
        if before_call or (alone and not inside_a_call(text, close.start(), tool_names)):
            text = text[close.end():]
    while text.lstrip().startswith("<think>"):
        close_at = text.find("</think>")
        if close_at == -1:  # cut off while still reasoning: nothing of it is an answer or a call
            return ""
        text = text[close_at + len("</think>"):]
    return drop_blank_lines(text)


def first_call_line(text: str, tool_names: list[str]) -> int:
    """Where the first line holding a call starts, or the end of the text."""
    position = 0
    while position < len(text):
        if call_head(text, LINE_PREFIX.match(text, position).end(), tool_names):
            return position
        position = next_line(text, end_of_line(text, position))
    return len(text)


def inside_a_call(text: str, at: int, tool_names: list[str]) -> bool:
    """True if `at` falls inside the arguments of a call whose line starts before it."""
    position = 0
    while position < at:
        line_end = end_of_line(text, position)
        if head := call_head(text, LINE_PREFIX.match(text, position).end(), tool_names):
            line_end = read_calls(text, head, tool_names, None, [])
            if line_end > at:
                return True
        position = next_line(text, line_end)
    return False


def drop_blank_lines(text: str) -> str:
    """Text without blank lines at the start and white space at the end: no call is changed by it."""
    return LEADING_BLANK_LINES.sub("", text).rstrip()


def opens_call(line: str, tool_names: Collection[str] | None = None, *, complete: bool = False) -> bool | None:
    """Whether `line`, a reply's line as far as it has arrived, opens a call as parse_reply reads it: True or
    False once settled, None while the text to come could still decide (never with `complete`: no more comes).
    `tool_names` None counts any name as a tool's. The display asks this, so it has no grammar of its own.

    >>> opens_call("**tool:** read_"), opens_call('**tool:** read_file({"pa'), opens_call("Tool: pytest, all")
    (None, True, False)
    """
    head = call_head(line, LINE_PREFIX.match(line).end(), tool_names)
    if head is not None and (complete or head.group(3)):  # a call whose '(' has come stays one, whatever follows
        return True
    if complete:  # a line answered as one that starts like a call is held back like a call
        return near_call(line, 0, tool_names) is not None
    if UNFINISHED_HEAD.fullmatch(line):
        return None
    return True if head is not None else near_call_so_far(line, tool_names)


def near_call_so_far(line: str, tool_names: Collection[str] | None) -> bool | None:
    """Whether `line`, whose head has come whole, is answered as a line that starts like a call (near_call):
    None while the text to come could still decide (a `Tool: NAME {...}` line until its end)."""
    head = HEAD.match(line, LINE_PREFIX.match(line).end())
    if head is None or (tool_names is not None and head.group(2) not in tool_names):
        return False
    if head.group(1) == "tool":
        return True  # with the protocol's own keyword, whatever follows the name
    after = AFTER_NAME.match(line, head.end(2)).end()
    if after == len(line) or line[after] != "{":
        return None if after == len(line) else False
    args, end = json_object(line, after)
    line_end = end_of_line(line, end)
    if args is None or line_end == len(line):  # the object, or its line, is still to come
        return None
    return not line[end:line_end].strip(" \t")


def line_starts(text: str) -> Iterator[int]:
    """Where each line of `text` starts."""
    position = 0
    while position < len(text):
        yield position
        position = next_line(text, end_of_line(text, position))


def bare_call(text: str, position: int, tool_names: list[str]) -> BadCall | None:
    """A line like `read_file({...})` or `read_file {...}`: a readable call missing its `tool:` prefix (and its
    parentheses), answered with the call to write; its end is `BadCall.args`'s line. Code calling a function
    of the same name (`read_file(path)`, `print(read_file('a'))`) is not one."""
    head = BARE_HEAD.match(text, position)
    if not head or head.group(1) not in tool_names:
        return None
    name, args, end = head.group(1), *json_object(text, head.end())  # strict JSON only: repairs would scan
    if args is None:  # the rest of the reply for every line of code like this
        return None
    if head.group(2):
        end = skip_space(text, end)
        if not text.startswith(")", end):
            return None
        problem = f"A line starts with {name}( but not with `tool:`, so it was not run as a call"
    elif text[end:end_of_line(text, end)].strip(" \t"):
        return None  # more words after the object: prose about a call
    else:
        problem = (f"The line {quoted_line(text, position)} is not a call: it needs `tool:` before the name and the "
                   "arguments in parentheses")
    # The call to write ends the first line: the user's log line shows it too, and the model reads it whole.
    return BadCall(f"{problem}; written as one: {corrected(name, args)}", name), end + bool(head.group(2))


def near_call(text: str, position: int, tool_names: Collection[str] | None) -> tuple[BadCall, int] | None:
    """A line that starts like a call to a known tool and is not one, answered with what to write; and where
    it ends. That is `tool:` as the protocol spells it and a known name, whatever follows (`tool: read_file
    a.py`), or any `Tool:` with a known name and one JSON object ending the line (`Tool: read_file {"path":
    "a.py"}`). A label stays prose: `Tool: read_file (3 times)`, `Tool: pytest, all green.` `tool_names`
    None counts every name as known."""
    start = LINE_PREFIX.match(text, position).end()
    head = HEAD.match(text, start)
    if head is None or (tool_names is not None and head.group(2) not in tool_names):
        return None
    name, protocol = head.group(2), head.group(1) == "tool"  # the keyword exactly as the protocol spells it
    args, end = json_object(text, AFTER_NAME.match(text, head.end(2)).end())
    if args is not None and text[end:end_of_line(text, end)].strip(" \t"):
        args = None  # more words after the object: a sentence about the call, or a call past repair
    if args is None and not protocol:
        return None
    if args is None:
        return BadCall(f"The line {quoted_line(text, position)} starts like a call to {name} but is not one: a call "
                       f"is the tool's name and its arguments as one JSON object in parentheses, like tool: "
                       f"{name}({{...}}). If the line was meant as text, do not start it with `tool:`.",
                       name), end_of_line(text, start)
    return BadCall(f"The line {quoted_line(text, position)} is not a call: the arguments go in parentheses right "
                   f"after the tool's name; written as one: {corrected(name, args)}", name), end


def quoted_line(text: str, position: int) -> str:
    """The line at `position` as a problem quotes it: in backticks, cut after 100 characters."""
    line = text[position:end_of_line(text, position)].strip()
    return f"`{line}`" if len(line) <= 100 else f"`{line[:100]}…`"


def find_mentions(prose: str, tool_names: list[str]) -> list[str]:
    """Calls written inside a sentence, `tool: NAME({` or `tool: NAME()` with a known name, as written."""
    found = []
    for mention in MENTION.finditer(prose):
        if prose[max(mention.start() - 1, 0):mention.start()] == "`":
            continue  # quoted as code: an answer showing what a call looks like
        if (mention.group(2) in tool_names and mention.group(3)
                and prose.startswith(("{", ")"), skip_space(prose, mention.end()))):
            close = matching_paren(prose, mention.end() - 1)
            found.append(prose[mention.start():mention.start() + 60 if close is None else close + 1][:100])
    return found


def unplaced_call(text: str, mentions: list[str], tool_names: list[str]) -> BadCall | None:
    """For a reply without calls: a call written mid-sentence or in a JSON format is not an answer."""
    if mentions:
        return BadCall(f"A tool call must start its own line; it was found in the middle of a line: {mentions[0]!r}.")
    starts = (LINE_PREFIX.match(text, start).end() for start in line_starts(text))
    if found := json_call(text, starts, tool_names) or python_call(text, tool_names):
        return BadCall(*found)
    if any(name in tool_names for found in JSON_STYLE.finditer(text) for name in found.groups() if name):
        return BadCall("That looks like a JSON or XML function call; this program only reads `tool:` lines.")
    return None
