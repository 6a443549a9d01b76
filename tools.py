"""The tools the model may call, and the toolbox that runs them: the loop's tools seam.

A tool is one function: its name is the tool's name, its signature (after the `ws` workspace argument) is the
schema, and its docstring is the description the model reads (prompt.py renders them). Tools return text; a
tool that cannot do what was asked raises `ToolError` with a sentence the model can act on, and `run_tool`
turns every exception into such a result, so a tool failure never ends the session. A keyword-only
parameter (after `*`) is not the model's to fill: the toolbox passes it in (delegate's `subagent`).

`Toolbox.run(call) -> CallResult` is what the loop calls: it checks the call, runs it, and tells the user's side.
What keeps the tools trustworthy lives in harness/ (files/, commands/, web/, modes/) and is called from here: every
path goes through `ws.resolve` or `ws.walk` (workspace.py: the workspace's walls, .git/; secret_files.py: what may
hold secrets), every write, command and fetch through `ws.approve` (permissions.py: the mode, and the question to
the user) and every write through `ws.write` (kept for /undo); commands meet the deny rules first (guard.py),
fetches the address check (fetch.py); every result has the API key redacted (redaction.py). Edits keep the file's
bytes: line endings, BOM, final newline, permissions (text_files.py, edits.py).
"""

from __future__ import annotations

import inspect
import re
import time
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from harness.commands.guard import denied_by, denied_message
from harness.commands.shell import run_shell
from harness.common.counting import count
from harness.common.seam_types import BadCall, ToolCall, ToolError
from harness.common.text_files import EditRefused, is_text
from harness.files.edits import numbered
from harness.files.read_and_edit import change_file, cut_lines, read_text
from harness.files.search import (
    TimeLimitHit,
    capped,
    files_to_search,
    matching_lines,
    nothing_shown,
    overview,
    searchable_lines,
    shortened,
    suggest_paths,
    time_limit,
)
from harness.files.workspace import Workspace
from harness.modes.permissions import Permissions
from prompt import JSON_TYPES, UNKNOWN_TOOL, format_error

# --- limits (each is a trade between what the model sees per call and what it costs in tokens) ---

# Lines per read_file call. 250 lines of typical code are ~3.5-4k tokens: a page still fits an 8k-token local
# window beside the prompt and the task (400 did not), and each page stays in the history for later requests.
# Codex CLI's prompt asks for the same 250-line chunks.
READ_MAX_LINES = 250
READ_MAX_BYTES = 25_000  # bytes per read_file call, for files with very long lines (~6k tokens at most)
LINE_MAX_CHARS = 2000  # a longer line (minified code) is cut when shown
SEARCH_LINE_MAX_CHARS = 200  # a matching line is shown cut to this: a search shows many lines, each one short
SEARCH_MAX_MATCHES = 100  # matching lines per search_files call
SEARCH_MAX_SECONDS = 10  # a whole search_files call, walk included; in -p mode nobody is there to press Ctrl-C
COMMAND_MAX_TIMEOUT = 600  # seconds; a longer command belongs in the user's own terminal
COMMAND_MIN_TIMEOUT = 1  # seconds; a timeout of 0 or less from the model means "as short as may be", not "never"
FETCH_MAX_CHARS = 20_000  # characters of a page's text per web_fetch call (~5k tokens), as for read_file
SUBAGENT_ANSWER_MAX = 4000  # characters of a sub-agent's answer the model receives: the one thing delegating costs


# --- the tools (docstrings are what the model reads: keep them exact and short) ---


