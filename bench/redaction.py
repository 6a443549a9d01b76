"""Redaction's cost: how long `Workspace.redact` (the API key, then every credential shape of secret_shapes.py)
takes over a 1 MB result, next to the key alone, for three kinds of text: this project's own Python source, a
log, and a text dense with credentials (three in every ~176 bytes, the worst case a result could be).

Run from anywhere: `python bench/redaction.py [--runs 21]`. Prints the median CPU milliseconds of each.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.common.redaction import Secret  # noqa: E402
from harness.files.workspace import Workspace  # noqa: E402

SIZE = 1_000_000
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
KEY = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0" * 4


def texts() -> dict[str, str]:
    code = "".join(path.read_text() for path in sorted(ROOT.glob("**/*.py")) if ".venv" not in path.parts)
    log = "".join(f"2026-12-01 12:00:{n % 60:02} INFO worker {n} started queue=default elapsed=0.0{n % 97}s\n"
                  for n in range(20_000))
    draw = random.Random(33).choices  # tokens as random as real ones: `ghp_000…1` is a placeholder (issue 33)
    tokens = "".join(f"export GITHUB_TOKEN=ghp_{''.join(draw(ALNUM, k=36))}\nAuthorization: Bearer "
                     f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx{n}In0.dozjgNryP4J3jVmNHl0w5N\npassword = 'Tr0ub4dor-{n:08d}'\n"
                     for n in range(10_000))
    return {name: (text * (SIZE // len(text) + 1))[:SIZE] for name, text in
            {"python source": code, "a log": log, "dense with tokens": tokens}.items()}


def median_ms(redact, text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.process_time()  # CPU time: the machine is shared, and wall time is what others left
        redact(text)
        times.append(time.process_time() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    workspace, key = Workspace(ROOT, secret=KEY), Secret(KEY)
    for name, text in texts().items():
        print(f"{name:>18}: {median_ms(workspace.redact, text, runs):6.1f} ms a MB "
              f"(the key alone: {median_ms(key.redact, text, runs):.1f} ms)")


if __name__ == "__main__":
    main()
