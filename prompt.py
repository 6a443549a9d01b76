"""The words the model reads: the system prompt, rendered from the tool registry, and the wording of
tool results and format errors.

The tool list is derived from the code (each tool's name, signature and docstring), so the prompt cannot
drift from what actually runs. The prompt holds nothing that changes between turns (no dates, no file
listings), so providers' prompt caches keep hitting across a whole session.
"""

from __future__ import annotations

import inspect
import json
import secrets
import textwrap
from collections.abc import Callable, Sequence

SYSTEM_PROMPT = """\
You are a coding agent in the user's project directory (the workspace; paths are relative to it). To act,
write a tool call on a line of its own: `tool:`, the tool's name, and its arguments as one JSON object.

{example}

You may write several calls in a reply; they run in order once you stop. The next message holds one
result per call: `tool_result(NAME, ok) <<END_x` (or `error`), the tool's output exactly as produced, then
the line `END_x`; x is new each time, so nothing in the output can end it early. Never write results yourself.
When the task is done, or you need the user, reply without a call: that is your answer.

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
    """The system prompt, with one entry per tool: its signature, then its docstring indented; then each
    set of project instructions (instructions.Instructions: `source`, `text`) under a heading naming it."""
    entries = [f"{render_signature(name, tool)}\n{textwrap.indent(describe(tool), '    ')}"
               for name, tool in tools.items()]
    return SYSTEM_PROMPT.format(example=EXAMPLE_CALL, tools="\n\n".join(entries)) + "".join(
        INSTRUCTIONS.format(source=given.source, text=given.text) for given in instructions)


def render_signature(name: str, tool: Callable) -> str:
    """`edit_file(path: str, old_str: str, new_str: str)` — the signature without the workspace argument."""
    params = list(inspect.signature(tool).parameters.values())[1:]
    rendered = []
    for param in params:
        if param.kind is inspect.Parameter.KEYWORD_ONLY:  # filled in by the toolbox, not by the model
            continue
        text = f"{param.name}: {param.annotation}"  # annotations are strings (from __future__ import annotations)
        if param.default is not inspect.Parameter.empty:
            text += f" = {json.dumps(param.default)}"
        rendered.append(text)
    return f"{name}({', '.join(rendered)})"


def describe(tool: Callable) -> str:
    return inspect.cleandoc(tool.__doc__ or "")


# --- results and errors, as the model reads them ---


def render_result(name: str, ok: bool, output: str) -> str:
    """One result in its frame: a head naming the tool and the outcome, the output as raw text, an end line.

    >>> render_result("list_files", True, "app.py")  # doctest: +SKIP
    'tool_result(list_files, ok) <<END_3f9a1c\\napp.py\\nEND_3f9a1c'

    Raw, because JSON escapes cost tokens and make code harder to copy; framed by a marker drawn at random
    for each result and never found in the output, so no file can end its result early and go on to pose
    as a call, a note or another result.
    """
    marker, n_bytes = new_marker(3), 3
    while marker in output:  # each try is a byte longer, so even an output holding every marker ends the loop
        n_bytes += 1
        marker = new_marker(n_bytes)
    return f"tool_result({name}, {'ok' if ok else 'error'}) <<{marker}\n{output}\n{marker}"


def new_marker(n_bytes: int) -> str:
    """`END_` and n_bytes random bytes in hex: six hex digits cost the model about eight tokens."""
    return f"END_{secrets.token_hex(n_bytes)}"


def render_results(results: list[str], notes: list[str]) -> str:
    """The user message that answers one reply: its notes first, then one framed result per call, in order."""
    return "\n".join([f"Note: {note}" for note in notes] + results)


def format_error(problem: str) -> str:
    """The result for a call that could not be read: the parser's complaint and the right form."""
    return (f"{problem} Nothing was run. Write each call on its own line as tool: NAME({{JSON arguments}}), "
            f"for example:\n{EXAMPLE_CALL}")


UNKNOWN_TOOL = 'There is no tool "{name}". The tools are: {names}.'
NOT_RUN = "Not run, because an earlier call in the same reply failed; send it again once that is fixed."
INTERRUPTED = "Not run, or stopped before it finished: the user interrupted the task."
REPEATED = ("You have made this exact call {n} times in a row; its result will not change. Try something different, "
            "or answer with what you know.")
STEP_LIMIT = ("Stopped after {n} model call(s) (--max-steps {n}) without a final answer. "
              "Say how to go on, or raise --max-steps.")
SUBAGENT_TASK = """\
You are a sub-agent: another agent handed you the task below and will see only your final answer, not your \
tool calls or what they returned. You can only read. Look as far as the task needs, then answer in one reply \
without calls: specific (paths, line numbers, names, short quotes) and brief, at most about 300 words.

Task: {task}"""
FORMAT_LIMIT = "Stopped: the model wrote {n} replies in a row whose tool calls could not be read."
