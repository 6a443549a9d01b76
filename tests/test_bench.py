"""The benchmarks keep to themselves: a run writes no transcript into the user's state directory. This runs
the smallest piece of each bench that starts the agent (one session, not the measurements); the benchmarks
themselves are scripts (python bench/NAME.py), never tests: bench/tokens.py says itself when a session's
scripted calls no longer leave the files right or a request no longer extends the one before."""

import sys
from pathlib import Path

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

