"""Benchmark: how soon streamed text reaches the user, from the moment the server sends it.

`python agent.py` runs a REPL in a subprocess against the local fake endpoint, which streams each reply as
server-sent events: a role delta, one delta holding a marker (`MARK07 `), a pause, then the rest. The endpoint
notes the moment it starts writing the marker's event (`FakeEndpoint.sent`); the benchmark reads the agent's
output without buffering and notes the moment the marker appears there. Both are time.monotonic(), one clock
for every process on the machine. Two ways the user sees the text:
  terminal   stdout is a pseudo-terminal (the text goes there, as at an interactive prompt);
  pipe       stdout is a pipe (the text goes to stderr, as in a log of an unattended run).
Prints the median, 90th percentile and worst latency of each. Target: under 50 ms.
Run: python bench/first_byte.py [--tasks 30]
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_endpoint import FakeEndpoint, install_program, stream_events  # noqa: E402


def marker(n: int) -> str:
    return f"MARK{n:02d} "


def reply(n: int) -> dict:
    """A reply whose first content delta is the marker; the pause keeps the rest from arriving with it."""
    events = stream_events(marker(n), pieces=1, finish_reason=None, done=False)
    return {"events": events + stream_events("and the rest of the answer.", pieces=3)[1:], "pause": 0.05}


def run(n_tasks: int, terminal: bool) -> list[float]:
    """Seconds from the server sending each marker to the marker appearing on the agent's output."""
    with tempfile.TemporaryDirectory() as temp:
        install, project = Path(temp, "install"), Path(temp, "project")
        install.mkdir(), project.mkdir()
        install_program(install)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
        env.update({"XDG_STATE_HOME": temp, "TERM": "dumb", "PYTHONUNBUFFERED": "1"})
        with FakeEndpoint([reply(n) for n in range(n_tasks)]) as endpoint:
            env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "bench"})
            if terminal:  # stdin and stdout a pseudo-terminal; the tasks are typed one at a time
                master, slave = os.openpty()
                process = subprocess.Popen([sys.executable, str(install / "agent.py")], cwd=project, env=env,
                                           stdin=slave, stdout=slave, stderr=subprocess.DEVNULL)
                os.close(slave)
                output = master
            else:  # the tasks piped in; the live text goes to stderr
                process = subprocess.Popen([sys.executable, str(install / "agent.py")], cwd=project, env=env,
                                           stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                output = process.stderr.fileno()
            seen = read_markers(process, output, n_tasks, master if terminal else None)
            process.wait(timeout=30)
            sent = {piece.split(b'"content": "')[1][:6].decode(): at
                    for at, piece in endpoint.sent if b'"content": "MARK' in piece}
    return [seen[name.strip()] - sent[name.strip()] for name in map(marker, range(n_tasks))]


def read_markers(process, fd: int, n_tasks: int, terminal: int | None) -> dict[str, float]:
    """Read the agent's output as it comes; note when each marker first appears. Types the tasks when at a terminal."""
    text, seen = "", {}
    if terminal is None:
        process.stdin.write(b"".join(b"task %d\n" % n for n in range(n_tasks)))
        process.stdin.close()
    else:
        os.write(terminal, b"task 0\n")
    deadline = time.monotonic() + 60
    while len(seen) < n_tasks and time.monotonic() < deadline:
        if not select.select([fd], [], [], 1)[0]:
            continue
        data = os.read(fd, 65536)
        now = time.monotonic()
        if not data:
            break
        text += data.decode("utf-8", errors="replace")
        for n in range(len(seen), n_tasks):
            if marker(n).strip() in text and marker(n).strip() not in seen:
                seen[marker(n).strip()] = now
                if terminal is not None and n + 1 < n_tasks:
                    time.sleep(0.3)  # let the answer finish and the prompt come back, then type the next task
                    os.write(terminal, b"task %d\n" % (n + 1))
    if terminal is not None:
        time.sleep(0.5)
        os.write(terminal, b"\x04")
        while select.select([fd], [], [], 2)[0]:  # drain the terminal so the program never blocks writing to it
            try:
                data = os.read(fd, 65536)
            except OSError:  # the program exited and closed the terminal
                break
            text += data.decode("utf-8", errors="replace")
            if not data:
                break
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=30)
    n_tasks = parser.parse_args().tasks
    print(f"python {sys.version.split()[0]}; {n_tasks} streamed replies each; from the server sending a delta "
          "to the agent showing it")
    for name, terminal in (("terminal (stdout)", True), ("pipe (stderr)", False)):
        latencies = sorted(seconds * 1000 for seconds in run(n_tasks, terminal))
        p90 = latencies[int(0.9 * (len(latencies) - 1))]
        print(f"{name:18} median {statistics.median(latencies):5.1f} ms, p90 {p90:5.1f} ms, "
              f"worst {latencies[-1]:5.1f} ms")


if __name__ == "__main__":
    main()
