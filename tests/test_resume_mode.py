"""--resume and the mode (#17 item 9): a session switched with /mode is not quietly taken up in another mode.
It goes on in the mode this run was given (a /mode switch is never a standing permission), and says so: one
line for the user, with how to switch back, and a note for the model, whose history says otherwise."""

from fake_endpoint import FakeEndpoint
from test_e2e import agent_here

from harness.history.transcript import load


def transcript_of(tmp_path):
    (path,) = (tmp_path / "state" / "plainagent" / "sessions").glob("*.jsonl")
    return path


def test_a_session_switched_with_mode_says_on_resume_that_it_goes_on_in_this_runs_mode(agent_home, project, tmp_path):
    with FakeEndpoint(["Looked."]) as endpoint:
        first = agent_here(agent_home, project, endpoint, stdin="look around\n/mode edits\nexit\n")
    assert first.returncode == 0, first.stderr
    loaded = load(transcript_of(tmp_path))
    assert (loaded.mode, loaded.switched) == ("edits", True)
    with FakeEndpoint(["Done."]) as endpoint:
        again = agent_here(agent_home, project, endpoint, "--resume", "-p", "go on")
    assert again.returncode == 0, again.stderr
    assert ("This session had been switched to mode edits with /mode; it goes on in mode ask (asks before each "
            "write and command). To go on in mode edits: --mode edits, or /mode edits in the REPL."
            ) in again.stderr.splitlines()
    sent = endpoint.received[0].body["messages"]
    assert sent[-1] == {"role": "user", "content": "(This session goes on in mode ask: it asks before each write "
                                                   "and command.)\n\ngo on"}
    loaded = load(transcript_of(tmp_path))
    assert (loaded.mode, loaded.switched) == ("ask", False)  # this run's, for the next resume


def test_a_session_resumed_in_its_own_mode_says_nothing_of_modes(agent_home, project, tmp_path):
    with FakeEndpoint(["Looked."]) as endpoint:
        agent_here(agent_home, project, endpoint, "--mode", "read-only", stdin="look around\n/mode edits\n/mode read-only\n")
    with FakeEndpoint(["Done."]) as endpoint:
        again = agent_here(agent_home, project, endpoint, "--resume", "--mode", "read-only", "-p", "go on")
    assert again.returncode == 0, again.stderr
    assert "mode" not in again.stderr.split("Resumed ")[1]
    assert endpoint.received[0].body["messages"][-1]["content"] == "go on"


def test_a_session_run_with_yes_and_resumed_without_says_which_mode_it_is_in(agent_home, project, tmp_path):
    with FakeEndpoint(["Looked."]) as endpoint:
        agent_here(agent_home, project, endpoint, "--yes", "-p", "look around")
    with FakeEndpoint(["Done."]) as endpoint:
        again = agent_here(agent_home, project, endpoint, "--resume", "-p", "go on")
    assert ("This session ran in mode yes; it goes on in mode ask (asks before each write and command)."
            in again.stderr.splitlines())
