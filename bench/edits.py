"""Benchmark: what asking whether an edit acts later (harness/files/acts_later.py) costs each edit_file.

In a git repository with the file in a subfolder (the common case, and the dearest: git is asked from the file's
folder and from the workspace's root, for the hooks folder and for the files it reads as configuration), EDITS
edits of one line each through `run_tool`, with the rule as it is (`on`) and with it answering "" at once (`off`).
Prints the median milliseconds an edit takes over RUNS runs of each, taken in turn:

  python bench/edits.py [--runs 9]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.files import read_and_edit  # noqa: E402
from tools import Workspace, run_tool  # noqa: E402

EDITS = 50


def one_run(rule_on: bool) -> float:
    """Milliseconds an edit takes, on average over EDITS edits in a fresh repository."""
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / "src").mkdir()
        for i in range(EDITS):
            (root / f"src/module_{i}.py").write_text(f"VALUE = {i}\n")
        ws = Workspace(root)
        real = read_and_edit.acts_later
        read_and_edit.acts_later = real if rule_on else (lambda *args, **kwargs: "")
        try:
            start = time.perf_counter()
            for i in range(EDITS):
                result = run_tool(ws, "edit_file", {"path": f"src/module_{i}.py", "old_str": f"VALUE = {i}",
                                                    "new_str": f"VALUE = {i + 1}"})
                assert result.ok, result.output
            return (time.perf_counter() - start) * 1000 / EDITS
        finally:
            read_and_edit.acts_later = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    timed = {"on": [], "off": []}
    for _ in range(runs):
        for name in timed:
            timed[name].append(one_run(name == "on"))
    on, off = (statistics.median(timed[name]) for name in ("on", "off"))
    print(f"edit_file in a repository, median of {runs} runs of {EDITS} edits: {on:.1f} ms an edit with the rule, "
          f"{off:.1f} ms without it ({on - off:.1f} ms for the rule)")


if __name__ == "__main__":
    main()
