"""The tools the model may call, the workspace sandbox they run in, and argument checking and dispatch.

A tool is one function: its name is the tool's name, its signature (after the `ws` workspace argument) is
the schema, and its docstring is the description the model reads (`prompt.py` renders them). Tools return
text; a tool that cannot do what was asked raises `ToolError` with a sentence the model can act on, and
`run_tool` turns every exception into such a result, so a tool failure never ends the session.

Trust rules, enforced here and nowhere else: every path stays inside the workspace; files holding secrets
are never read; writes never touch `.git/`; edits keep the file's bytes (line endings, BOM, final newline,
permissions) and are written atomically; every write and command is confirmed through `ws.confirm`.
"""

from __future__ import annotations

import difflib
import fnmatch
import inspect
import os
import re
import signal
import stat
import subprocess
import threading
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from edits import (
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
    write_atomically,
)

# --- limits (each is a trade between what the model sees per call and what it costs in tokens) ---

READ_MAX_LINES = 400  # lines per read_file call: ~10k tokens at most, fits small local context windows
READ_MAX_BYTES = 40_000  # bytes per read_file call, for files with very long lines
READ_MAX_FILE_BYTES = 50_000_000  # read_file loads the whole file; past this, head/tail/grep do better
LINE_MAX_CHARS = 2000  # a longer line (minified code) is cut when shown
EDIT_MAX_BYTES = 1_000_000  # files larger than this are not edited: a whole-file rewrite is not cheap to check
LIST_MAX_ENTRIES = 400  # entries per list_files call
SEARCH_MAX_MATCHES = 100  # matching lines per search_files call
OUTPUT_MAX_BYTES = 20_000  # run_command output kept (half from the start, half from the end)
COMMAND_MAX_TIMEOUT = 600  # seconds; a longer command belongs in the user's own terminal

# Directories that hold tools' output, not the project: listing or searching them only burns tokens.
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
             ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".eggs", ".next", ".parcel-cache"}
SECRET_NAMES = [".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*"]
NOT_SECRET_NAMES = {".env.example", ".env.sample", ".env.template"}


class ToolError(Exception):
    """A tool could not do what was asked; the message tells the model why and what to do instead."""


# Answers the user's question before a write or a command: (kind, title, preview) -> None to go ahead,
# or the reason for refusing ("" when the user gave none). kind is "edit" or "command".
Confirm = Callable[[str, str, str], "str | None"]


@dataclass
class Workspace:
    """The directory the agent may work in, and the session state the tools share."""

    root: Path
    confirm: Confirm | None = None  # None approves everything (--yes)
    secret: str = ""  # the API key: redacted from every result, kept out of commands' environment
    journal: list[tuple[Path, bytes | None]] = field(default_factory=list)  # (file, bytes before) per write

    def __post_init__(self):
        self.root = Path(self.root).resolve()

    def resolve(self, path: str, *, writing: bool = False) -> Path:
        """The real path of `path` (relative to the root, or absolute inside it), or a ToolError."""
        if not path.strip():
            raise ToolError("path is empty; give a path relative to the workspace root, e.g. \"src/app.py\".")
        if "\0" in path:
            raise ToolError(f"path contains a NUL character: {path!r}; give a plain file path.")
        full = (self.root / path).resolve()  # follows symlinks, so a link cannot lead outside unnoticed
        if full != self.root and not full.is_relative_to(self.root):
            raise ToolError(f"{path} is outside the workspace {self.root}; only paths inside it can be used.")
        if is_secret(Path(path).name) or is_secret(full.name):
            raise ToolError(f"{path} may hold secrets (API keys, private keys), so it is not read, searched "
                            "or edited. Ask the user if you need something from it.")
        if writing and ".git" in full.relative_to(self.root).parts:
            raise ToolError(f"{path} is inside .git/; writing there could corrupt the repository. "
                            "Use git commands through run_command instead.")
        return full

    def relative(self, full: Path) -> str:
        """How the model should name `full`: relative to the root, with '/'."""
        return full.relative_to(self.root).as_posix() if full != self.root else "."

    def approve(self, kind: str, title: str, preview: str) -> None:
        """Ask the user before a write or a command; a refusal becomes a ToolError with their reason."""
        if self.confirm is None:
            return
        refusal = self.confirm(kind, title, preview)
        if refusal is not None:
            raise ToolError(f"Not approved: {title}. {refusal}")

    def write(self, full: Path, data: bytes, mode: int, before: bytes | None) -> None:
        """Write atomically, and journal the bytes before (None: the file was new) so /undo can restore them."""
        try:
            write_atomically(full, data, mode)
        except OSError as error:
            raise ToolError(f"could not write {self.relative(full)}: {error.strerror or error}.") from None
        self.journal.append((full, before))

    def redact(self, text: str) -> str:
        """The text with the API key blanked out, so no tool result ever shows it to the model."""
        return text.replace(self.secret, "[REDACTED]") if self.secret else text


