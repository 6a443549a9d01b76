"""agent.py's main() run inside the test's own process, as `python agent.py ARGS` runs it, for the end-to-end
tests whose subject is not the process itself: the requests still go over a real socket to the FakeEndpoint,
the files and the transcript are real, and the result is what subprocess.run would give (exit code, stdout,
stderr). What only a separate process shows (signals, kill -9, a closed stdout, a terminal, two runs at once,
the `if __name__ == "__main__"` block) stays with the tests that start `python agent.py`; starting one costs
about 0.3 s of CPU, most of it imports.

The run sees `env` over the environment without the OPENAI_* and PLAINAGENT_* variables, `cwd` as its current
directory, `home` as the folder agent.py is in (its user's own .env), `stdin` as a pipe that holds that text,
and stdout and stderr as pipes; afterwards the process's state is as it was (the environment, the current
directory, the streams, the key the screen hides, the live reply), and the transcript it opened is closed,
which is what the end of a process does (and lets go of its lock)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import agent
from harness.cli import display, escapes


def run_agent(home: Path, cwd: Path, argv: list[str], env: dict[str, str], stdin: str | None = None
              ) -> subprocess.CompletedProcess:
    """What `subprocess.run([python, home/agent.py, *argv], cwd=cwd, env=..., input=stdin, capture_output=True,
    text=True)` returns, from main() called here."""
    saved = dict(os.environ), os.getcwd(), (sys.stdin, sys.stdout, sys.stderr), agent.__file__, agent.open_session
    shown = escapes.secret, display.active, list(display.listeners)  # the key kept from the screen, the live reply
    # log lines make room in, who is told each line (-p --json)
    opened = []  # the transcripts the run opened: the end of a process closes them

    def open_session(*args, **kwargs):
        transcript, loaded = saved[4](*args, **kwargs)
        opened.append(transcript)
        return transcript, loaded

    for name in [name for name in os.environ if name.startswith(("OPENAI_", "PLAINAGENT_"))]:
        del os.environ[name]
    os.environ.update(env)
    os.chdir(cwd)
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True) for _ in range(2))
    sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
    sys.stdout, sys.stderr = out, err
    agent.__file__, agent.open_session = str(home / "agent.py"), open_session
    try:
        code = agent.main(argv)
    except SystemExit as exit:  # argparse's usage errors
        code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
    finally:
        os.environ.clear()
        os.environ.update(saved[0])
        os.chdir(saved[1])
        sys.stdin, sys.stdout, sys.stderr = saved[2]
        agent.__file__, agent.open_session = saved[3], saved[4]
        escapes.secret, display.active, display.listeners[:] = shown
        for transcript in opened:
            if transcript.fd is not None:
                os.close(transcript.fd)
    # As text=True reads a pipe: universal newlines.
    stdout, stderr = (stream.buffer.getvalue().decode().replace("\r\n", "\n").replace("\r", "\n")
                      for stream in (out, err))
    return subprocess.CompletedProcess([sys.executable, str(home / "agent.py"), *argv], code, stdout, stderr)
