"""The tools the model may call, and argument checking and dispatch.

A tool is one function: its name is the tool's name, its signature (after the `ws` workspace argument) is
the schema, and its docstring is the description the model reads (`prompt.py` renders them). Tools return
text; a tool that cannot do what was asked raises `ToolError` with a sentence the model can act on, and
`run_tool` turns every exception into such a result, so a tool failure never ends the session.

The sandbox the tools run in (which paths may be touched, secret files, ignore rules, the undo journal,
redaction) is `workspace.py`: every path here goes through `ws.resolve` or `ws.walk`, and every write
through `ws.approve` and `ws.write`. Edits keep the file's bytes (line endings, BOM, final newline,
permissions); `edits.py` holds how.
"""

from __future__ import annotations

import difflib
import inspect
import itertools
import os
import re
import signal
import stat
import subprocess
import threading
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.sandbox.edits import (
    BINARY_SNIFF_BYTES,
    BOM,
    LINE_BREAK,
    EditRefused,
    check_python_edit,
    decode_for_edit,
    describe_change,
    keep_final_newline,
    numbered,
    replace_once,
    split_lines,
    unified_diff,
)
from harness.sandbox.guard import denied_by, refusal
from harness.sandbox.search import TimeLimitHit, files_to_search, searchable_lines, shortened, time_limit
from harness.sandbox.workspace import Entry, IgnoreRules, ToolError, Workspace

# --- limits (each is a trade between what the model sees per call and what it costs in tokens) ---

# Lines per read_file call. 250 lines of typical code are ~3.5k tokens: a page still fits an 8k-token local
# window beside the prompt and the task (400 did not), and each page stays in the history for later requests.
# Codex CLI's prompt asks for the same 250-line chunks.
READ_MAX_LINES = 250
READ_MAX_BYTES = 25_000  # bytes per read_file call, for files with very long lines (~6k tokens at most)
READ_MAX_FILE_BYTES = 50_000_000  # read_file loads the whole file; past this, head/tail/grep do better
LINE_MAX_CHARS = 2000  # a longer line (minified code) is cut when shown
SEARCH_LINE_MAX_CHARS = 200  # a matching line is shown cut to this: a search shows many lines, each one short
EDIT_MAX_BYTES = 1_000_000  # files larger than this are not edited: a whole-file rewrite is not cheap to check
LIST_MAX_ENTRIES = 400  # entries per list_files call
SEARCH_MAX_MATCHES = 100  # matching lines per search_files call
SEARCH_MAX_SECONDS = 10  # a whole search_files call, walk included; in -p mode nobody is there to press Ctrl-C
SUGGEST_MAX_ENTRIES = 5000  # paths compared when suggesting a close name for a missing one
SUGGEST_MAX_SECONDS = 0.5  # it runs on every missing path: a hint must not cost more than the call
OUTPUT_MAX_BYTES = 20_000  # run_command output kept (half from the start, half from the end)
COMMAND_MAX_TIMEOUT = 600  # seconds; a longer command belongs in the user's own terminal


# --- the tools (docstrings are what the model reads: keep them exact and short) ---


def read_file(ws: Workspace, path: str, offset: int = 1, limit: int = READ_MAX_LINES) -> str:
    """Read a text file, at most 250 lines (25 KB) a call; the last line says how to read on. Each
    line is shown as its number, a tab, then the line; the numbers are not part of the file, so never copy
    them into old_str.

    Args:
        path: the file.
        offset: the line to start at (1 is the first).
        limit: how many lines to show.
    """
    full = ws.resolve(path)
    if full.is_file() and full.stat().st_size > READ_MAX_FILE_BYTES:
        raise ToolError(f"{path} is {full.stat().st_size:,} bytes, too big to load; use run_command with head, "
                        "tail or grep to look at parts of it.")
    data = read_bytes(ws, full, path)
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolError(f"{path} is a binary file ({len(data):,} bytes); read_file shows text files only.")
    text = data.removeprefix(BOM)
    notes = []
    try:
        text = text.decode("utf-8")
    except UnicodeDecodeError:
        text = text.decode("utf-8", errors="replace")
        notes.append("the file is not valid UTF-8: undecodable bytes are shown as \ufffd, and edit_file "
                     "will refuse this file")
    lines = split_lines(ws.redact(text))  # before any line is cut: a cut through the key would show half of it
    if not lines:
        return f"({path} is empty)"
    if offset < 1 or offset > len(lines):
        raise ToolError(f"offset {offset} is outside {path}, which has {len(lines)} lines; "
                        f"use an offset from 1 to {len(lines)}.")
    limit = max(1, min(limit, READ_MAX_LINES))
    shown, size = [], 0
    for number in range(offset, min(offset + limit, len(lines) + 1)):
        line = shortened(lines[number - 1], LINE_MAX_CHARS)
        size += len(line) + 8
        if shown and size > READ_MAX_BYTES:
            break
        shown.append(numbered(number, line))
    last = offset + len(shown) - 1
    if last < len(lines):
        footer = f"(lines {offset}-{last} of {len(lines)}; call read_file with offset={last + 1} to read on)"
    else:
        footer = f"(lines {offset}-{last} of {len(lines)}; end of file)"
    return "\n".join(shown + [footer] + [f"(note: {note})" for note in notes])