def read_file(ws: Workspace, path: str, offset: int | None = None, limit: int | None = None) -> str:
    """Read the text file at path; with offset (first line, from 1) or limit, lines start with their number and
    a tab (not in the file)."""
    lines, notes = read_text(ws, ws.resolve(path), path)
    if not lines:
        return f"({path} is empty)"
    first = 1 if offset is None else offset
    if first < 1 or first > len(lines):
        raise ToolError(f"offset {first} is outside {path}, which has {len(lines)} lines; "
                        f"use an offset from 1 to {len(lines)}.")
    # Numbers only where the model asked for a range: there it wants positions; a whole file is read to be
    # understood and copied from, and a number on each line would cost as much as a third of its text.
    if limit is not None and limit < 1:
        raise ToolError(f"limit {limit} would show no line; give a limit of 1 or more, or leave it out to read on "
                        "to the end.")
    numbers = offset is not None or limit is not None
    wanted = len(lines) - first + 1 if limit is None else limit
    shown, size = [], 0
    for number in range(first, first + min(wanted, READ_MAX_LINES, len(lines) - first + 1)):
        line = shortened(lines[number - 1], LINE_MAX_CHARS)
        size += len(line) + (8 if numbers else 1)
        if shown and size > READ_MAX_BYTES:
            break
        shown.append(numbered(number, line) if numbers else line)
    last = first + len(shown) - 1
    # A footer only when the page limits stopped the read short of what was asked: then the model needs the
    # next offset. A range shown whole, or a whole file, needs none.
    footer = [f"(lines {first}-{last} of {len(lines)}; read on with offset={last + 1})"] if last < min(
        first + wanted - 1, len(lines)) else []
    notes += cut_lines(path, lines[first - 1:last], first, LINE_MAX_CHARS)
    return "\n".join(shown + footer + [f"(note: {note})" for note in notes])


def list_files(ws: Workspace, path: str = ".") -> str:
    """List files under path, recursively, without dependencies, caches and what git ignores."""
    full = ws.resolve(path)
    if not full.exists():
        raise ToolError(f"{path} does not exist. {suggest_paths(ws, path)}")
    if not full.is_dir():
        raise ToolError(f"{path} is a file, not a directory; use read_file to read it.")
    shown, cut = overview(ws, full)
    if not shown:
        return nothing_shown(ws, full, path)
    lines = [ws.relative(entry.path) + ("/" if entry.is_dir else "") + (f"  ({entry.note})" if entry.note else "")
             for entry in sorted(shown, key=lambda entry: entry.path.parts)]  # each directory, then what is in it
    return "\n".join(lines + ([cut] if cut else []))


def edit_file(ws: Workspace, path: str, old_str: str, new_str: str, replace_all: bool = False) -> str:
    """In the file at path, replace old_str with new_str; old_str must match one place exactly (no line
    numbers), or every place with replace_all; an empty old_str creates a new file."""
    try:
        return change_file(ws, path, old_str, new_str, replace_all)
    except (ToolError, EditRefused) as error:  # every edit that fails says the file is as it was
        raise ToolError(f"{error} No changes were made.") from None


def search_files(ws: Workspace, pattern: str, path: str = ".", glob: str | None = None) -> str:
    """Search text files under path for pattern, a Python regex; glob (e.g. "*.py") narrows them."""
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise ToolError(f"invalid regular expression {pattern!r}: {error}. Escape special characters such "
                        "as ( [ . * with a backslash to match them literally.") from None
    full = ws.resolve(path)
    if not full.exists():
        raise ToolError(f"{path} does not exist. {suggest_paths(ws, path)}")
    matches: list[str] = []
    skipped: list[str] = []  # "name (why)" for each file not searched that the model may have wanted
    n_files, name, notes = 0, "", []
    try:
        with time_limit(SEARCH_MAX_SECONDS):
            for name, file in files_to_search(ws, full, path, glob, skipped):
                lines = searchable_lines(ws, file, full, path)
                if lines is None:
                    continue
                matches += matching_lines(name, lines, regex, SEARCH_LINE_MAX_CHARS)
                n_files += 1
    except TimeLimitHit:
        where = f"in {name}" if name else "while finding the files"
        notes.append(f"(search stopped at its {SEARCH_MAX_SECONDS} s limit {where}, {count(n_files, 'file')} searched "
                     "before it: a pattern with nested repeats such as (a+)+ can run for ever on a long line, and "
                     "a big tree takes long; simplify the pattern, or narrow path or glob)")
    if skipped:
        notes.append("(not searched: " + "; ".join(skipped[:10])
                     + (f"; and {len(skipped) - 10} more" if len(skipped) > 10 else "") + ")")
    if not matches:
        return "\n".join([f"No matches for {pattern!r} in {path} ({count(n_files, 'file')} searched)."] + notes)
    return "\n".join([capped(matches, SEARCH_MAX_MATCHES, "matches (narrow the pattern, path or glob)")] + notes)


