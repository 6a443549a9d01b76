"""The REPL's prompt: reading the user's tasks, with line editing and a history kept across runs.

At the prompt: a pasted block of lines is one task, taken exactly (its indentation, and a `\\` ending one of
its lines, `docker run \\`, as pasted); a typed line ending in a backslash goes on on the next; Ctrl-C clears
the line rather than ending the session. What was typed or pasted while a task ran is waiting when the prompt
comes back (typed_ahead.py): a block pasted then is one task too, lines typed one by one a task each. The
history lives in the user's state directory (never in the workspace), one task a line, and each task is
appended to it under a lock as it is typed: two REPLs running at once both keep theirs, where writing the
whole list back would let the last one to leave erase the other's.
"""

from __future__ import annotations

import json
import os
import select
import sys
from pathlib import Path

from harness.cli.escapes import escape
from harness.cli.typed_ahead import TypedAhead
from harness.common.directories import state_dir

try:
    import fcntl
except ImportError:  # Windows: no file locks; appending alone keeps most of what two REPLs write
    fcntl = None

PASTE_WAIT = 0.03  # seconds: lines arriving at the prompt this soon after the one before were pasted with it
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
        self.typed_ahead = TypedAhead.for_terminal(self.stdin)  # None where it cannot be watched
        if self.readline:
            self.load_history()

    def read(self) -> str | None:
        """The next task, or None when the user leaves. When stdin is not a terminal, Ctrl-C raises
        KeyboardInterrupt: a script being fed in is stopped, as any pipeline would be."""
        while True:
            try:
                task = trimmed(self.read_task())
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
                if self.typed_ahead:  # from now until the next prompt, what comes is typed ahead
                    self.typed_ahead.watch()
                return task

    def close(self) -> None:
        """Stop watching what is typed: the session ends (and the terminal is left as it was found)."""
        if self.typed_ahead:
            self.typed_ahead.stop()

    def read_task(self) -> str:
        """One task: what was typed ahead, else a line and the lines pasted with it; then, after a typed line
        ending in `\\`, the lines it continues onto. Pasted text is taken exactly: its `\\` are its own."""
        ahead = self.typed_ahead.take() if self.typed_ahead else None
        if ahead:
            lines, unfinished = ahead
            if shown := lines[:-1] if unfinished else lines:  # as the prompt would have shown them
                self.end_line(self.prompt + "\n".join(escape(line, keep="\t") for line in shown))
            if unfinished:  # a paste's last line, not finished yet: the user finishes it (or leaves it) with Enter
                try:
                    lines[-1] = self.input_after(lines[-1], "... " if shown else self.prompt)
                except EOFError:
                    self.end_line()
            n_read, pasted = int(unfinished), len(lines) > 1
        else:
            lines, n_read, pasted = [input(self.prompt)], 1, False
        while True:
            try:
                if self.interactive and not ahead and self.more_pasted():
                    lines.append(input(""))
                    n_read, pasted = n_read + 1, True
                elif not pasted and lines[-1].endswith("\\") and not lines[-1].endswith("\\\\"):
                    lines[-1] = lines[-1][:-1]
                    lines.append(input("... " if self.interactive else ""))
                    n_read += 1
                else:
                    break
            except EOFError:  # Ctrl-D at "... ", or the input's end: the task is what came, the answer below it
                self.end_line()
                break
        self.remember(lines, n_read)
        return "\n".join(lines)

    def input_after(self, start: str, prompt: str) -> str:
        """A line that starts with `start`, which the user can still edit (readline), then finishes."""
        if not (self.readline and sys.stdout.isatty()):  # input() uses readline only on a terminal
            print(prompt + escape(start, keep="\t"), end="", flush=True)
            return start + input("")
        self.readline.set_pre_input_hook(lambda: (self.readline.insert_text(start), self.readline.redisplay()))
        try:
            return input(prompt)
        finally:
            self.readline.set_pre_input_hook(None)

    def remember(self, lines: list[str], n_read: int | None = None) -> None:
        """One history entry for the whole task, so Up brings back a pasted block whole, not its last line.
        `n_read`: how many of the last lines input() read (and so added to readline's history); all by default."""
        if not self.readline:
            return
        n_read = len(lines) if n_read is None else n_read
        if len(lines) > 1 or n_read == 0:
            added = min(sum(1 for line in lines[len(lines) - n_read:] if line),
                        self.readline.get_current_history_length())
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


def trimmed(text: str) -> str:
    """A task as it is sent: a line without the blanks around it; a block of lines (pasted code, a stack trace)
    without the blank lines around it, and otherwise exactly as it came, its first line's indentation too."""
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines) if len(lines) > 1 else lines[0].strip() if lines else ""


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