def list_files(ws: Workspace, path: str = ".") -> str:
    """List the files under a directory, recursively; directories end with "/". Leaves out dependency,
    cache and virtualenv directories and what git ignores. A big tree shows only its top levels and says
    so; then list a subdirectory to see inside it.

    Args:
        path: the directory ("." is the workspace root).
    """
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


def nothing_shown(ws: Workspace, full: Path, path: str) -> str:
    """Why a listing is empty: the folder is, or everything in it is left out (never "empty" then)."""
    with os.scandir(full) as scan:
        n_entries = sum(1 for _ in scan)
    if not n_entries:
        return f"({path} is empty)"
    entries = "1 entry, but it is" if n_entries == 1 else f"{n_entries:,} entries, but all are"
    why = [f"({path} holds {entries} left out: dependency and cache folders, and what "
           ".gitignore names."]
    if IgnoreRules(ws.root).negations_skipped:
        why.append("This folder is not in a git repository, so the lines of .gitignore that start with ! are "
                   "not read, and its other lines hide everything.")
    why.append("Use run_command with ls -a to see them.)")
    return " ".join(why)


def overview(ws: Workspace, top: Path) -> tuple[list[Entry], str]:
    """The entries to show under `top`, whole levels from the top while they fit in LIST_MAX_ENTRIES, and a
    line saying what was left out ("" if nothing). One big folder deep down cannot hide the rest."""
    entries = ws.walk(top)  # breadth-first: all of a level before the next
    shown: list[Entry] = []  # the complete levels so far
    level: list[Entry] = []  # the level being read
    depth = 1
    for entry in entries:
        entry_depth = len(entry.path.relative_to(top).parts)
        if entry_depth != depth:
            shown, level, depth = shown + level, [], entry_depth
        level.append(entry)
        if len(shown) + len(level) > LIST_MAX_ENTRIES:
            break
    else:
        return shown + level, ""
    if depth == 1:  # the folder itself holds too many: show its folders, then as many files as fit
        level += itertools.takewhile(lambda entry: len(entry.path.relative_to(top).parts) == 1, entries)
        # Folders first: 3,000 data files must not hide src/ and tests/, the tree's structure.
        kept = sorted(level, key=lambda entry: not entry.is_dir)[:LIST_MAX_ENTRIES]
        return kept, (f"... and {len(level) - len(kept):,} more entries here, not shown (find one with "
                      "search_files' glob, or list a subdirectory)")
    levels = "level" if depth == 2 else f"{depth - 1} levels"
    return shown, (f"(only the top {levels}: the tree has more than {LIST_MAX_ENTRIES} entries; list a "
                   "directory to see inside it)")


def edit_file(ws: Workspace, path: str, old_str: str, new_str: str) -> str:
    """Replace old_str with new_str in a file. old_str must match exactly one place: copy it from
    read_file output without the line numbers, with enough lines around the change to be unique. An empty
    old_str creates a new file holding new_str (it never overwrites an existing file). The file's line
    endings and encoding are kept.

    Args:
        path: the file.
        old_str: the exact text to replace, or "" to create a new file.
        new_str: the text to put in its place (the whole content, for a new file).
    """
    try:
        return change_file(ws, path, old_str, new_str)
    except (ToolError, EditRefused) as refusal:  # every refusal of an edit says the file is as it was
        raise ToolError(f"{refusal} No changes were made.") from None