def is_secret(name: str) -> bool:
    return name not in NOT_SECRET_NAMES and any(fnmatch.fnmatch(name, pattern) for pattern in SECRET_NAMES)


# --- the tools (docstrings are what the model reads: keep them exact and short) ---


def read_file(ws: Workspace, path: str, offset: int = 1, limit: int = READ_MAX_LINES) -> str:
    """Read a text file, at most 400 lines (40 KB) a call; the last line says how to read on. Each
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
    lines = split_lines(text)
    if not lines:
        return f"({path} is empty)"
    if offset < 1 or offset > len(lines):
        raise ToolError(f"offset {offset} is outside {path}, which has {len(lines)} lines; "
                        f"use an offset from 1 to {len(lines)}.")
    limit = max(1, min(limit, READ_MAX_LINES))
    shown, size = [], 0
    for number in range(offset, min(offset + limit, len(lines) + 1)):
        line = lines[number - 1]
        if len(line) > LINE_MAX_CHARS:
            line = line[:LINE_MAX_CHARS] + f" [line cut: {len(line) - LINE_MAX_CHARS:,} more characters]"
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
    """List the files under a directory, recursively; directories end with "/". Dependency, cache and
    virtualenv directories and what .gitignore excludes are left out.

    Args:
        path: the directory ("." is the workspace root).
    """
    full = ws.resolve(path)
    if not full.exists():
        raise ToolError(f"{path} does not exist. {suggest_paths(ws, path)}")
    if not full.is_dir():
        raise ToolError(f"{path} is a file, not a directory; use read_file to read it.")
    found = sorted(walk(ws, full), key=lambda item: item[0].parts)  # each directory followed by its contents
    entries = [ws.relative(entry) + ("/" if is_dir else "") for entry, is_dir in found]
    if not entries:
        return f"({path} is empty)"
    return capped(entries, LIST_MAX_ENTRIES, "entries (list a subdirectory to see them)")


def edit_file(ws: Workspace, path: str, old_str: str, new_str: str) -> str:
    """Replace old_str with new_str in a file. old_str must match exactly one place: copy it from
    read_file output without the line numbers, with enough lines around the change to be unique. An empty
    old_str creates a new file holding new_str (it never overwrites an existing file). Line endings,
    encoding and the final newline are kept.

    Args:
        path: the file.
        old_str: the exact text to replace, or "" to create a new file.
        new_str: the text to put in its place (the whole content, for a new file).
    """
    # Models sometimes send CRLF; the file decides the line endings, so work in LF and convert back.
    # A lone CR is a line break too (split_lines), so it becomes one in the file's style.
    old, new = LINE_BREAK.sub("\n", old_str), LINE_BREAK.sub("\n", new_str)
    try:
        return change_file(ws, path, old, new)
    except (ToolError, EditRefused) as refusal:  # every refusal of an edit says the file is as it was
        raise ToolError(f"{refusal} No changes were made.") from None


def search_files(ws: Workspace, pattern: str, path: str = ".", glob: str | None = None) -> str:
    """Search text files for a Python regular expression; prints path:line: text for each matching
    line, at most 100. Skips the same directories as list_files.

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
    files = [full] if full.is_file() else [entry for entry, is_dir in walk(ws, full) if not is_dir]
    matches, n_files = [], 0
    for file in files:
        name = ws.relative(file)
        if glob and not (fnmatch.fnmatch(name, glob) or fnmatch.fnmatch(file.name, glob)):
            continue
        if not file.is_file() or is_secret(file.name) or file.stat().st_size > EDIT_MAX_BYTES:
            continue  # pipes and devices would block; huge files are logs and data, not code
        data = file.read_bytes()
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            continue
        n_files += 1
        for number, line in enumerate(split_lines(data.removeprefix(BOM).decode("utf-8", "replace")), 1):
            if regex.search(line):
                matches.append(f"{name}:{number}: {line.strip()[:200]}")
    if not matches:
        return f"No matches for {pattern!r} in {path} ({n_files} files searched)."
    return capped(matches, SEARCH_MAX_MATCHES, "matches (narrow the pattern, path or glob)")


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
    ws.approve("command", "run this command", f"$ {command}")
    # The child gets the user's environment minus the API key; its own session (process group), so a
    # timeout can kill everything it started, not only the shell.
    env = {name: value for name, value in os.environ.items()
           if name != "OPENAI_API_KEY" and not (ws.secret and ws.secret in value)}
    process = subprocess.Popen(command, shell=True, cwd=ws.root, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    output = HeadAndTail(OUTPUT_MAX_BYTES)
    # Read as it comes, keeping only the start and the end: `yes` for a minute must not fill the memory.
    reader = threading.Thread(target=output.read_all, args=(process.stdout,), daemon=True)
    reader.start()
    try:
        process.wait(timeout=timeout)
        status = f"exit code {process.returncode}"
    except subprocess.TimeoutExpired:
        kill_group(process)
        process.wait()
        status = f"killed after {timeout} s (timeout); the output so far"
    except BaseException:  # Ctrl-C while waiting: do not leave the command running behind the user's back
        kill_group(process)
        raise
    reader.join(timeout=5)  # a grandchild that left the process group may hold the pipe open; stop waiting
    text = output.text()
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

    def text(self) -> str:
        if not self.n_dropped:
            return (self.head + self.tail).decode("utf-8", errors="replace")
        return (f"{self.head.decode('utf-8', errors='replace')}\n[... {self.n_dropped:,} bytes dropped ...]\n"
                f"{self.tail.decode('utf-8', errors='replace')}")


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


# name -> function; the order here is the order the prompt lists them in
TOOLS = {tool.__name__: tool for tool in [read_file, list_files, edit_file, search_files, run_command]}


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


# --- walking the workspace ---


def walk(ws: Workspace, top: Path) -> Iterator[tuple[Path, bool]]:
    """(path, is_dir) under `top`, sorted, skipping SKIP_DIRS, virtualenvs and what .gitignore excludes."""
    ignored = gitignore_patterns(ws.root)
    for directory, dirnames, filenames in os.walk(top):
        base = Path(directory)
        dirnames[:] = sorted(name for name in dirnames if not skip_dir(ws, base / name, ignored))
        for name in dirnames:
            yield base / name, True
        for name in sorted(filenames):
            if not is_ignored(ws.relative(base / name), name, ignored, is_dir=False):
                yield base / name, False


def skip_dir(ws: Workspace, path: Path, ignored: list[str]) -> bool:
    return (path.name in SKIP_DIRS or path.name.endswith(".egg-info") or (path / "pyvenv.cfg").exists()
            or path.is_symlink() or is_ignored(ws.relative(path), path.name, ignored, is_dir=True))


def gitignore_patterns(root: Path) -> list[str]:
    """The top-level .gitignore's patterns (negations `!` are not supported and are skipped)."""
    try:
        lines = (root / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "!"))]


