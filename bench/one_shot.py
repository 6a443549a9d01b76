"""Benchmark: a one-shot task, `python agent.py -p TASK`, against the least such a run could be: a bare
`requests` post of the same kind after `dotenv` loads a `.env` (the floor; the goal is at most 1.3x it).

Both talk to the local fake endpoint (tests/fake_endpoint.py: a real socket), which answers every request with
"Done." at once, so what is timed is the program: its start-up, the start line (the kernel boundary's search for
secrets and its namespaces probe), one request, the answer, the end. A temp HOME, project and state folder.
Paired run by run with farm-bench, which takes the ratio pair by pair:

  python bench/one_shot.py [--runs 21]

prints farm-bench's table (quote the median ratio). `--profile` prints instead `python -X importtime`'s ten
slowest imports of one run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_endpoint import FakeEndpoint, install_program  # noqa: E402

FLOOR = ("import dotenv, os, requests; dotenv.load_dotenv(); "
         "r = requests.post(os.environ['OPENAI_BASE_URL'] + '/chat/completions', "
         "headers={'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']}, "
         "json={'model': os.environ['OPENAI_MODEL'], 'messages': [{'role': 'user', 'content': 'hi'}]}, timeout=30); "
         "print(r.json()['choices'][0]['message']['content'])")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp, FakeEndpoint(["Done."] * 10_000) as endpoint:
        install, project, home = Path(temp, "install"), Path(temp, "project"), Path(temp, "home")
        for folder in (project, home / ".ssh"):
            folder.mkdir(parents=True)
        install_program(install)
        (project / "app.py").write_text("print('hi')\n")
        env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "PLAINAGENT_"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user's second run, and every one after: the bytecode cached
        env.update({"HOME": str(home), "XDG_STATE_HOME": f"{temp}/state", "XDG_CONFIG_HOME": f"{temp}/config",
                    "OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": "sk-bench"})
        agent = [sys.executable, str(install / "agent.py"), "-p", "hi"]
        if args.profile:
            done = subprocess.run([sys.executable, "-X", "importtime", *agent[1:]], env=env, cwd=project,
                                  capture_output=True, text=True)
            rows = [line.split("|") for line in done.stderr.splitlines() if line.startswith("import time:")][1:]
            for row in sorted(rows, key=lambda row: -int(row[1].split(":")[-1]))[:10]:
                print(f"{int(row[1].split(':')[-1]) / 1000:7.1f} ms cumulative  {row[2].strip()}")
            return
        subprocess.run(agent, env=env, cwd=project, check=True, capture_output=True)  # the bytecode cache written
        floor = f"{sys.executable} -c \"{FLOOR}\""
        subprocess.run(["farm-bench", "-n", str(args.runs), "--warmup", "2", "--vs", floor, "--", *agent],
                       env=env, cwd=project, check=True)


if __name__ == "__main__":
    main()
