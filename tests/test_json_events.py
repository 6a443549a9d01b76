"""-p --json (#34 item 7): stdout is JSON Lines, one event a line (the start, each call with its arguments, each
result with its status and output as the model saw it, each refusal, the answer, the tokens, the end with its
exit code), and nothing else; stderr is what a person sees without it. agent.py runs as a process against a
local endpoint on a real socket."""

import json
import os
import subprocess
import sys

from fake_endpoint import FakeEndpoint
from test_e2e import KEY, agent


def events(done) -> list[dict]:
    lines = done.stdout.splitlines()
    assert lines and done.stdout.endswith("\n"), done.stderr
    return [json.loads(line) for line in lines]  # every line is one JSON object: nothing else is on stdout


def test_a_run_is_its_events_in_order(install, project):
    script = ['tool: read_file({"path": "greet.py"})',
              'tool: edit_file({"path": "greet.py", "old_str": "Helo", "new_str": "Hello"})',
              'tool: run_command({"command": "exit 4"})',
              "Fixed the typo; the check exits 4."]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "fix it", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    got = events(done)
    assert [event["type"] for event in got] == ["start", "call", "result", "call", "result", "call", "result",
                                                "answer", "tokens", "end"]
    start = got[0]
    assert (start["model"], start["base_url"], start["workspace"], start["mode"]) == (
        "fake-model", endpoint.url, str(project), "yes")
    assert start["commands"] and not start["commands"].startswith("commands")  # what the walls let them do
    assert got[1] == {"type": "call", "tool": "read_file", "args": {"path": "greet.py"}}
    assert got[2]["status"] == "ok" and 'return "Helo, " + name' in got[2]["output"]
    assert got[4]["status"] == "ok" and got[6]["status"] == "failed"
    model_saw = endpoint.received[3].body["messages"][-1]["content"]
    assert got[6]["output"] in model_saw  # as the model was given it
    assert got[7] == {"type": "answer", "text": "Fixed the typo; the check exits 4."}
    assert got[8]["requests"] == 4 and got[8]["prompt"] > 0 and got[8]["completion"] > 0
    assert got[9] == {"type": "end", "exit_code": 0, "status": "done", "said": ""}
    assert "→ read_file(path=\"greet.py\")" in done.stderr  # a person still sees the activity on stderr
    assert KEY not in done.stdout + done.stderr


def test_what_nobody_could_approve_is_a_refusal_and_the_end_says_not_done(install, project):
    script = ['tool: edit_file({"path": "notes.md", "old_str": "", "new_str": "hi\\n"})', "Wrote notes.md."]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "write notes", "--json", stdin="")
    assert done.returncode == 3, done.stderr
    got = events(done)
    assert [event["type"] for event in got] == ["start", "call", "refusal", "result", "answer", "tokens", "end"]
    assert got[2]["tool"] == "edit_file" and got[2]["what"] == "create notes.md"
    assert got[2]["reason"].startswith("Nobody can be asked to approve it")
    assert got[3]["status"] == "error"
    assert got[-1]["exit_code"] == 3 and got[-1]["status"] == "not_done"
    assert got[-1]["said"].startswith("plainagent: not done as asked: create notes.md")
    assert not (project / "notes.md").exists()


def test_a_call_refused_before_it_ran_is_a_refusal(install, project):
    script = ['tool: run_command({"command": "ls"})', "I can only read."]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "list", "--json", "--mode", "read-only")
    got = events(done)
    assert [event["type"] for event in got] == ["start", "refusal", "answer", "tokens", "end"]
    assert got[1]["tool"] == "run_command" and "read-only" in got[1]["reason"]


def test_a_failed_request_ends_with_its_line(install, project):
    with FakeEndpoint([{"status": 401, "body": {"error": {"message": "bad key"}}}]) as endpoint:
        done = agent(install, project, endpoint, "-p", "hi", "--json")
    assert done.returncode == 1
    got = events(done)
    assert [event["type"] for event in got] == ["start", "tokens", "end"]
    assert got[-1]["status"] == "failed" and got[-1]["said"].startswith("plainagent: ") and "401" in got[-1]["said"]


