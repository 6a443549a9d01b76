"""The delegate tool: a sub-agent runs the same loop in a fresh conversation that only reads, driven here by a
scripted model on real files; only its answer reaches the parent's history."""

import json

import pytest
from frames import read_results
from test_agent import ScriptedModel

from agent import SUBAGENT_MAX_STEPS, build_session
from harness.cli.config import Config
from harness.files.workspace import Workspace
from harness.history.transcript import Transcript, load
from harness.modes.permissions import SUBAGENT_READS
from prompt import SUBAGENT_TASK
from tools import SUBAGENT_ANSWER_MAX, run_tool

DELEGATE = 'tool: delegate({"task": "Where is the greeting spelt?"})'


@pytest.fixture
def project(tmp_path):
    for n in range(10):
        (tmp_path / f"m{n}.py").write_text(f"# module {n}\nBODY_{n} = {n}\n")
    (tmp_path / "m7.py").write_text('GREETING = "Helo"\n')
    return tmp_path


def make_session(root, *replies, transcript=None):
    model = ScriptedModel(*replies)
    session = build_session(Config(model="m"), model, Workspace(root), transcript=transcript or Transcript())
    return session, model


def test_a_sub_agent_reads_ten_files_and_the_parent_sees_only_its_answer(project, capsys):
    reads = [f'tool: read_file({{"path": "m{n}.py"}})' for n in range(10)]
    session, model = make_session(project, DELEGATE, "tool: list_files()", "\n".join(reads[:5]), "\n".join(reads[5:]),
                                  "m7.py line 1: GREETING = \"Helo\".", "It is in m7.py.")
    assert session.run("find the greeting") == "It is in m7.py."
    sub_first, parent_last = model.seen[1], model.seen[-1]
    # the sub-agent: a fresh conversation, its own prompt with the reading tools but delegate
    assert [m["role"] for m in sub_first] == ["system", "user"]
    assert sub_first[1]["content"] == SUBAGENT_TASK.format(task="Where is the greeting spelt?")
    assert "read_file(" in sub_first[0]["content"] and "search_files(" in sub_first[0]["content"]
    assert "delegate(" not in sub_first[0]["content"] and "edit_file(" not in sub_first[0]["content"]
    # the parent: its next request holds the delegate call and the one answer, nothing the sub-agent read
    assert [m["role"] for m in parent_last] == ["system", "user", "assistant", "user"]
    assert read_results(parent_last[3]["content"]) == [
        {"tool": "delegate", "ok": True, "output": 'm7.py line 1: GREETING = "Helo".'}]
    assert "BODY_" not in json.dumps(parent_last)
    assert session.model.tokens == {"prompt_tokens": 600, "completion_tokens": 60}  # the sub-agent's four calls too
    err = capsys.readouterr().err
    assert '→ delegate(task="Where is the greeting spelt?")\n    → list_files()\n' in err
    assert '    → read_file(path="m9.py")\n' in err and '  ok: m7.py line 1: GREETING = "Helo".\n' in err


def test_a_sub_agent_at_its_step_limit_gives_the_parent_an_error_to_act_on(project):
    loop = [f'tool: read_file({{"path": "m{n}.py"}})' for n in range(SUBAGENT_MAX_STEPS)]
    session, model = make_session(project, DELEGATE, *loop, "I will read it myself.")
    assert session.run("go") == "I will read it myself."
    assert read_results(session.history.messages[3]["content"]) == [{"tool": "delegate", "ok": False, "output": (
        "The sub-agent ended without an answer: Stopped after 10 model call(s). Give it a narrower task, or read "
        "the files yourself.")}]
    assert len(model.seen) == 1 + SUBAGENT_MAX_STEPS + 1


class InterruptedModel(ScriptedModel):
    """Ctrl-C arrives while the sub-agent waits for its second reply."""

    def chat(self, messages):
        if len(self.seen) == 2:
            self.seen.append(messages)
            raise KeyboardInterrupt
        return super().chat(messages)


def test_ctrl_c_stops_the_sub_agent_and_the_parent_gets_an_interrupted_result(project):
    model = InterruptedModel(DELEGATE, "tool: list_files()", "Stopped, as you asked.")
    session = build_session(Config(model="m"), model, Workspace(project))
    assert session.run("go") == "Stopped, as you asked."
    assert read_results(session.history.messages[3]["content"]) == [{"tool": "delegate", "ok": False, "output": (
        "The user interrupted the sub-agent (Ctrl-C) before it answered. Ask the user how to go on before "
        "delegating again.")}]


@pytest.mark.parametrize("call, name", [
    (DELEGATE, "delegate"),
    ('tool: edit_file({"path": "m1.py", "old_str": "", "new_str": "x"})', "edit_file"),
    ('tool: run_command({"command": "touch ran"})', "run_command"),
])
def test_a_sub_agent_cannot_start_sub_agents_write_or_run(project, call, name):
    session, model = make_session(project, DELEGATE, call, "nothing to add", "done")
    session.run("go")
    assert read_results(model.seen[2][3]["content"]) == [{"tool": name, "ok": False,
                                                         "output": SUBAGENT_READS.format(name=name)}]
    assert not (project / "ran").exists() and (project / "m1.py").read_text() == "# module 1\nBODY_1 = 1\n"


def test_a_long_answer_is_cut_before_it_reaches_the_parent(project):
    session, _ = make_session(project, DELEGATE, "x" * (SUBAGENT_ANSWER_MAX + 123), "done")
    session.run("go")
    output = read_results(session.history.messages[3]["content"])[0]["output"]
    assert output == "x" * SUBAGENT_ANSWER_MAX + "\n[answer cut: 123 more characters]"


def test_the_sub_agents_messages_are_in_the_transcript_marked_and_stay_out_of_a_resume(project, tmp_path):
    path = tmp_path / "session.jsonl"
    transcript = Transcript.create(path, {"model": "m"}, explicit=True)
    session, _ = make_session(project, DELEGATE, "tool: list_files()", "In m7.py.", "It is in m7.py.",
                              transcript=transcript)
    session.run("go")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    sub_messages = [line["message"] for line in lines if line["type"] == "subagent" and line["event"] == "message"]
    assert [m["role"] for m in sub_messages] == ["system", "user", "assistant", "user", "assistant"]
    assert sub_messages[-1]["content"] == "In m7.py."
    assert load(path).messages == session.history.messages[1:]


def test_delegate_with_no_session_behind_it_says_so(tmp_path):
    assert run_tool(Workspace(tmp_path), "delegate", {"task": "x"}).output == (
        "A sub-agent cannot start sub-agents; read the files yourself.")


def test_an_empty_task_is_refused_without_a_model_call(project):
    session, model = make_session(project, 'tool: delegate({"task": "  "})', "ok")
    session.run("go")
    assert read_results(session.history.messages[3]["content"])[0]["output"] == (
        'task is empty: say what the sub-agent should find out, e.g. "Where is the config read?"')
    assert len(model.seen) == 2
