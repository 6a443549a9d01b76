"""Tasks typed ahead: what the user types or pastes at the terminal while a task runs, for the next prompt.

The terminal keeps those keys until the prompt reads them, but not when each came, and that is the one thing
that tells a block pasted while a reply was streaming (one task, its indentation and blank lines kept) from
lines typed one after another (a task each). So while a task runs, a thread watches how much input is waiting
(FIONREAD, which reads nothing), and what arrives within PASTE_WAIT of the bytes before it came in one paste.
The failure it prevents is a pasted stack trace or function sent as twenty tasks, each stripped of its
indentation.

The terminal counts only finished lines (in its canonical mode a line is the kernel's until Enter), so a paste
whose last line has no line break would lose that line to the next burst: when a whole line comes, the count
is taken once more with line editing off for an instant, which counts the unfinished line too. (The kernel then
takes what was waiting as one finished piece: Backspace can no longer erase the start of that pasted line.)
A paste's unfinished last line is finished by the next Enter, typed then or at the prompt.

While a task runs the terminal does not echo what is typed: the kernel would draw it wherever the streamed
reply's line had got to, in the middle of the model's words. It is shown where it belongs instead, at the next
prompt, as the task it is (task_reader.py); a question asked meanwhile turns the echo back on while it reads its
answer (terminal.py), and `stop` gives the terminal back as it was found.

Only where there is such a terminal (termios, FIONREAD): elsewhere each line waiting is a task, as typed.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass

try:
    import fcntl
    import termios
except ImportError:  # Windows: no way to count what waits; the prompt reads it a line at a time
    termios = None

PASTE_WAIT = 0.03  # seconds: bytes arriving this soon after the ones before came in the same paste
# The terminal holds about 4 KB of input (Linux: 4,095 bytes); past that, a paste stalls, and what comes after
# the stall would be timed as lines typed later. From this much waiting, it is read into our own buffer.
DRAIN_AT = 1024
POLL = 0.02  # seconds between two looks at what is waiting, while a task runs (about 1% of a core)


@dataclass
class Burst:
    size: int  # bytes of input that came together
    at: float  # when the last of them came (time.monotonic)
    timed: bool = True  # False: they were waiting before anyone watched, so nothing says they came at once


class TypedAhead:
    """Watches the terminal on `fd` while a task runs (`watch`, `stop`); at the prompt, `take` gives the next
    task typed ahead: a burst of several lines is one task (a paste), a line typed on its own is one."""

    def __init__(self, fd: int, encoding: str = "utf-8", interval: float = POLL, together: float = PASTE_WAIT):
        self.fd, self.encoding, self.interval, self.together = fd, encoding, interval, together
        self.bursts: list[Burst] = []  # what is waiting (read into `buffer` first, then in the terminal), in order
        self.buffer = b""  # read from the terminal, not yet given out as a task
        self.ended = False  # a Ctrl-D was typed ahead: once what came before it is given out, the user leaves
        self.last = 0  # what the last look found waiting in the terminal, in bytes
        self.grew = False  # the last look found more waiting than the one before
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        self.echoing: list | None = None  # the terminal's settings before its echo was turned off, while watching

    @classmethod
    def for_terminal(cls, stdin) -> TypedAhead | None:
        """One for `stdin` if it is a terminal whose waiting input can be counted, else None."""
        if termios is None or not stdin.isatty():
            return None
        try:
            fd = stdin.fileno()
            waiting(fd)
        except (OSError, ValueError):
            return None
        return cls(fd, getattr(stdin, "encoding", None) or "utf-8")

    # --- while a task runs ---

    def watch(self) -> None:
        """Start noting when input comes, until `stop`."""
        self.stop()
        self.stopped.clear()
        self.grew = False
        try:
            self.last = self.reconcile()  # here, not in the thread: what comes from now on is timed
            self.echoing = termios.tcgetattr(self.fd)
            quiet = list(self.echoing)
            quiet[3] &= ~termios.ECHO  # keys typed now are shown at the next prompt, not inside the reply
            termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
        except (OSError, termios.error):
            return
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """Stop watching, after a last look: what came since the one before came in that moment."""
        if self.thread is not None:
            self.stopped.set()
            self.thread.join()
            self.thread = None
            try:
                self.look()
            except (OSError, termios.error):
                pass
        if self.echoing is not None:
            try:
                termios.tcsetattr(self.fd, termios.TCSANOW, self.echoing)
            except (OSError, termios.error):  # the terminal went away
                pass
            self.echoing = None

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.interval / 10 if self.grew else self.interval):  # closer while it comes
                self.look()
        except (OSError, termios.error):  # the terminal went away: nothing more will come
            return

    def look(self) -> None:
        """Note what came since the last look, and when."""
        now = waiting(self.fd)
        if now > self.last:
            now = max(now, self.with_unfinished_line())
            self.arrived(now - self.last, time.monotonic(), after_more=self.grew)
        elif now < self.last:  # read meanwhile (a question's answer) or discarded (before a question)
            self.reconcile()
        self.grew, self.last = now > self.last, now
        if now >= DRAIN_AT:  # a big paste: more than a question's answer; make room for the rest of it
            self.drain()

    def drain(self) -> None:
        """Move what the last look counted from the terminal into `buffer`. The bursts stay as they are: they
        count what is in the buffer and in the terminal alike. Only what was counted: the moment the terminal
        has room, the paste goes on, and what comes meanwhile is the next look's to time."""
        self.last -= self.read_in(min(waiting(self.fd), self.last))

    def reconcile(self) -> int:
        """Make the bursts agree with what waits in the terminal now (returned): bytes no burst accounts for
        were there before anyone watched; bytes gone from it were read or thrown away by someone else."""
        now = waiting(self.fd)
        in_terminal = sum(burst.size for burst in self.bursts) - len(self.buffer)
        if now < in_terminal:
            self.bursts = self.split(len(self.buffer))
            in_terminal = 0
        if now > in_terminal:
            self.bursts.append(Burst(now - in_terminal, 0, timed=False))
        return now

    def arrived(self, size: int, at: float, after_more: bool = False) -> None:
        """`size` more bytes, seen at `at`; `after_more`: the look before saw some come too (one look apart is
        too soon for two lines typed by hand, however late the look came)."""
        last = self.bursts[-1] if self.bursts else None
        if last is not None and last.timed and (after_more or at - last.at <= self.together):
            last.size, last.at = last.size + size, at
        else:
            self.bursts.append(Burst(size, at))

    def with_unfinished_line(self) -> int:
        """What waits, the line not yet finished too: the canonical count leaves it out."""
        attributes = termios.tcgetattr(self.fd)
        if not attributes[3] & termios.ICANON:  # someone else has the terminal in raw mode: all is counted
            return waiting(self.fd)
        uncooked = list(attributes)
        uncooked[3] &= ~termios.ICANON
        termios.tcsetattr(self.fd, termios.TCSANOW, uncooked)
        try:
            return waiting(self.fd)
        finally:
            termios.tcsetattr(self.fd, termios.TCSANOW, attributes)

    # --- at the prompt ---

    def take(self) -> tuple[list[str], bool] | None:
        """(the next task typed ahead as its lines, True if its last line is not finished yet), or None when
        no finished line waits. Raises EOFError when a Ctrl-D typed ahead comes next."""
        self.stop()
        self.read_waiting()
        if not self.buffer:
            if self.ended:
                raise EOFError
            return None
        size = self.bursts[0].size
        if not self.bursts[0].timed:  # a line at a time, as typed
            end = self.buffer.find(b"\n") + 1 or len(self.buffer)
        elif self.buffer[:size].endswith(b"\n"):  # a paste, or a line typed on its own
            end = size
        else:  # a paste whose last line was finished later, or is not yet
            end = self.buffer.find(b"\n", size) + 1 or len(self.buffer)
        text, self.buffer = self.buffer[:end].decode(self.encoding, errors="surrogateescape"), self.buffer[end:]
        self.bursts = self.split(end, keep_after=True)
        lines = text.split("\n")
        unfinished = lines[-1] != ""
        return (lines if unfinished else lines[:-1]), unfinished

    def read_waiting(self) -> None:
        """Move the finished lines waiting in the terminal into `buffer`; a Ctrl-D among them ends the reading."""
        self.read_in(self.reconcile())
        self.bursts = self.split(len(self.buffer))  # what came after a Ctrl-D is left where it is

    def read_in(self, n: int) -> int:
        """Read `n` bytes waiting in the terminal into `buffer`, or up to a Ctrl-D typed ahead (the terminal
        hands it over as an empty read: what comes after it stays there); returns the bytes read."""
        read = 0
        while read < n and not self.ended:
            chunk = os.read(self.fd, n - read)
            self.ended = not chunk
            self.buffer += chunk
            read += len(chunk)
        return read

    def split(self, at: int, keep_after: bool = False) -> list[Burst]:
        """The bursts of the first `at` bytes of what waits, or (`keep_after`) of what comes after them."""
        before, after, done = [], [], 0
        for burst in self.bursts:
            head = max(min(burst.size, at - done), 0)
            if head:
                before.append(Burst(head, burst.at, burst.timed))
            if burst.size - head:
                after.append(Burst(burst.size - head, burst.at, burst.timed))
            done += burst.size
        return after if keep_after else before


def waiting(fd: int) -> int:
    """Bytes of input waiting on the terminal `fd` (in canonical mode: those of finished lines)."""
    return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)