def search_files(ws: Workspace, pattern: str, path: str = ".", glob: str | None = None) -> str:
    """Search text files for a Python regular expression; prints path:line: text for each matching
    line, at most 100. Searches the text files list_files shows, and names those it skipped. Stops
    after 10 seconds with what it found so far.

    Args:
        pattern: e.g. "TODO|FIXME" or "def [a-z_]+_file".
        path: the file or directory to search.
        glob: only files whose name or path matches it, e.g. "*.py"; null for all.
    """
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
                matches += [f"{name}:{number}: {shortened(line.strip(), SEARCH_LINE_MAX_CHARS)}"
                            for number, line in enumerate(lines, 1) if regex.search(line)]
                n_files += 1
    except TimeLimitHit:
        where = f"in {name}" if name else "while finding the files"
        notes.append(f"(search stopped at its {SEARCH_MAX_SECONDS} s limit {where}, {n_files} files searched "
                     "before it: a pattern with nested repeats such as (a+)+ can run for ever on a long line, and "
                     "a big tree takes long; simplify the pattern, or narrow path or glob)")
    if skipped:
        notes.append("(not searched: " + "; ".join(skipped[:10])
                     + (f"; and {len(skipped) - 10} more" if len(skipped) > 10 else "") + ")")
    if not matches:
        return "\n".join([f"No matches for {pattern!r} in {path} ({n_files} files searched)."] + notes)
    return "\n".join([capped(matches, SEARCH_MAX_MATCHES, "matches (narrow the pattern, path or glob)")] + notes)