def run_command(ws: Workspace, command: str, timeout: int = 60) -> str:
    """Run a shell command in the workspace root, without stdin; timeout in seconds."""
    if not command.strip():
        raise ToolError("command is empty; give a shell command line, e.g. \"ls -la\".")
    if rule := denied_by(command, ws.deny_rules, str(ws.root)):  # before the question: refused in every mode, --yes too
        raise ToolError(denied_message(rule))
    ws.approve("command", "run this command", f"$ {command}")
    # The deny rules are a list, and a shell has more shapes than any list: what the command can touch is the
    # kernel's to decide, inside the session's boundary where the system has one (landlock.py).
    return run_shell(ws, command, max(COMMAND_MIN_TIMEOUT, min(timeout, COMMAND_MAX_TIMEOUT)), ws.boundary)


def web_fetch(ws: Workspace, url: str, offset: int = 0) -> str:
    """Fetch the web page at url as text, from character offset."""
    # Nothing goes out before the user agreed (as the mode asks; PLAINAGENT_FETCH_ALLOW only makes a private host
    # reachable: fetch.py); "always" for a fetch means that host (terminal.py), as the title names it.
    from harness.web.fetch import fetch, render_page  # loaded at the first fetch: most sessions make none

    page = fetch(url, ws.fetch_allow, lambda host, shown: ws.approve("fetch", f"fetch from {host}", shown))
    return render_page(page, ws.redact(page.text), offset, FETCH_MAX_CHARS)  # redacted before it is cut


def delegate(ws: Workspace, task: str, *, subagent: Callable[[str], str] | None = None) -> str:
    """A read-only sub-agent with a fresh context answers task; only its answer comes back. For broad searches."""
    if subagent is None:  # the toolbox passes it in (agent.run_subagent); a sub-agent's toolbox has none
        raise ToolError("A sub-agent cannot start sub-agents; read the files yourself.")
    if not task.strip():
        raise ToolError("task is empty: say what the sub-agent should find out, e.g. \"Where is the config read?\"")
    answer = subagent(task)
    if len(answer) > SUBAGENT_ANSWER_MAX:
        answer = answer[:SUBAGENT_ANSWER_MAX] + f"\n[answer cut: {len(answer) - SUBAGENT_ANSWER_MAX:,} more characters]"
    return answer

# name -> function; the order here is the order the prompt lists them in
TOOLS = {tool.__name__: tool for tool in [read_file, list_files, edit_file, search_files, run_command, web_fetch,
                                          delegate]}


# --- the toolbox: one call in, one result out ---


@dataclass
class CallResult:
    """One call's outcome, as the toolbox reports it; prompt.render_result frames it for the model."""

    name: str
    args: dict
    ok: bool
    output: str
    seconds: float = 0.0


@dataclass
class Toolbox:
    """The loop's tools seam: `run(call) -> CallResult`. Every failure is a result, never a crash.

    Bare, `Toolbox(Workspace(root))` offers every tool and asks nothing (delegate answers that it has no
    sub-agent). The session's has the mode (which
    tools are offered: permissions.py), a workspace that asks before writes and commands, the sub-agent for
    delegate, and the activity log."""

    workspace: Workspace
    permissions: Permissions = field(default_factory=Permissions)  # the mode: which tools are offered
    subagent: Callable[[str], str] | None = None  # runs a delegate call's task in a fresh loop; None: no delegate
    activity: Activity | None = None  # the user's side, shown each call and how it ended; None: nobody

    @property
    def names(self) -> list[str]:
        """Every tool's name, for the parser: a call to one the mode does not offer is still a call, refused
        with the reason, not an unknown tool."""
        return list(TOOLS)

    def offered(self) -> dict[str, Callable]:
        """The tools the mode offers, for the system prompt (the others are refused with the reason when called)."""
        return self.permissions.offered(TOOLS)

    def run(self, call: ToolCall | BadCall, refusal: str | None = None) -> CallResult:
        """Check a call and run it; `refusal` is a reason the loop has not to run it (the same call again)."""
        started = time.monotonic()
        if isinstance(call, BadCall):
            refusal = format_error(call.problem)
        refusal = refusal or check_args(call.name, call.args) or self.permissions.refusal(call.name)
        if refusal is not None:  # it may quote the model's line, and that may hold the key: blanked like any result
            result = CallResult(call.name, call.args, False, self.workspace.redact(refusal))
        else:
            if self.activity:
                self.activity.started(call)
            result = run_tool(self.workspace, call.name, call.args, subagent=self.subagent)
        if self.activity:
            self.activity.ended(result, ran=refusal is None)
        result.seconds = time.monotonic() - started
        return result


