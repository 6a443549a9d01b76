"""How run_command runs a command, once the deny rules (guard.py) and the user (permissions.py) allow it.

In the workspace root, with the user's environment minus the API key, without stdin, in a process group of its
own so that a timeout or a Ctrl-C kills everything it started (not only the shell, leaving a server running
behind the user's back), and with its output bounded while it runs (`yes` for a minute must not fill the
memory): the head and the tail are kept, the API key redacted before the cut is marked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable

from harness.sandbox.workspace import Workspace

OUTPUT_MAX_BYTES = 20_000  # run_command output kept (half from the start, half from the end)


def run_shell(ws: Workspace, command: str, timeout: int) -> str:
    """Run `command` with sh; returns its status line and its output, as run_command's result."""
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
    return f"{status}:\n{text}" if text else f"{status.removesuffix('; the output so far')}; no output"


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


def kill_group(process: subprocess.Popen) -> None:
    """Kill the command and everything it started (it leads its own process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended on its own meanwhile
        pass
