"""With nobody to ask (no terminal: a script, cron, CI), a write or command that needs approval is refused,
and the run says the task was not done as asked: exit code 3 and a line naming what was refused, whatever
the model's answer claims (#17 item 6)."""

from fake_endpoint import FakeEndpoint
from test_e2e import agent, agent_here

CREATE_NOTES = 'tool: edit_file({"path": "notes.md", "old_str": "", "new_str": "hello\\n"})'
MAKE = 'tool: run_command({"command": "make deploy"})'
NOT_DONE = ("plainagent: not done as asked: create notes.md; run make deploy needed approval, and nobody could be "
            "asked (no terminal). Run plainagent at a terminal to be asked, or with --yes to allow what it asks "
            "about.")


def test_a_task_piped_in_without_a_terminal_whose_write_was_refused_exits_3(install, project):
    with FakeEndpoint([CREATE_NOTES, MAKE, "Done: notes.md is written and deployed."]) as endpoint:
        done = agent(install, project, endpoint, "-p", "-", stdin="write notes, then deploy\n")
    assert done.returncode == 3, done.stderr
    assert done.stdout == "Done: notes.md is written and deployed.\n"  # the answer is printed; the code says it is not
    assert done.stderr.splitlines()[-1] == NOT_DONE
    assert not (project / "notes.md").exists()


def test_a_task_that_needed_no_approval_exits_0(agent_home, project):
    with FakeEndpoint(['tool: read_file({"path": "greet.py"})', "It greets."]) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "-", stdin="what does greet.py do?")
    assert done.returncode == 0 and "not done as asked" not in done.stderr


def test_in_a_repl_fed_by_a_script_each_task_says_it_for_itself(agent_home, project):
    with FakeEndpoint([CREATE_NOTES, "Could not write it.", "Hello."]) as endpoint:
        done = agent_here(agent_home, project, endpoint, stdin="write notes\nsay hello\n")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "not done as asked" in line]
    assert said == [NOT_DONE.replace("; run make deploy", "")]  # once: the second task needed nothing
    assert done.stdout == "Could not write it.\nHello.\n"
