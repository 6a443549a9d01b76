"""Benchmark: what the look around each command (harness/commands/look.py) costs.

Times `Look.before()` + `Look.after()` (the watched files read twice, the workspace walked twice for `.git`
folders) with nothing changed, the common case, on:
  - this checkout, copied (a real repository: its .git with hooks, a few hundred files),
  - a workspace of 10,000 folders (100 x 100, a file in each),
  - one of 30,000 folders, past MAX_FOLDERS (the walk stops there).

  python bench/look.py [--runs 20]

Medians of --runs, in this process.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.commands.look import Look  # noqa: E402


def timed(workspace: Path, runs: int) -> float:
    look = Look(workspace, None, outside=[])
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        look.before()
        assert look.after() is None
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def folders(top: Path, n: int) -> Path:
    for i in range(n // 100):
        for j in range(100):
            folder = top / f"d{i}" / f"e{j}"
            folder.mkdir(parents=True)
            (folder / "f.txt").write_text("x\n")
    return top


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        checkout = Path(temp, "checkout")
        subprocess.run(["git", "clone", "-q", str(ROOT), str(checkout)], check=True)
        print(f"this checkout ({sum(1 for _ in checkout.rglob('*'))} entries): {timed(checkout, args.runs):.1f} ms a command")
        for n in (10_000, 30_000):
            top = folders(Path(temp, f"f{n}"), n)
            print(f"{n:,} folders: {timed(top, max(3, args.runs // 4)):.0f} ms a command")
            shutil.rmtree(top)


if __name__ == "__main__":
    main()
