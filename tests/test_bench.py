"""The benchmarks keep to themselves: a run writes no transcript into the user's state directory. This runs
the smallest piece of each bench that starts the agent (one session, not the measurements); the benchmarks
themselves are scripts (python bench/NAME.py), never tests."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import session as session_bench  # noqa: E402
import tokens as tokens_bench  # noqa: E402


def test_the_benches_write_no_transcript_in_the_users_state_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert session_bench.one_session()["requests"] > 0
    run = tokens_bench.run_plainagent(tokens_bench.SESSIONS["big-module"], tokens_bench.ROOT, tokens_bench.estimate)
    assert run.files_right and len(run.requests) == len(tokens_bench.SESSIONS["big-module"].steps)
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("name", ["test-fix", "rename", "logs"])
def test_every_bench_session_ends_with_the_files_right_and_a_history_only_appended_to(name):
    """The token suite's sessions stay true to the agent: each scripted call still does what the session
    expects, and every request extends the one before (what providers' prompt caches need)."""
    session = tokens_bench.SESSIONS[name]
    run = tokens_bench.run_plainagent(session, tokens_bench.ROOT, tokens_bench.estimate)
    assert run.files_right and len(run.requests) == len(session.steps)
    assert run.measure()["append_only"] == f"{len(session.steps) - 1} of {len(session.steps) - 1}"
