"""Benchmark: what keeping the repository's history (harness/commands/git_history.py) costs.

A repository of N objects (100,000 by default) is made in a temp folder with `git fast-import` (N blobs and one
commit naming them all), once packed (as a clone or a `git gc` leaves it) and once with every object loose
(`git unpack-objects`). For each it times, in this process:
  - the snapshot at the first command (`before_command`: every object file hard-linked, the refs copied),
  - the look after each command when nothing was removed (`after_command`, the common case),
  - the put-back after `rm -rf .git` (`after_command` again, with the folder gone).

  python bench/history.py [--objects N] [--runs 5]

Medians of --runs; the state folder (where the snapshot goes) is on the same file system as the repository, as
it is under a home folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.commands.git_history import GitHistory  # noqa: E402


def make_repository(folder: Path, n_objects: int, loose: bool) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
    stream = bytearray()
    for n in range(n_objects - 2):  # the blobs, then a tree naming them all and a commit
        data = f"object {n}\n".encode()
        stream += b"blob\nmark :%d\ndata %d\n%s\n" % (n + 1, len(data), data)
    stream += b"commit refs/heads/main\ncommitter b <b@b> 0 +0000\ndata 2\nb\n"
    stream += b"".join(b"M 100644 :%d f%d\n" % (n + 1, n) for n in range(n_objects - 2)) + b"\n"
    subprocess.run(["git", "fast-import", "--quiet"], cwd=folder, input=bytes(stream), check=True)
    if loose:
        packs = list((folder / ".git/objects/pack").glob("*.pack"))
        for pack in packs:
            moved = folder / pack.name
            pack.rename(moved)
            pack.with_suffix(".idx").unlink()
            with open(moved, "rb") as file:
                subprocess.run(["git", "unpack-objects", "-q"], cwd=folder, stdin=file, check=True)
            moved.unlink()


def one_round(repository: Path, state: Path) -> tuple[float, float, float]:
    work = state.parent / "work"
    shutil.rmtree(work, ignore_errors=True)
    subprocess.run(["cp", "-a", str(repository), str(work)], check=True)
    keeper = GitHistory(work / ".git", root=state)
    start = time.perf_counter()
    keeper.before_command()
    snapshot = time.perf_counter() - start
    start = time.perf_counter()
    assert keeper.after_command() is None
    look = time.perf_counter() - start
    shutil.rmtree(work / ".git")
    start = time.perf_counter()
    assert "removed the repository's history" in keeper.after_command()
    put_back = time.perf_counter() - start
    assert subprocess.run(["git", "rev-parse", "-q", "--verify", "main"], cwd=work, capture_output=True).returncode == 0
    shutil.rmtree(keeper.snapshot)
    return snapshot, look, put_back


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as temp:
        for loose in (False, True):
            repository = Path(temp, "loose" if loose else "packed")
            make_repository(repository, args.objects, loose)
            rounds = [one_round(repository, Path(temp, "state")) for _ in range(args.runs)]
            snapshot, look, put_back = (statistics.median(column) * 1000 for column in zip(*rounds))
            print(f"{args.objects:,} objects, {'loose' if loose else 'packed'}: snapshot {snapshot:.1f} ms, "
                  f"look after a command {look:.2f} ms, put back after rm -rf .git {put_back:.0f} ms")


if __name__ == "__main__":
    main()
