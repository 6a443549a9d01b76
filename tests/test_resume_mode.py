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


# --- the model: a /model switch is said on resume the same way (#26), and leaving says how to come back ---


def test_a_session_switched_with_model_says_on_resume_which_model_it_goes_on_with(agent_home, project, tmp_path):
    """A /model switch was dropped without a word: like a /mode switch, it is recorded, and a resume that goes on
    with this run's model says so, with how to take the switch up again."""
    with FakeEndpoint(["Looked."]) as endpoint:
        first = agent_here(agent_home, project, endpoint, stdin="look around\n/model big-model\nexit\n")
    assert first.returncode == 0, first.stderr
    loaded = load(transcript_of(tmp_path))
    assert (loaded.model, loaded.model_switched) == ("big-model", True)
    with FakeEndpoint(["Done."]) as endpoint:
        again = agent_here(agent_home, project, endpoint, "--resume", "-p", "go on")
    assert again.returncode == 0, again.stderr
    assert ("This session had been switched to model big-model with /model; it goes on with model fake-model. "
            "To go on with big-model: --model big-model, or /model big-model in the REPL.") in again.stderr.splitlines()
    assert endpoint.received[0].body["model"] == "fake-model"
    assert (load(transcript_of(tmp_path)).model, load(transcript_of(tmp_path)).model_switched) == ("fake-model", False)


def test_a_session_resumed_with_the_model_it_switched_to_says_nothing_of_models(agent_home, project, tmp_path):
    with FakeEndpoint(["Looked."]) as endpoint:
        agent_here(agent_home, project, endpoint, stdin="look around\n/model big-model\n")
    with FakeEndpoint(["Done."]) as endpoint:
        again = agent_here(agent_home, project, endpoint, "--resume", "--model", "big-model", "-p", "go on")
    assert again.returncode == 0, again.stderr
    assert "model" not in again.stderr.split("Resumed ")[1].split("\n", 1)[1]
    assert endpoint.received[0].body["model"] == "big-model"


def test_leaving_the_repl_says_how_to_resume_the_session(agent_home, project, tmp_path):
    with FakeEndpoint(["Looked."]) as endpoint:
        done = agent_here(agent_home, project, endpoint, stdin="look around\n/exit\n")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == f"resume with: python agent.py --resume {transcript_of(tmp_path)}"


def test_leaving_a_repl_where_nothing_happened_says_nothing_of_resuming(agent_home, project):
    with FakeEndpoint([]) as endpoint:
        done = agent_here(agent_home, project, endpoint, stdin="/tokens\n")  # then Ctrl-D: stdin ends
    assert done.returncode == 0, done.stderr
    assert "resume with" not in done.stderr


def test_a_session_run_with_another_model_says_which_model_it_goes_on_with(agent_home, project):
    with FakeEndpoint(["Looked."]) as endpoint:
        agent_here(agent_home, project, endpoint, "--model", "big-model", "-p", "look around")
    with FakeEndpoint(["Done."]) as endpoint:
        again = agent_here(agent_home, project, endpoint, "--resume", "-p", "go on")
    assert ("This session ran with model big-model; it goes on with model fake-model. To go on with big-model: "
            "--model big-model, or /model big-model in the REPL.") in again.stderr.splitlines()