class Activity(Protocol):  # what the toolbox tells the user's side: cli/display.py's ActivityLog
    def started(self, call: ToolCall) -> None: ...
    def ended(self, result: CallResult, ran: bool) -> None: ...  # ran: False for a call refused before it ran


def parameters(tool: Callable) -> list[inspect.Parameter]:
    """The parameters the model fills in: the signature without the `ws` workspace argument, and without the
    keyword-only ones the toolbox fills in."""
    return [param for param in list(inspect.signature(tool, eval_str=True).parameters.values())[1:]
            if param.kind is not inspect.Parameter.KEYWORD_ONLY]


def check_args(name: str, args: dict) -> str | None:
    """What is wrong with a call's name or arguments, as a sentence for the model; None if nothing is."""
    if name not in TOOLS:
        return UNKNOWN_TOOL.format(name=name, names=", ".join(TOOLS))
    params = {param.name: param for param in parameters(TOOLS[name])}
    unknown = [arg for arg in args if arg not in params]
    if unknown:
        return f"{name} has no argument {', '.join(unknown)}; its arguments are: {', '.join(params)}."
    missing = [p for p in params if params[p].default is inspect.Parameter.empty and p not in args]
    if missing:
        return f"{name} needs the argument {', '.join(missing)}."
    for arg, value in args.items():
        if not matches_type(value, params[arg].annotation):
            return (f"{name}: argument {arg} must be {type_name(params[arg].annotation)}, "
                    f"not {JSON_TYPES.get(type(value), 'that')}.")
        if isinstance(value, str) and not is_text(value):
            return (f"{name}: argument {arg} holds a lone surrogate (a \\ud800-style escape that is half of a "
                    "character), which is not text; write the character itself.")
    return None


def matches_type(value, hint) -> bool:
    """Whether a JSON value fits a parameter's type hint: str, int, float, bool, None, list[...], dict, unions."""
    origin, members = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(matches_type(value, member) for member in members)
    if origin is list:  # list[str]: a list, each item of that type
        return isinstance(value, list) and all(matches_type(item, members[0]) for item in value)
    if hint in (int, float) and isinstance(value, bool):  # JSON true is not a line number
        return False
    if hint is float:  # JSON has one number type: 3 is a fine float
        return isinstance(value, (int, float))
    if hint is None or hint is type(None):
        return value is None
    return isinstance(value, origin or hint) if isinstance(origin or hint, type) else True  # Any, or unannotated


def type_name(hint) -> str:
    """How the model is told what a parameter takes: "a string or null", "a list of a string"."""
    origin, members = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(member) for member in members)
    if origin is list:
        return f"a list of {type_name(members[0])}" if members else "a list"
    return JSON_TYPES.get(origin or hint, getattr(hint, "__name__", str(hint)))


def run_tool(ws: Workspace, name: str, args: dict, subagent: Callable[[str], str] | None = None) -> CallResult:
    """Run a checked call; every failure inside the tool comes back as an error result, never an exception."""
    tool = TOOLS[name]
    # Keyword-only parameters are the toolbox's to fill in (delegate's sub-agent), never the model's.
    given = {"subagent": subagent} if "subagent" in inspect.signature(tool).parameters else {}
    try:
        result = CallResult(name, args, True, tool(ws, **args, **given))
    except ToolError as error:
        result = CallResult(name, args, False, str(error))
    except OSError as error:
        result = CallResult(name, args, False, f"{name} failed: {error.strerror or error} ({error.filename or ''}).")
    except Exception as error:  # a bug in a tool must not end the user's session; the model is told
        result = CallResult(name, args, False, f"{name} failed unexpectedly: {type(error).__name__}: {error}")
    result.output = ws.redact(result.output)
    return result
