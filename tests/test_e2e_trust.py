"""End to end: modes, guard rails and AGENTS.md as a user meets them, `python agent.py` against a local server."""

import json
import os
import signal
import subprocess
import sys

from fake_endpoint import FakeEndpoint, completion
from frames import read_results
from test_e2e import KEY
from test_e2e_sessions import start_agent


def agent(install, project, endpoint, *argv, stdin=None, extra_env=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
    env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": KEY, **(extra_env or {})})
    return subprocess.run([sys.executable, str(install / "agent.py"), *argv], cwd=project, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


def results_sent(endpoint, n: int) -> list[dict]:
    """The results in the last message of the n-th request the server received."""
    return read_results(endpoint.received[n].body["messages"][-1]["content"])


def test_read_only_offers_no_writing_tool_and_refuses_one_anyway(install, project):
    script = ['tool: edit_file({"path": "greet.py", "old_str": "Helo", "new_str": "Hello"})', "I may not edit."]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "fix the typo", "--mode", "read-only")
    assert done.returncode == 0 and done.stdout == "I may not edit.\n"
    system = endpoint.received[0].body["messages"][0]["content"]
    assert "read_file(" in system and "edit_file(" not in system and "run_command(" not in system
    assert results_sent(endpoint, 1)[0]["output"].startswith("This session is read-only: ")
    assert (project / "greet.py").read_bytes() == b'def greet(name):\r\n    return "Helo, " + name\r\n'


def test_edits_mode_applies_an_edit_but_asks_before_a_command(install, project):
    script = ['tool: edit_file({"path": "greet.py", "old_str": "Helo", "new_str": "Hello"})',
              'tool: run_command({"command": "python -m pytest -q"})', "Edited; the tests were not run."]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "fix and test", "--mode", "edits", stdin="")
    assert done.returncode == 0, done.stderr
    assert (project / "greet.py").read_bytes() == b'def greet(name):\r\n    return "Hello, " + name\r\n'
    assert "Edit greet.py:\n" in done.stderr and "(applied without asking: --mode edits)" in done.stderr
    command = results_sent(endpoint, 2)[0]
    assert not command["ok"] and "stdin is not a terminal" in command["output"]  # it was asked; nobody answered


def test_deny_rules_hold_in_yes_mode_and_plainagent_deny_adds_rules(install, project):
    script = ['tool: run_command({"command": "touch one; sudo true"})',
              'tool: run_command({"command": "npm publish --dry-run"})', "Both refused."]
    env = {"PLAINAGENT_DENY": "npm publish; terraform destroy"}
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "release it", "--yes", extra_env=env)
    assert done.returncode == 0, done.stderr
    assert results_sent(endpoint, 1)[0]["output"].startswith(
        "Refused by plainagent's guard rail: sudo (running as root: sudo, doas, su, pkexec). ")
    assert results_sent(endpoint, 2)[0]["output"].startswith(
        "Refused by plainagent's guard rail: the PLAINAGENT_DENY rule \"npm publish\". ")
    assert not (project / "one").exists()


def test_an_agents_md_rule_reaches_the_model_and_the_banner_names_the_file(install, project):
    (project / "AGENTS.md").write_text("Always use tabs for indentation.\n")
    with FakeEndpoint(["Noted: tabs."]) as endpoint:
        done = agent(install, project, endpoint, "-p", "hi")
        repl = agent(install, project, endpoint, stdin="", extra_env={"PLAINAGENT_MODE": "edits"})
    system = endpoint.received[0].body["messages"][0]["content"]
    assert system.endswith("# Instructions from AGENTS.md in the workspace root\n\nStanding instructions for this "
                           "work; follow them unless the user says otherwise.\n\nAlways use tabs for indentation.\n")
    assert done.returncode == 0 and repl.returncode == 0
    banner = repl.stderr.splitlines()
    assert banner[0].endswith(", mode edits (applies edits without asking, asks before commands)")
    assert banner[1] == "Instructions from AGENTS.md"
    assert banner[2].startswith("Type a task") and "/help lists the commands" in banner[2]
    assert json.dumps(endpoint.received[0].body).count("Always use tabs") == 1


def test_ctrl_c_during_a_sub_agent_stops_it_and_the_parent_answers(install, project):
    script = ['tool: delegate({"task": "survey the code"})', "tool: list_files()",
              {"body": completion("never seen"), "hold": True}, "The survey was interrupted."]
    with FakeEndpoint(script) as endpoint:
        process = start_agent(install, project, endpoint, "-p", "survey", "--yes")
        endpoint.wait_for_requests(3)  # the sub-agent waits for its second reply
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert stdout == "The survey was interrupted.\n"
    assert results_sent(endpoint, 3) == [{"tool": "delegate", "ok": False, "output": (
        "The user interrupted the sub-agent (Ctrl-C) before it answered. Ask the user how to go on before "
        "delegating again.")}]
    assert "    → list_files()\n" in stderr and "Traceback" not in stderr


def test_a_long_agents_md_in_a_small_budget_is_warned_about(install, project):
    (project / "AGENTS.md").write_text("Keep every function short and name it with a verb.\n" * 150)
    with FakeEndpoint(["ok"]) as endpoint:
        done = agent(install, project, endpoint, "-p", "hi", "--context-tokens", "8000")
    assert done.returncode == 0
    assert "plainagent: the system prompt with AGENTS.md takes about 3," in done.stderr
    assert "of the 8,000-token context budget; shorten it, or raise --context-tokens.\n" in done.stderr