def run_command(ws: Workspace, command: str, timeout: int = 60) -> str:
    """Run a shell command in the workspace root; returns its exit code and output (stdout and stderr
    together; long output keeps its start and end). It is killed after `timeout` seconds. There is no
    stdin, so use non-interactive flags (e.g. "git --no-pager log", "pip install -q").

    Args:
        command: e.g. "python -m pytest -q".
        timeout: seconds, 1 to 600.
    """
    if not command.strip():
        raise ToolError("command is empty; give a shell command line, e.g. \"ls -la\".")
    timeout = max(1, min(timeout, COMMAND_MAX_TIMEOUT))
    if rule := denied_by(command, ws.deny_rules):  # before the question: refused in every mode, --yes too
        raise ToolError(refusal(rule))
    ws.approve("command", "run this command", f"$ {command}")
    # The child gets the user's environment minus the API key; its own session (process group), so a
    # timeout can kill everything it started, not only the shell.
    env = {name: value for name, value in os.environ.items() if name != "OPENAI_API_KEY" and not ws.leaks(value)}
    process = subprocess.Popen(command, shell=True, cwd=ws.root, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    output = HeadAndTail(OUTPUT_MAX_BYTES)
    # Read as it comes, keeping only the start and the end: `yes` for a minute must not fill the memory.
    reader = threading.Thread(target=output.read_all, args=(process.stdout,), daemon=True)
    reader.start()
    try:
        process.wait(timeout=timeout)
        code = process.returncode  # negative: ended by a signal (Popen's way of saying so)
        status = f"exit code {code}" if code >= 0 else f"killed by signal {-code} ({signal.Signals(-code).name})"
    except subprocess.TimeoutExpired:
        kill_group(process)
        process.wait()
        status = f"killed after {timeout} s (timeout); the output so far"
    except BaseException:  # Ctrl-C while waiting: do not leave the command running behind the user's back
        kill_group(process)
        raise
    reader.join(timeout=5)  # a grandchild that left the process group may hold the pipe open; stop waiting
    text = output.text(ws.redact)
    return f"{status}:\n{text}" if text else f"{status}; no output"


class HeadAndTail:
    """A command's output, bounded: the first and last `limit // 2` bytes, and a count of those between."""

    def __init__(self, limit: int):
        self.half = limit // 2
        self.head, self.tail, self.n_dropped = bytearray(), bytearray(), 0

    def read_all(self, stream) -> None:
        while chunk := stream.read1(65536):
            room = self.half - len(self.head)
            self.head += chunk[:room]
            self.tail += chunk[max(room, 0):]
            if len(self.tail) > self.half:
                self.n_dropped += len(self.tail) - self.half
                del self.tail[: len(self.tail) - self.half]

    def text(self, redact: Callable[..., str]) -> str:
        """The output kept, redacted by `redact` (Workspace.redact) before the cut is marked: a key the cut
        went through is blanked on both sides of it."""
        if not self.n_dropped:
            return redact((self.head + self.tail).decode("utf-8", errors="replace"))
        head = redact(self.head.decode("utf-8", errors="replace"), cut_after=True)
        tail = redact(self.tail.decode("utf-8", errors="replace"), cut_before=True)
        return f"{head}\n[... {self.n_dropped:,} bytes dropped ...]\n{tail}"


def capped(lines: list[str], limit: int, rest: str) -> str:
    """The first `limit` lines, then one saying how many more there are and how to see them."""
    if len(lines) > limit:
        lines = lines[:limit] + [f"... and {len(lines) - limit} more {rest}"]
    return "\n".join(lines)


def kill_group(process: subprocess.Popen) -> None:
    """Kill the command and everything it started (it leads its own process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended on its own meanwhile
        pass


def delegate(ws: Workspace, task: str) -> str:
    """Hand a reading job to a sub-agent: it starts with a fresh context, reads, lists and searches the
    workspace on its own (at most 10 steps) and returns only its final answer, so its reading does not fill
    your context. Use it for broad searches ("find where X is handled"), surveys of many files, or summing
    up a big file. Not for anything that writes or runs commands (it cannot), nor for one file you can read
    yourself. It sees nothing of this conversation: say in the task all it needs to know.

    Args:
        task: the question, complete on its own, e.g. "Where are HTTP retries handled? Name files and functions."
    """
    if ws.subagent is None:  # the session sets it; a sub-agent's own workspace has none
        raise ToolError("A sub-agent cannot start sub-agents; read the files yourself.")
    if not task.strip():
        raise ToolError("task is empty: say what the sub-agent should find out, e.g. \"Where is the config read?\"")
    return ws.subagent(task)


# name -> function; the order here is the order the prompt lists them in
TOOLS = {tool.__name__: tool for tool in [read_file, list_files, edit_file, search_files, run_command, delegate]}


# --- checking arguments and running a tool ---


@dataclass
class ToolResult:
    ok: bool
    output: str


def parameters(tool: Callable) -> list[inspect.Parameter]:
    """The parameters the model fills in: the signature without the `ws` workspace argument."""
    return list(inspect.signature(tool, eval_str=True).parameters.values())[1:]


def check_args(name: str, args: dict) -> str | None:
    """What is wrong with a call's name or arguments, as a sentence for the model; None if nothing is."""
    if name not in TOOLS:
        return f'There is no tool "{name}". The tools are: {", ".join(TOOLS)}.'
    params = {param.name: param for param in parameters(TOOLS[name])}
    unknown = [arg for arg in args if arg not in params]
    if unknown:
        return f"{name} has no argument {', '.join(unknown)}; its arguments are: {', '.join(params)}."
    missing = [p for p in params if params[p].default is inspect.Parameter.empty and p not in args]
    if missing:
        return f"{name} needs the argument {', '.join(missing)}."
    for arg, value in args.items():
        expected = typing.get_args(params[arg].annotation) or (params[arg].annotation,)
        if not any(matches_type(value, kind) for kind in expected):
            wanted = " or ".join(JSON_TYPE_NAMES[kind] for kind in expected)
            return f"{name}: argument {arg} must be {wanted}, not {json_type_name(value)}."
        if isinstance(value, str) and not value.encode("utf-8", "surrogatepass").decode("utf-8", "ignore") == value:
            return (f"{name}: argument {arg} holds a lone surrogate (a \\ud800-style escape that is half of a "
                    "character), which is not text; write the character itself.")
    return None


JSON_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", type(None): "null"}


def matches_type(value, kind) -> bool:
    if kind is type(None):
        return value is None
    if kind is int and isinstance(value, bool):  # JSON true is not a line number
        return False
    return isinstance(value, kind)


def json_type_name(value) -> str:
    names = {bool: "true/false", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def run_tool(ws: Workspace, name: str, args: dict) -> ToolResult:
    """Run a checked call; every failure inside the tool comes back as an error result, never an exception."""
    try:
        result = ToolResult(True, TOOLS[name](ws, **args))
    except ToolError as error:
        result = ToolResult(False, str(error))
    except OSError as error:
        result = ToolResult(False, f"{name} failed: {error.strerror or error} ({error.filename or ''}).")
    except Exception as error:  # a bug in a tool must not end the user's session; the model is told
        result = ToolResult(False, f"{name} failed unexpectedly: {type(error).__name__}: {error}")
    result.output = ws.redact(result.output)
    return result


# --- naming what exists ---


def suggest_paths(ws: Workspace, path: str) -> str:
    """A hint naming existing paths close to a missing one. Bounded (entries and time): it runs on every
    miss, and a workspace may be a home directory."""
    known, deadline = [], time.monotonic() + SUGGEST_MAX_SECONDS
    for entry in ws.walk(ws.root):  # breadth-first, so the paths nearest the root are compared first
        if len(known) >= SUGGEST_MAX_ENTRIES or time.monotonic() > deadline:
            break
        if not entry.note:
            known.append(ws.relative(entry.path))
    wanted = Path(path).name
    close = [name for name in known if Path(name).name == wanted]
    close += [name for name in difflib.get_close_matches(path, known, n=3, cutoff=0.6) if name not in close]
    if close:
        return "Did you mean: " + ", ".join(close[:3]) + "?"
    return "Use list_files to see what exists."


# --- edit_file's steps (the text work itself is in edits.py) ---


def change_file(ws: Workspace, path: str, old_str: str, new_str: str) -> str:
    full = ws.resolve(path)
    if full.is_dir():
        raise ToolError(f"{path} is a directory; give the path of a file.")
    if old_str == "":  # a new file holds exactly what was asked: a lone CR in new_str may be meant
        return create_file(ws, full, path, new_str)
    if not full.exists():
        raise ToolError(f'{path} does not exist. To create it, call edit_file with old_str "" and the whole '
                        f"content as new_str. {suggest_paths(ws, path)}")
    mode = stat.S_IMODE(full.stat().st_mode)
    if not mode & 0o222:  # the mode bits, not os.access: root may write anything, but the owner said no
        raise ToolError(f"{path} is read-only (mode {mode:o}); edit_file does not change it. If it should "
                        "change, ask the user.")
    # Models sometimes send CRLF; an existing file decides the line endings, so work in LF and convert back.
    # A lone CR is a line break too (split_lines), so it becomes one in the file's style.
    old, new = LINE_BREAK.sub("\n", old_str), LINE_BREAK.sub("\n", new_str)
    if old == new:
        raise ToolError("old_str and new_str are identical, so there is nothing to change.")
    if full.stat().st_size > EDIT_MAX_BYTES:
        raise ToolError(f"{path} is {full.stat().st_size:,} bytes; edit_file only changes files up to "
                        f"{EDIT_MAX_BYTES:,} bytes.")
    document = decode_for_edit(read_bytes(ws, full, path), path)
    if ws.leaks(document.text):  # whether an old_str matched would tell the model the key a piece at a time
        raise ToolError(f"{path} holds the API key plainagent runs with (shown as [REDACTED]), so edit_file "
                        "does not change it. Ask the user to make this edit.")
    asked, rule, first, last = replace_once(document.text, old, new, path)
    text = keep_final_newline(document.text, asked)
    data = document.encode(text)
    if data == document.raw:  # a whitespace rule matched, and new_str is what the file already holds there
        raise ToolError(f"old_str matched line {first} of {path} ({rule}), and new_str is what is already "
                        "there: the edit would change nothing.")
    warning = check_python_edit(document.text, text, path) if full.suffix == ".py" else ""
    ws.approve("edit", f"edit {named(ws, path, full)}", unified_diff(document.text, text, ws.relative(full)))
    ws.write(full, data, mode, before=document.raw)
    return (f"Edited {named(ws, path, full)} ({rule}). "
            f"{describe_change(document.text, asked, text, first, last)}{warning}")


def create_file(ws: Workspace, full: Path, path: str, content: str) -> str:
    if full.exists():
        raise ToolError(f"{path} already exists, and an empty old_str only creates new files. To change it, "
                        "read it and pass the exact text to replace as old_str.")
    ws.approve("edit", f"create {named(ws, path, full)}", content)
    umask = os.umask(0)  # the only way to read the umask is to set it; put it straight back
    os.umask(umask)
    data = content.encode("utf-8")
    ws.write(full, data, 0o666 & ~umask, before=None)
    return f"Created {named(ws, path, full)} ({len(split_lines(content))} lines, {len(data):,} bytes)."


def named(ws: Workspace, path: str, full: Path) -> str:
    """The path as the model gave it, and the file that really changes when a link leads elsewhere:
    "docs/notes.md (a link to Makefile)". The user approves the file, not the link's name."""
    real = ws.relative(full)
    given = Path(os.path.normpath(ws.root / path))
    if given == full:
        return path
    if given.is_symlink():
        return f"{path} (a link to {real})"
    return f"{path} (through a linked folder: {real})"


def read_bytes(ws: Workspace, full: Path, path: str) -> bytes:
    """A regular file's bytes, or a ToolError for a directory, a missing file, a pipe or a device."""
    if full.is_dir():
        raise ToolError(f"{path} is a directory; use list_files to see what is in it.")
    if not full.exists():
        raise ToolError(f"{path} does not exist. {suggest_paths(ws, path)}")
    if not full.is_file():  # opening a FIFO would wait for a writer forever
        raise ToolError(f"{path} is not a regular file (a pipe, socket or device); only files can be read.")
    return full.read_bytes()
