"""The words the model reads: the system prompt, rendered from the tool registry, and the wording of
tool results and format errors.

The tool list is derived from the code (each tool's name, signature and docstring), so the prompt cannot
drift from what actually runs. The prompt holds nothing that changes between turns (no dates, no file
listings), so providers' prompt caches keep hitting across a whole session.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence

SYSTEM_PROMPT = """\
You are a coding agent in the user's project (paths are relative to it). To call tools, write lines
like `{example}` and stop: they run in order; the next message holds each result as
`tool_result(NAME) <<END`, the raw output, and the marker after `<<`. A reply without a call is your answer.

# Tools

{tools}
"""

EXAMPLE_CALL = 'tool: read_file({"path": "src/app.py"})'
# How a JSON value's type is named: in a result for the model (a bad argument), in a line for the user (a reply
# in a shape we cannot read).
JSON_TYPES = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number",
              bool: "true or false", type(None): "null"}

INSTRUCTIONS = """
# Instructions from {source}

Standing instructions for this work; follow them unless the user says otherwise.

{text}
"""


def render_system_prompt(tools: dict[str, Callable], instructions: Sequence = ()) -> str:
    """The system prompt, with one entry per tool: its signature, then its docstring; then each set of project
    instructions (instructions.Instructions: `source`, `text`) under a heading naming it, as written."""
    entries = [f"{render_signature(name, tool)}\n{describe_tool(tool)}" for name, tool in tools.items()]
    return flow(SYSTEM_PROMPT).format(example=EXAMPLE_CALL, tools="\n\n".join(entries)) + "".join(
        INSTRUCTIONS.format(source=given.source, text=given.text) for given in instructions)


def render_signature(name: str, tool: Callable) -> str:
    """`search_files(pattern: str, path: str = ".", glob?: str)`: the signature without the workspace argument;
    a parameter that defaults to None, or a flag that defaults to False, is written optional, TypeScript's way,
    which says it in fewer tokens (left out, it is off)."""
    params = list(inspect.signature(tool).parameters.values())[1:]
    rendered = []
    for param in params:
        if param.kind is inspect.Parameter.KEYWORD_ONLY:  # filled in by the toolbox, not by the model
            continue
        hint = param.annotation  # a string under `from __future__ import annotations`, as in tools.py
        hint = hint if isinstance(hint, str) else inspect.formatannotation(hint)
        if param.default is None and hint.endswith(" | None") or param.default is False and hint == "bool":
            rendered.append(f"{param.name}?: {hint.removesuffix(' | None')}")
            continue
        text = f"{param.name}: {hint}"
        if param.default is not inspect.Parameter.empty:
            text += f" = {json.dumps(param.default)}"
        rendered.append(text)
    return f"{name}({', '.join(rendered)})"


def describe_tool(tool: Callable) -> str:
    return flow(inspect.cleandoc(tool.__doc__ or ""))


def flow(text: str) -> str:
    """Each sentence on one line: the source wraps at 120 columns, but every request carries the prompt, and a
    line break costs a token where a space costs none (it goes with the next word). Blank lines, indented lines
    (a docstring's Args entries) and the line after one ending with ":" stay as they are."""
    lines: list[str] = []
    for line in text.split("\n"):
        joins = lines and lines[-1] and line and not (line[0].isspace() or lines[-1][0].isspace())
        if joins and not lines[-1].endswith(":"):
            lines[-1] += " " + line
        else:
            lines.append(line)
    return "\n".join(lines)


# --- results and errors, as the model reads them ---


def render_result(name: str, ok: bool, output: str) -> str:
    """One result as a here-document: a head naming the tool (and a failure), the raw output, an end line.

    >>> render_result("list_files", True, "app.py")
    'tool_result(list_files) <<END\\napp.py\\nEND'

    Raw, because JSON escapes cost tokens and make code harder to copy. The marker is no line of the output
    (END, else END2, END3...), so no file can end its result early and pose as a call, a note or another
    result: its absence makes it safe, not chance (END is one token; a random one was eight, twice a result).
    Success goes unsaid, as in the chat APIs' tool results, where only an error is flagged.
    """
    marker = end_marker(output)
    return f"tool_result({name}{'' if ok else ', error'}) <<{marker}\n{output}\n{marker}"


def end_marker(output: str) -> str:
    """`END`, or the first of END2, END3... that is no line of `output` (spaces around it aside): a try per
    such line at most, so no output can keep it looking."""
    lines = {line.strip() for line in output.splitlines()}
    marker, number = "END", 1
    while marker in lines:
        number += 1
        marker = f"END{number}"
    return marker


def render_results(results: list[str], notes: list[str]) -> str:
    """The user message that answers one reply: its notes first, then one framed result per call, in order."""
    return "\n".join([f"Note: {note}" for note in notes] + results)


def format_error(problem: str) -> str:
    """The result for a call that could not be read: the parser's complaint and the right form."""
    return (f"{problem} Nothing was run. Write each call on its own line as tool: NAME({{JSON arguments}}), "
            f"for example:\n{EXAMPLE_CALL}")


UNKNOWN_TOOL = 'There is no tool "{name}". The tools are: {names}.'
NOT_RUN = "Not run, because an earlier call in the same reply failed; send it again once that is fixed."
CALL_INTERRUPTED = "Not run, or stopped before it finished: the user interrupted the task."
REPEATED = ("You have made this exact call {n} times in a row; its result will not change. Try something different, "
            "or answer with what you know.")
STEP_LIMIT = ("Stopped after {n} model call(s) (--max-steps {n}) without a final answer. "
              "Say how to go on, or raise --max-steps.")
STEP_LIMIT_SET = ("Stopped after {n} model call(s) (PLAINAGENT_MAX_STEPS={n}, in {where}) without a final answer. "
                  "Say how to go on, or raise PLAINAGENT_MAX_STEPS (or give --max-steps).")
SUBAGENT_TASK = """\
You are a sub-agent: another agent handed you the task below and will see only your final answer, not your \
tool calls or what they returned. You can only read. Look as far as the task needs, then answer in one reply \
without calls: specific (paths, line numbers, names, short quotes) and brief, at most about 300 words.

Task: {task}"""
FORMAT_LIMIT = "Stopped: the model wrote {n} replies in a row whose first tool call could not be read."
