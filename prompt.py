"""The words the model reads: the system prompt, rendered from the tool registry, and the wording of
tool results and format errors.

The tool list is derived from the code (each tool's name, signature and docstring), so the prompt cannot
drift from what actually runs. The prompt holds nothing that changes between turns (no dates, no file
listings), so providers' prompt caches keep hitting across a whole session.
"""

from __future__ import annotations

import inspect
import json
import textwrap
from collections.abc import Callable

SYSTEM_PROMPT = """\
You are a coding agent working in the user's project directory (the workspace). You can read, search and
edit files and run commands there by calling tools. You never touch the machine yourself: you write tool
calls, the program runs them, and it sends you their results in the next message.

# How to call a tool

Write the call on its own line, starting with `tool:`, then the tool name and its arguments as one JSON
object in parentheses:

tool: read_file({{"path": "src/app.py"}})

- Arguments are JSON: double-quoted strings, newlines inside strings written as \\n.
- You may write several calls in one reply; they run in order. Then stop and wait: the results come back
  as `tool_result({{...}})` lines in the next message. Never write tool_result yourself.
- When the task is done, or you need the user, reply with plain text and no tool call: that is your answer.
- Read a file before you edit it. read_file shows line numbers; they are not part of the file.
- Paths are relative to the workspace root.

# Tools

{tools}
"""

EXAMPLE_CALL = 'tool: read_file({"path": "src/app.py"})'


def render_system_prompt(tools: dict[str, Callable]) -> str:
    """The system prompt, with one entry per tool: its signature, then its docstring indented."""
    entries = [f"{render_signature(name, tool)}\n{textwrap.indent(describe(tool), '    ')}"
               for name, tool in tools.items()]
    return SYSTEM_PROMPT.format(tools="\n\n".join(entries))


def render_signature(name: str, tool: Callable) -> str:
    """`edit_file(path: str, old_str: str, new_str: str)` — the signature without the workspace argument."""
    params = list(inspect.signature(tool).parameters.values())[1:]
    rendered = []
    for param in params:
        text = f"{param.name}: {param.annotation}"  # annotations are strings (from __future__ import annotations)
        if param.default is not inspect.Parameter.empty:
            text += f" = {json.dumps(param.default)}"
        rendered.append(text)
    return f"{name}({', '.join(rendered)})"


def describe(tool: Callable) -> str:
    return inspect.cleandoc(tool.__doc__ or "")


# --- results and errors, as the model reads them ---


def render_result(name: str, ok: bool, output: str) -> str:
    """One `tool_result({...})` line. JSON, so no file content can end the result early or fake a call."""
    return "tool_result(" + json.dumps({"tool": name, "ok": ok, "output": output}, ensure_ascii=False) + ")"


def render_results(results: list[str], notes: list[str]) -> str:
    """The user message that answers one reply: its notes first, then one tool_result per call, in order."""
    return "\n".join([f"Note: {note}" for note in notes] + results)


def format_error(problem: str) -> str:
    """The result for a call that could not be read: the parser's complaint and the right form."""
    return (f"{problem} Nothing was run. Write each call on its own line as tool: NAME({{JSON arguments}}), "
            f"for example:\n{EXAMPLE_CALL}")


NOT_RUN = "Not run, because an earlier call in the same reply failed; send it again once that is fixed."
STEP_LIMIT = ("Stopped after {n} model calls (--max-steps {n}) without a final answer. "
              "Say how to go on, or raise --max-steps.")
FORMAT_LIMIT = "Stopped: the model wrote {n} replies in a row whose tool calls could not be read."