def test_a_settings_error_is_an_end_event_alone(install, project):
    with FakeEndpoint([]) as endpoint:
        done = agent(install, project, endpoint, "-p", "hi", "--json", "--mode", "sloppy")
    assert done.returncode == 2
    assert events(done) == [{"type": "end", "exit_code": 2, "status": "usage", "said": "plainagent: --mode sloppy: not "
                             "a mode; use one of: ask, read-only, edits, yes."}]


def test_without_a_task_json_is_a_usage_error(install, project):
    done = subprocess.run([sys.executable, str(install / "agent.py"), "--json"], cwd=project, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 2 and done.stdout == ""
    assert "--json goes with -p TASK" in done.stderr


def test_the_key_is_in_no_event_whatever_field_holds_it(install, project):
    script = [f'tool: run_command({{"command": "echo {KEY}"}})', f"The key is {KEY}."]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "t", "--json", stdin="")  # refused: nobody to ask
    assert done.returncode == 3 and KEY not in done.stdout and KEY not in done.stderr
    got = events(done)
    assert got[1]["type"] == "call" and "[REDACTED]" in got[1]["args"]["command"]
    assert "[REDACTED]" in got[-1]["said"]


def test_each_event_is_one_line_for_any_reader(install, project):
    (project / "odd.txt").write_text("a\u2028b\u2029c\x85d\n")
    with FakeEndpoint(['tool: read_file({"path": "odd.txt"})', "Read."]) as endpoint:
        done = agent(install, project, endpoint, "-p", "t", "--json")
    assert len(done.stdout.splitlines()) == len(done.stdout.split("\n")) - 1  # str.splitlines sees no more lines
    assert events(done)[2]["output"] == "a\u2028b\u2029c\x85d"


def run_shell_line(install, project, redirect: str) -> subprocess.CompletedProcess:
    """agent.py -p --yes --json with its stdout given to the shell's `redirect`, against its own endpoint."""
    script = ['tool: run_command({"command": "echo one > one.txt"})', "Done."]
    with FakeEndpoint(script) as endpoint:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
        env |= {"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": KEY}
        done = subprocess.run(["bash", "-c", f"{sys.executable} {install / 'agent.py'} -p t --yes --json {redirect}"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=60)
        assert len(endpoint.received) == 2, done.stderr  # the run went on to its end
    assert "Traceback" not in done.stderr and (project / "one.txt").read_text() == "one\n"
    (project / "one.txt").unlink()
    return done


def test_a_reader_that_goes_away_stops_nothing_and_the_run_ends_as_a_closed_stdout_does(install, project):
    assert run_shell_line(install, project, "| head -c 1; exit ${PIPESTATUS[0]}").returncode == 1
    assert run_shell_line(install, project, "> /dev/full").returncode == 1
    assert run_shell_line(install, project, ">&-").returncode in (0, 1)  # no stdout at all: nothing to fail on


def test_a_command_the_deny_rules_refuse_is_a_refusal_too(install, project):
    with FakeEndpoint(['tool: run_command({"command": "git push --force"})', "Refused."]) as endpoint:
        done = agent(install, project, endpoint, "-p", "t", "--json", "--yes")
    got = events(done)
    assert [event["type"] for event in got] == ["start", "call", "refusal", "result", "answer", "tokens", "end"]
    assert got[2]["what"] == "git push --force" and got[2]["reason"].startswith("Refused by plainagent's guard rail")


def test_a_sub_agents_calls_are_shown_but_only_its_delegate_call_is_an_event(install, project):
    script = ['tool: delegate({"task": "read greet.py"})', 'tool: read_file({"path": "greet.py"})', "It greets.",
              "The sub-agent says it greets."]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "t", "--json")
    assert done.returncode == 0, done.stderr
    got = events(done)
    assert [(event["type"], event.get("tool")) for event in got[:3]] == [("start", None), ("call", "delegate"),
                                                                          ("result", "delegate")]
    assert '    → read_file(path="greet.py")' in done.stderr
