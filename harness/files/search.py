"""Finding files: what list_files shows of a big tree, what search_files searches, and names close to a missing one.

Helpers of the `list_files` and `search_files` tools in tools.py (their docstrings, what the model reads, stay
there): a big tree shown by whole levels from the top, so one huge folder deep down cannot hide the rest; an
empty listing that says why it is empty; which files a search covers and which it names as skipped; globs where
`**/` may match no folder; a file's lines with the API key redacted before any pattern runs on them, and the part
of a long line where a pattern matched; a time limit that can stop a regular expression in the middle of one
catastrophic match; and, for a missing path, the existing paths closest to it (bounded: it runs on every miss,
and a workspace may be a home directory).
"""

from __future__ import annotations

import difflib
import fnmatch
import itertools
import re
import signal
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.common.seam_types import ToolError
from harness.common.text_files import decode, split_lines
from harness.files.ignore_rules import IgnoreRules
from harness.files.workspace import Entry, Workspace

SEARCH_MAX_FILE_BYTES = 1_000_000  # larger files are logs and data, not code: grep does better
LIST_MAX_ENTRIES = 400  # entries per list_files call
SUGGEST_MAX_ENTRIES = 5000  # paths compared when suggesting a close name for a missing one
SUGGEST_MAX_SECONDS = 0.5  # it runs on every missing path: a hint must not cost more than the call


# --- list_files ---


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


def nothing_shown(ws: Workspace, full: Path, path: str) -> str:
    """Why a listing is empty: the folder is, or everything in it is left out (never "empty" then)."""
    n_entries = len(ws.listing(full))
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


def capped(lines: list[str], limit: int, rest: str) -> str:
    """The first `limit` lines, then one saying how many more there are and how to see them."""
    if len(lines) > limit:
        lines = lines[:limit] + [f"... and {len(lines) - limit} more {rest}"]
    return "\n".join(lines)


# --- search_files ---



def files_to_search(ws: Workspace, full: Path, path: str, glob: str | None,
                    skipped: list[str]) -> list[tuple[str, Path]]:
    """(name to show, real path) of each file search_files reads, in tree order; the files it may not or
    will not read go to `skipped`, with why."""
    info = ws.stat(full)
    if info is None or not stat.S_ISDIR(info.st_mode):  # the path named one file: a refusal is an error, not a note
        if info is not None and stat.S_ISREG(info.st_mode) and info.st_size > SEARCH_MAX_FILE_BYTES:
            raise ToolError(f"{path} is {info.st_size:,} bytes; search_files reads files up to "
                            f"{SEARCH_MAX_FILE_BYTES:,} bytes. Use run_command with grep -n to search it.")
        return [(ws.relative(full), full)]
    files = []
    for entry in ws.walk(full):
        name = ws.relative(entry.path)
        if entry.is_dir or (glob and not (glob_matches(name, glob) or fnmatch.fnmatch(entry.path.name, glob))):
            continue
        if entry.note or entry.real is None:
            skipped.append(f"{name} ({entry.note})")
            continue
        try:
            info = ws.stat(entry.real)
        except (ToolError, OSError):  # changed or gone since the walk saw it: nothing to search there
            continue
        if info is not None and stat.S_ISREG(info.st_mode) and info.st_size > SEARCH_MAX_FILE_BYTES:
            skipped.append(f"{name} ({info.st_size:,} bytes, more than search_files reads: use run_command "
                           "with grep)")
        else:  # a link that passed the gate is read where the gate found it leads, shown under its own name
            files.append((name, entry.real))
    return sorted(files, key=lambda file: Path(file[0]).parts)


def glob_matches(name: str, glob: str) -> bool:
    """fnmatch, where each "**/" also matches no folder at all, as in git and ripgrep: "**/*.py" matches
    "a.py" at the root (fnmatch alone wants a "/" there), "src/**/test_*.py" matches "src/test_a.py"."""
    pieces = glob.split("**/")
    if len(pieces) > 8:  # each "**/" is kept or dropped: past 2^7 patterns, plain fnmatch
        return fnmatch.fnmatch(name, glob)
    for separators in itertools.product(["**/", ""], repeat=len(pieces) - 1):
        pattern = pieces[0] + "".join(separator + piece for separator, piece in zip(separators, pieces[1:]))
        if fnmatch.fnmatch(name, pattern):
            return True
    return False


def searchable_lines(ws: Workspace, file: Path, full: Path, path: str) -> list[str] | None:
    """A text file's lines, the API key redacted, or None for a file to pass over quietly (binary, a pipe, a
    device, unreadable, or changed since the walk). When the path named this one file, those are errors
    instead: the model asked for it. The pattern runs on the redacted lines: on the file's own, "sk-proj-A"
    matching or not would tell the model the key one character at a time."""
    try:
        info = ws.stat(file)
        if info is None or not stat.S_ISREG(info.st_mode):  # opening a FIFO would wait for a writer forever
            if file == full:
                raise ToolError(f"{path} is not a regular file (a pipe, socket or device); only files can be "
                                "searched.")
            return None
        data = ws.read(file, SEARCH_MAX_FILE_BYTES + 1)
    except (ToolError, OSError):
        if file == full:
            raise
        return None
    if len(data) > SEARCH_MAX_FILE_BYTES:  # it grew since files_to_search looked at it
        if file == full:
            raise ToolError(f"{path} is more than {SEARCH_MAX_FILE_BYTES:,} bytes now; search_files reads files "
                            "up to that. Use run_command with grep -n to search it.")
        return None
    decoded = decode(data)
    if decoded is None:
        if file == full:
            raise ToolError(f"{path} is a binary file ({len(data):,} bytes); search_files searches text files only.")
        return None
    return split_lines(ws.redact(decoded.text))


def shortened(line: str, limit: int) -> str:
    """The line, cut at `limit` characters with a note saying how many more there are."""
    if len(line) <= limit:
        return line
    return line[:limit] + f" [line cut: {len(line) - limit:,} more characters]"


def matching_lines(name: str, lines: list[str], regex: re.Pattern, limit: int) -> list[str]:
    """`name:number: text` for each line `regex` matches; a line longer than `limit` shows where it matched."""
    return [f"{name}:{number}: {excerpt(line, match.start(), limit)}"
            for number, line in enumerate(lines, 1) if (match := regex.search(line))]


def excerpt(line: str, start: int, limit: int) -> str:
    """A matching line, stripped; past `limit` characters, the part around the match at `start` (a quarter of the
    room before it), with what was left out on each side counted. The line's first characters would hide a match
    at character 150,000 of a minified file, and say nothing of where it is."""
    text = line.strip()
    if len(text) <= limit:
        return text
    start -= len(line) - len(line.lstrip())  # where the match is in the stripped text
    begin = max(0, min(start - limit // 4, len(text) - limit))
    before = f"[line cut: {begin:,} characters before] " if begin else ""
    return before + shortened(text[begin:], limit)


class TimeLimitHit(Exception):
    """The block under `time_limit` ran out of time."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeLimitHit inside the block once `seconds` have passed. It takes a signal: a pattern that
    backtracks for ever never returns from one `re` call, but re checks for signals every 4,096 steps
    (CPython's sre_lib.h), so SIGALRM's handler can end it. Signals reach the main thread only, where the
    tools run; in another thread (or without SIGALRM, on Windows) the block runs without a limit."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def stop(signum, frame):
        raise TimeLimitHit()

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
