"""Benchmark: what the search for secret files (harness/commands/secret_search.py) costs, on a home folder of
200,000 entries made under a temp folder (HOME is never the real one: the walk is given the folder).

The home: 20,000 folders five down (~/work0/proj1/src2/mod3/), nine files in each, a few secrets among them, 4 to
8 folders down. Timed, each the median of --runs:
  - the shallow search at start (`hidden_paths`: what start-up pays, HOME_DEPTH folders down);
  - the whole walk in this process (`SecretSearch.walk`: what the child forked at start does meanwhile);
  - the whole walk in the child, from `start()` to its answer collected (`collect`), as the first command has it;
  - the refresh after each command (in a thread, while the model answers) with nothing changed (one stat a
    folder), and with one folder changed; and what a command started at once after another waits for it;
  - the Landlock ruleset built with what a home of 500 repositories hides (each its .env and .git/config).

  python bench/secret_search.py [--runs 5] [--entries 200000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.commands import secret_search  # noqa: E402
from harness.commands.landlock import Boundary, abi_version  # noqa: E402
from harness.commands.secret_search import SecretSearch, hidden_paths, places  # noqa: E402

SECRETS = ["work0/proj1/src2/.env", "work3/proj4/src5/mod6/.git/config", ".local/share/fish/fish_history",
           "work7/proj8/src9/mod0/certs/server.key", ".aws/credentials"]


def make_home(home: Path, n_entries: int) -> int:
    """Folders of nine files, five down, until `n_entries`; and the secrets. How many entries it holds."""
    n = 0
    for index in range(n_entries // 10):
        a, b, c, d = index // 1000, index // 100 % 10, index // 10 % 10, index % 10
        folder = home / f"work{a}" / f"proj{b}" / f"src{c}" / f"mod{d}"
        folder.mkdir(parents=True, exist_ok=True)
        for f in range(9):
            (folder / f"file{f}.py").touch()
        n += 10
    for name in SECRETS:
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text("x\n")
    return sum(1 for _ in home.rglob("*"))


def median_ms(run, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--entries", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        home, workspace, top = Path(temp, "home"), Path(temp, "project"), Path(temp, "system")
        workspace.mkdir()
        n_entries = make_home(home, args.entries)
        secret_search.TOP = top  # no other home, /srv or /etc but the temp folder's
        where = places(home, workspace)
        shallow = median_ms(lambda: hidden_paths(home, workspace, []), args.runs)
        whole = median_ms(lambda: SecretSearch(where).walk(), args.runs)

        def in_child() -> None:
            search = SecretSearch(where)
            search.start()
            assert search.collect(wait=60)

        child = median_ms(in_child, args.runs)
        search = SecretSearch(where)
        search.walk()
        assert len(search.outside()) == len(SECRETS), search.outside()
        refresh = median_ms(search.refresh, args.runs)
        made = home / "work9/proj9/src9/mod9/.env.local"

        def after_a_new_file() -> None:
            made.unlink(missing_ok=True)
            made.parent.touch()  # its folder's time changed: searched again
            search.refresh()

        changed = median_ms(after_a_new_file, args.runs)
        made.write_text("x\n")
        search.refresh()
        assert made in search.outside()

        def next_command_at_once() -> None:  # a reply with two commands: the second waits for the refresh
            search.refresh_later()
            search.settle()

        waited = median_ms(next_command_at_once, args.runs)
        repositories = Path(temp, "repositories")
        for index in range(500):
            repository = repositories / "work" / f"repo{index}"
            (repository / ".git").mkdir(parents=True)
            for name in [".git/config", ".env", *(f"f{n}.py" for n in range(20))]:
                (repository / name).write_text("x\n")
        many = SecretSearch(places(repositories, workspace))
        many.walk()
        boundary = Boundary(workspace, many.outside())
        ruleset = median_ms(lambda: os.close(boundary.build()), args.runs) if abi_version() else 0.0
        print(f"a home of {n_entries:,} entries ({len(search.folders):,} folders), medians of {args.runs}:")
        print(f"  at start, the shallow search ({secret_search.HOME_DEPTH} down): {shallow:.1f} ms")
        print(f"  the whole walk: {whole:.0f} ms in this process, {child:.0f} ms in the child until collected")
        print(f"  the refresh after each command: {refresh:.1f} ms with nothing changed, {changed:.1f} ms with a "
              f"folder changed; a command right after another waits {waited:.1f} ms for it, one after a reply none")
        print(f"  the ruleset with {len(many.outside()):,} files hidden in 500 repositories: {ruleset:.0f} ms (at the "
              "first command, and again when what is hidden changes)")


if __name__ == "__main__":
    main()
