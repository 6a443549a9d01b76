"""End to end: the sandbox's promises as a user meets them, main() (in_process.py) against a local server."""

from fake_endpoint import FakeEndpoint
from test_e2e_trust import agent_here, results_sent


def test_with_the_state_folder_in_the_workspace_the_session_is_not_searched(agent_home, tmp_path):
    """`-C ~`: the state folder (here tmp_path/state, conftest's XDG_STATE_HOME) is inside the workspace, and so
    is a --log transcript; the task's words are in both before the first tool runs."""
    script = ["Noted.", 'tool: search_files({"pattern": "zebra-42"})', "tool: list_files()", "Nothing found."]
    with FakeEndpoint(script) as endpoint:
        first = agent_here(agent_home, tmp_path, endpoint, "-C", str(tmp_path), "-p", "remember zebra-42")
        done = agent_here(agent_home, tmp_path, endpoint, "-C", str(tmp_path), "--log", "here.jsonl", "-p", "find zebra-42")
    assert first.returncode == 0 and done.returncode == 0, first.stderr + done.stderr
    assert [b"zebra-42" in path.read_bytes() for path in (tmp_path / "state/plainagent/sessions").iterdir()] == [True]
    assert b"zebra-42" in (tmp_path / "here.jsonl").read_bytes()
    search, listing = results_sent(endpoint, 2)[0]["output"], results_sent(endpoint, 3)[0]["output"]
    assert search.startswith("No matches for 'zebra-42' in . (") and "zebra-42" not in search.split("\n", 1)[0][20:]
    assert "here.jsonl (plainagent's own files: not read)" in search
    assert "here.jsonl  (plainagent's own files: not read)" in listing.splitlines()
    assert "state/plainagent/  (plainagent's own files: not read)" in listing.splitlines()
