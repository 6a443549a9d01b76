"""Start-up: how long `python agent.py --help` takes, next to `python -c "import requests, dotenv"` (the
least any run of the program must load), paired run by run so a noisy machine drifts out of the ratio.

Run from anywhere: `python bench/startup.py [--runs 21]`. Each command runs in a fresh copy of the program,
twice over: with Python's bytecode cache (as a user's second run, and every run after, has it) and without
(PYTHONDONTWRITEBYTECODE=1 and no cache: every module compiled from source, as on a first run). Prints the
median wall time of each and the median of the per-pair ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_endpoint import install_program  # noqa: E402

BASELINE = [sys.executable, "-c", "import requests, dotenv"]


def timed(command: list[str], env: dict, cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def measure(runs: int, cached: bool) -> tuple[float, float, float]:
    """(median seconds of --help, median seconds of the baseline, median ratio), in a fresh copy."""
    with tempfile.TemporaryDirectory() as temp:
        install = install_program(Path(temp) / "install")
        env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "PLAINAGENT_"))}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if not cached:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        command = [sys.executable, str(install / "agent.py"), "--help"]
        timed(command, env, Path(temp))  # warm the file system cache (and, when cached, write the bytecode)
        timed(BASELINE, env, Path(temp))
        pairs = [(timed(command, env, Path(temp)), timed(BASELINE, env, Path(temp))) for _ in range(runs)]
    return (statistics.median(a for a, _ in pairs), statistics.median(b for _, b in pairs),
            statistics.median(a / b for a, b in pairs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, {args.runs} pairs each")
    for cached in (True, False):
        help_time, baseline, ratio = measure(args.runs, cached)
        how = "with bytecode cache" if cached else "compiled from source"
        print(f"{how:22}  agent.py --help {help_time * 1000:4.0f} ms   "
              f"import requests, dotenv {baseline * 1000:4.0f} ms   ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