def is_ignored(relative: str, name: str, patterns: list[str], *, is_dir: bool) -> bool:
    """Git's rules, simplified: a pattern with an inner '/' is anchored at the root, others match any name."""
    for pattern in patterns:
        if pattern.endswith("/"):
            if not is_dir:
                continue
            pattern = pattern.rstrip("/")
        pattern = pattern.removeprefix("**/")
        if "/" in pattern:
            if fnmatch.fnmatch(relative, pattern.lstrip("/")):
                return True
        elif fnmatch.fnmatch(name, pattern):
            return True
    return False


def suggest_paths(ws: Workspace, path: str) -> str:
    """A hint naming existing paths close to a missing one."""
    known = [ws.relative(entry) for entry, _ in walk(ws, ws.root)][:5000]
    wanted = Path(path).name
    close = [name for name in known if Path(name).name == wanted]
    close += [name for name in difflib.get_close_matches(path, known, n=3, cutoff=0.6) if name not in close]
    if close:
        return "Did you mean: " + ", ".join(close[:3]) + "?"
    return "Use list_files to see what exists."


# --- edit_file's steps (the text work itself is in edits.py) ---


def change_file(ws: Workspace, path: str, old: str, new: str) -> str:
    full = ws.resolve(path, writing=True)
    if full.is_dir():
        raise ToolError(f"{path} is a directory; give the path of a file.")
    if old == "":
        return create_file(ws, full, path, new)
    if not full.exists():
        raise ToolError(f'{path} does not exist. To create it, call edit_file with old_str "" and the whole '
                        f"content as new_str. {suggest_paths(ws, path)}")
    if old == new:
        raise ToolError("old_str and new_str are identical, so there is nothing to change.")
    if full.stat().st_size > EDIT_MAX_BYTES:
        raise ToolError(f"{path} is {full.stat().st_size:,} bytes; edit_file only changes files up to "
                        f"{EDIT_MAX_BYTES:,} bytes.")
    document = decode_for_edit(read_bytes(ws, full, path), path)
    asked, rule, first, last = replace_once(document.text, old, new, path)
    text = keep_final_newline(document.text, asked)
    data = document.encode(text)
    if data == document.raw:  # a whitespace rule matched, and new_str is what the file already holds there
        raise ToolError(f"old_str matched line {first} of {path} ({rule}), and new_str is what is already "
                        "there: the edit would change nothing.")
    warning = check_python_edit(document.text, text, path) if full.suffix == ".py" else ""
    ws.approve("edit", f"edit {path}", unified_diff(document.text, text, path))
    ws.write(full, data, stat.S_IMODE(full.stat().st_mode), before=document.raw)
    return f"Edited {path} ({rule}). {describe_change(document.text, asked, text, first, last)}{warning}"


def create_file(ws: Workspace, full: Path, path: str, content: str) -> str:
    if full.exists():
        raise ToolError(f"{path} already exists, and an empty old_str only creates new files. To change it, "
                        "read it and pass the exact text to replace as old_str.")
    ws.approve("edit", f"create {path}", content)
    full.parent.mkdir(parents=True, exist_ok=True)
    umask = os.umask(0)  # the only way to read the umask is to set it; put it straight back
    os.umask(umask)
    data = content.encode("utf-8")
    ws.write(full, data, 0o666 & ~umask, before=None)
    return f"Created {path} ({len(split_lines(content))} lines, {len(data):,} bytes)."


def read_bytes(ws: Workspace, full: Path, path: str) -> bytes:
    """A regular file's bytes, or a ToolError for a directory, a missing file, a pipe or a device."""
    if full.is_dir():
        raise ToolError(f"{path} is a directory; use list_files to see what is in it.")
    if not full.exists():
        raise ToolError(f"{path} does not exist. {suggest_paths(ws, path)}")
    if not full.is_file():  # opening a FIFO would wait for a writer forever
        raise ToolError(f"{path} is not a regular file (a pipe, socket or device); only files can be read.")
    return full.read_bytes()
