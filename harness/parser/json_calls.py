"""Calls written in other agents' formats: a JSON object naming a known tool, recognised so that it is answered
with the `tool:` line to write instead, never taken as the answer.

Helpers of the parser (toolcalls.py). Models trained on function calling write `{"name": "read_file",
"arguments": {...}}` (OpenAI), `{"tool": ..., "tool_input": ...}` or `{"action": ..., "action_input": ...}`
(LangChain), OpenAI's `{"type": "function", "function": {...}}`, or a list of them, often in a ```json fence.
Printed as the final answer, such a reply ends the task with nothing done and exit code 0, and the model is
never told. Only a value that names a known tool and carries its arguments counts: a tool's schema (a name and
a description) or an answer quoting an API's JSON mid-sentence is prose.

And a call written as Python, a line that is nothing but `read_file(path="conf.py")` or `run_command("ls")` for
a known tool (alone in a code fence too): models that call functions in code write that, and it is no answer.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
from collections.abc import Iterable

from harness.parser.arguments import LENIENT_JSON

# The keys that name the tool, and those that hold its arguments, in the formats models were trained on.
NAME_KEYS = ("name", "tool", "tool_name", "function", "action")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "tool_input", "action_input", "params")
# The same formats as tags or inline, which no JSON value at a line's start shows: Qwen's `<function=NAME>`,
# `<tool_call>{"name": ..., "arguments": ...}</tool_call>` on one line.
JSON_STYLE = re.compile(r'^[ \t]*<function=(\w+)>|"name"\s*:\s*"(\w+)"\s*,\s*"(?:arguments|parameters)"', re.MULTILINE)
# A line that is one function call and nothing else, outside a fence or alone in one: (fence or "", name, arguments).
PYTHON_STYLE = re.compile(r"^[ \t]*(```[\w+-]*[ \t]*\n[ \t]*)?(\w+)\((.*)\)[ \t;]*$(?(1)\n[ \t]*```[ \t]*$)",
                          re.MULTILINE)
MAX_VALUES = 20  # JSON values read per reply: a reply of JSON lines costs no more than this
MAX_ITEMS = 10  # items of a list looked into
LONGEST_EXAMPLE = 300  # characters of a corrected call shown back; longer arguments are not copied


def json_call(text: str, starts: Iterable[int], tool_names: list[str]) -> tuple[str, str] | None:
    """(the problem, for the model, and the tool) of the first call written as JSON that starts a line
    (`starts`: where each line's text begins, after any list marker or quote); None if there is none."""
    read_to, n_read = 0, 0
    for start in starts:
        if start < read_to or not text.startswith(("{", "["), start):
            continue  # inside a value already read, or no JSON there
        n_read += 1
        if n_read > MAX_VALUES:
            return None
        try:
            value, read_to = LENIENT_JSON.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if found := call_in_json(value, tool_names):
            name, args = found
            if args is None:
                return (f"That is a call to {name} written as JSON, which this program does not read: a call is a "
                        f"line of its own, like tool: {name}({{...}}).", name)
            return (f"That is a call to {name} written as JSON, which this program does not read; written as a "
                    f"`tool:` line: {corrected(name, args)}", name)
    return None


def call_in_json(value, tool_names: list[str], depth: int = 0) -> tuple[str, dict | None] | None:
    """(the known tool a JSON value calls, its arguments if they can be read), looking a few levels down.

    >>> call_in_json({"type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
    ...              ["read_file"])
    ('read_file', {'path': 'a'})
    """
    if depth > 3:
        return None
    if isinstance(value, list):
        return next(filter(None, (call_in_json(item, tool_names, depth + 1) for item in value[:MAX_ITEMS])), None)
    if not isinstance(value, dict):
        return None
    if len(value) == 1 and (key := next(iter(value))) in tool_names and isinstance(value[key], dict):
        return key, value[key]  # {"read_file": {"path": "a.py"}}
    for key in NAME_KEYS:
        name = value.get(key)
        if not (isinstance(name, str) and name in tool_names):
            continue
        given = next((value[other] for other in ARGUMENT_KEYS if other in value), None)
        if isinstance(given, str):  # OpenAI sends the arguments as a string of JSON
            given = json_object(given, 0)[0] if given.strip() else {}
        if isinstance(given, dict):
            return name, given
        if any(other in value for other in ARGUMENT_KEYS):
            return name, None  # arguments in a shape that cannot be read
        if key != "name":  # {"tool": "read_file", "path": "a.py"}: the arguments beside the name
            return name, {other: item for other, item in value.items() if other not in (key, "type", "id")}
    return next(filter(None, (call_in_json(inner, tool_names, depth + 1) for inner in value.values()
                              if isinstance(inner, (dict, list)))), None)


def json_object(text: str, position: int) -> tuple[dict | None, int]:
    """The JSON object starting at `position` and where it ends, or (None, position)."""
    if not text.startswith("{", position):
        return None, position
    try:
        value, end = LENIENT_JSON.raw_decode(text, position)
    except (ValueError, RecursionError):
        return None, position
    return (value, end) if isinstance(value, dict) else (None, position)


def corrected(name: str, args: dict) -> str:
    """The call as it should have been written, or its shape when the arguments are too long to copy back."""
    call = f"tool: {name}({json.dumps(args, ensure_ascii=False)})"
    return call if len(call) <= LONGEST_EXAMPLE else f"tool: {name}({{...}}), the same JSON object in the parentheses"


def python_call(text: str, tool_names: list[str]) -> tuple[str, str] | None:
    """(the problem, for the model, and the tool) of the first line that calls a known tool as Python does, with
    the `tool:` line to write: converted where its arguments are keywords with plain values."""
    fences = [fence.start() for fence in re.finditer(r"^[ \t]*```", text, re.MULTILINE)]
    for found in PYTHON_STYLE.finditer(text):
        name, inside = found.group(2), found.group(3)
        if name not in tool_names or (not found.group(1) and bisect.bisect(fences, found.start()) % 2):
            continue  # a line of a longer code sample (after an odd number of fence lines) is code, not a call
        try:
            call = ast.parse(f"f({inside})", mode="eval").body
            args = {keyword.arg: ast.literal_eval(keyword.value) for keyword in call.keywords}
            # keywords with plain values only; `**options` has no name (None)
            example = corrected(name, args) if not call.args and None not in args else None
        except (SyntaxError, ValueError, RecursionError):
            example = None
        line = found.group(0).strip().splitlines()[-2 if found.group(1) else 0].strip()
        problem = (f"The line `{line[:100]}` calls {name} as code, so it was not run (text meant as code goes in "
                   "backticks): a call is `tool:`, the tool's name and its arguments as one JSON object in parentheses")
        return (f"{problem}; written as one: {example}" if example else f"{problem}, like tool: {name}({{...}}).", name)
    return None

