"""How search_files finds and reads the files it searches, and how it is bounded in time.

Helpers of the `search_files` tool in tools.py (its docstring, what the model reads, stays there): which
files a search covers and which it names as skipped, globs where `**/` may match no folder, a file's lines
with the API key redacted before any pattern runs on them, and a time limit that can stop a regular
expression in the middle of one catastrophic match.
"""

from __future__ import annotations

import fnmatch
import itertools
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.sandbox.documents import BINARY_SNIFF_BYTES, BOM, split_lines
from harness.sandbox.workspace import ToolError, Workspace

SEARCH_MAX_FILE_BYTES = 1_000_000  # larger files are logs and data, not code: grep does better


def files_to_search(ws: Workspace, full: Path, path: str, glob: str | None,
                    skipped: list[str]) -> list[tuple[str, Path]]:
    """(name to show, real path) of each file search_files reads, in tree order; the files it may not or
    will not read go to `skipped`, with why."""
    if not full.is_dir():  # the path named one file: a refusal is an error, not a note
        if full.is_file() and full.stat().st_size > SEARCH_MAX_FILE_BYTES:
            raise ToolError(f"{path} is {full.stat().st_size:,} bytes; search_files reads files up to "
                            f"{SEARCH_MAX_FILE_BYTES:,} bytes. Use run_command with grep -n to search it.")
        return [(ws.relative(full), full)]
    files = []
    for entry in ws.walk(full):
        name = ws.relative(entry.path)
        if entry.is_dir or (glob and not (glob_matches(name, glob) or fnmatch.fnmatch(entry.path.name, glob))):
            continue
        if entry.note:
            skipped.append(f"{name} ({entry.note})")
        elif entry.path.is_file() and entry.path.stat().st_size > SEARCH_MAX_FILE_BYTES:
            skipped.append(f"{name} ({entry.path.stat().st_size:,} bytes, more than search_files reads: "
                           "use run_command with grep)")
        else:  # a link that passed the gate is read where it leads, and shown under its own name
            files.append((name, entry.path.resolve() if entry.path.is_symlink() else entry.path))
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
    device). When the path named this one file, those are errors instead: the model asked for it.
    The pattern runs on the redacted lines: on the file's own, "sk-proj-A" matching or not would tell the
    model the key one character at a time."""
    if not file.is_file():  # opening a FIFO would wait for a writer forever
        if file == full:
            raise ToolError(f"{path} is not a regular file (a pipe, socket or device); only files can be searched.")
        return None
    data = file.read_bytes()
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        if file == full:
            raise ToolError(f"{path} is a binary file ({len(data):,} bytes); search_files searches text files only.")
        return None
    return split_lines(ws.redact(data.removeprefix(BOM).decode("utf-8", "replace")))


def shortened(line: str, limit: int) -> str:
    """The line, cut at `limit` characters with a note saying how many more there are."""
    if len(line) <= limit:
        return line
    return line[:limit] + f" [line cut: {len(line) - limit:,} more characters]"


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
