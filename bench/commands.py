"""Benchmark: what the kernel boundary (harness/commands/landlock.py) costs a session that runs commands.

One `python agent.py -p TASK --yes` run against the local fake endpoint, whose scripted model runs COMMANDS (ten
ordinary commands: `true`, `ls`, `git status`, a Python start, a file written and read) and answers. Pair it, the
sandbox on against off, with farm-bench, which runs them in turn and takes the ratio pair by pair:

  farm-bench -n 15 -- python bench/commands.py on --vs 'python bench/commands.py off'

Or `python bench/commands.py on off --runs 15` for medians of each, timed here (no pairing). What is timed is the
whole run: the start (the boundary is built at the first command: a walk of the home folder for secrets, the
ruleset), ten commands (each enters the boundary before its shell starts), and the end.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_endpoint import FakeEndpoint, install_program  # noqa: E402

COMMANDS = ["true", "ls -la", "git init -q . && git status --short", "python3 -c 'print(1)'", "echo x > out.txt",
            "cat out.txt", "mkdir -p a/b && ls a", "wc -l app.py", "grep -n def app.py", "rm out.txt"]


def one_run(sandbox: str) -> float:
    """Seconds for one whole -p run with the sandbox `on` or `off`."""
    with tempfile.TemporaryDirectory() as temp:
        install, project, home = Path(temp, "install"), Path(temp, "project"), Path(temp, "home")
        for folder in (install, project, home / ".ssh"):
            folder.mkdir(parents=True)
        install_program(install)
        (home / ".ssh/id_ed25519").write_text("not a real key\n")
        (project / "app.py").write_text("def add(a, b):\n    return a + b\n")
        script = ["tool: run_command(" + json.dumps({"command": command}) + ")" for command in COMMANDS] + ["Done."]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
        env.update({"HOME": str(home), "XDG_STATE_HOME": str(Path(temp, "state")), "PLAINAGENT_SANDBOX": sandbox})
        with FakeEndpoint(script) as endpoint:
            env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "bench", "OPENAI_API_KEY": "sk-bench"})
            started = time.perf_counter()
            done = subprocess.run([sys.executable, str(install / "agent.py"), "-p", "run them", "--yes"],
                                  cwd=project, env=env, capture_output=True, text=True, timeout=120)
            seconds = time.perf_counter() - started
        assert done.returncode == 0 and done.stdout == "Done.\n", done.stderr
        assert ("(Landlock ABI" in done.stderr) == (sandbox == "on"), done.stderr.splitlines()[1]
        return seconds


def main(argv: list[str]) -> None:
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 1
    for sandbox in [word for word in argv if word in ("on", "off")] or ["on"]:
        times = [one_run(sandbox) for _ in range(runs)]
        if runs > 1:
            print(f"sandbox {sandbox}: median {statistics.median(times) * 1000:.0f} ms over {runs} runs of "
                  f"{len(COMMANDS)} commands")


if __name__ == "__main__":
    main(sys.argv[1:])
