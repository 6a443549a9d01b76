"""The REPL's prompt: reading the user's tasks, with line editing and a history kept across runs.

At the prompt: a pasted block of lines is one task, a line ending in a backslash goes on on the next, and
Ctrl-C clears the line rather than ending the session. The history lives in the user's state directory (never
in the workspace), one task a line, and each task is appended to it under a lock as it is typed: two REPLs
running at once both keep theirs, where writing the whole list back would let the last one to leave erase
the other's.
"""

from __future__ import annotations

import json
import os
import select
import sys
from pathlib import Path

from harness.cli.directories import state_dir

try:
    import fcntl
except ImportError:  # Windows: no file locks; appending alone keeps most of what two REPLs write
    fcntl = None

PASTE_WAIT = 0.03  # seconds: lines arriving this soon after the one before were pasted with it, not typed
HISTORY_LENGTH = 1000  # tasks kept in the history file (it is cut back to these when it holds twice as many)


class TaskReader:
    """Reads the user's tasks at the REPL prompt.

    Ctrl-C clears a half-typed line; at an empty prompt it says how to leave, and a second Ctrl-C in a row
    leaves (as do Ctrl-D, exit and quit), so one stray key never ends a session and loses its conversation.
    """

    def __init__(self, stdin=None, history: Path | None = None):
        self.stdin = stdin or sys.stdin
        self.interactive = self.stdin.isatty()
        self.prompt = "> " if self.interactive else ""  # piped tasks get no prompt, so stdout holds only answers
        self.readline = load_readline() if self.interactive else None
        self.history = history or state_dir() / "history"
        self.warned = False  # the last key at the prompt was a Ctrl-C on an empty line
        if self.readline:
            self.load_history()

    def read(self) -> str | None:
        """The next task, or None when the user leaves. When stdin is not a terminal, Ctrl-C raises
        KeyboardInterrupt: a script being fed in is stopped, as any pipeline would be."""
        while True:
            try:
                task = self.read_task().strip()
            except EOFError:
                self.end_line()  # before the shell's prompt
                return None
            except KeyboardInterrupt:
                if not self.interactive:
                    raise
                if self.leave_after_interrupt():
                    return None
                continue
            self.warned = False
            if task in ("exit", "quit"):
                return None
            if task:
                return task

    def read_task(self) -> str:
        """One task: a line, the lines pasted with it, and the lines a trailing `\\` continues onto.

        Lines typed while the last task ran are waiting before the prompt even shows: each is a task of its
        own, not a paste (a paste arrives all at once, after the prompt).
        """
        typed_ahead = self.interactive and self.more_pasted(wait=0)
        lines = [input(self.prompt)]
        while True:
            try:
                if lines[-1].endswith("\\") and not lines[-1].endswith("\\\\"):
                    lines[-1] = lines[-1][:-1]
                    lines.append(input("... " if self.interactive else ""))
                elif self.interactive and not typed_ahead and self.more_pasted():
                    lines.append(input(""))
                else:
                    break
            except EOFError:  # the end of the input after a trailing backslash: the task is what came
                break
        self.remember(lines)
        return "\n".join(lines)

    def remember(self, lines: list[str]) -> None:
        """One history entry for the whole task, so Up brings back a pasted block whole, not its last line."""
        if not self.readline:
            return
        if len(lines) > 1:
            added = min(sum(1 for line in lines if line), self.readline.get_current_history_length())
            for _ in range(added):  # input() added each non-empty line as an entry of its own
                self.readline.remove_history_item(self.readline.get_current_history_length() - 1)
            self.readline.add_history("\n".join(lines))
        if any(lines):
            append_history(self.history, "\n".join(lines))

    def more_pasted(self, wait: float = PASTE_WAIT) -> bool:
        """True if another line is already waiting: it came in one paste with the line just read."""
        try:
            return bool(select.select([self.stdin], [], [], wait)[0])
        except (OSError, ValueError):  # no file descriptor to wait on
            return False

    def load_history(self) -> None:
        """The earlier runs' tasks (and those of REPLs still running), the latest HISTORY_LENGTH of them."""
        self.readline.set_history_length(HISTORY_LENGTH)
        for entry in read_history(self.history)[-HISTORY_LENGTH:]:
            self.readline.add_history(entry)

    def leave_after_interrupt(self) -> bool:
        half_typed = self.readline.get_line_buffer().strip() if self.readline else ""
        self.end_line()  # the prompt's line stays as it was; a fresh prompt follows
        if half_typed:
            self.warned = False
            return False
        if self.warned:
            return True
        self.warned = True
        self.end_line("(press Ctrl-C again or Ctrl-D to leave)")
        return False

    def end_line(self, text: str = "") -> None:
        """Finish the prompt's line where the prompt is (stdout), even when stderr goes to a log."""
        if self.interactive:
            print(text, flush=True)


def load_readline():
    """The readline module, which gives input() line editing and history, where the platform has it."""
    try:
        import readline
    except ImportError:
        return None
    return readline


# --- the history file: one JSON string a line (readline's own file would split a pasted block into lines) ---


def read_history(path: Path) -> list[str]:
    """The entries in the history file, oldest first; none when it is missing or unreadable. A line that is
    not JSON (from an older file) is taken as it is."""
    try:
        with open(path, "rb") as file:
            lock(file, shared=True)  # not halfway through another REPL cutting it back
            lines = file.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = line
        if isinstance(entry, str) and entry:
            entries.append(entry)
    return entries


def append_history(path: Path, entry: str) -> None:
    """Add one task to the end of the history file (the user's only: tasks can hold anything), under a lock
    that every REPL takes to write it; past twice HISTORY_LENGTH entries, cut it back to the latest ones."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:  # a read-only home: history is a convenience, never a reason to fail
        return
    with open(fd, "ab") as file:
        try:
            lock(file)
            file.write((json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8", errors="surrogatepass"))
            file.flush()
            with open(path, "rb") as current:
                lines = current.read().splitlines(keepends=True)
            if len(lines) > 2 * HISTORY_LENGTH:
                os.ftruncate(fd, 0)  # in place, under the lock: a rename would drop an append racing it
                file.write(b"".join(lines[-HISTORY_LENGTH:]))
        except OSError:
            pass


def lock(file, shared: bool = False) -> None:
    """Hold the file's lock until it is closed: the other REPLs' appends wait for it (none on Windows)."""
    if fcntl is not None:
        fcntl.flock(file.fileno(), fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
