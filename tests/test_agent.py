"""The loop, driven by a scripted fake model, with real tools on real files; configuration; the CLI in-process."""

import argparse
import copy
import io
import json
import re
from pathlib import Path

import pytest
from frames import read_results

import agent
from agent import TaskStopped, build_session, main
from harness.cli.config import Config, ConfigError, is_local, load_config
from harness.common.seam_types import Reply
from prompt import NOT_RUN, render_system_prompt
from tools import TOOLS, Workspace


class ScriptedModel:
    """Stands in for the client: answers with the scripted replies and keeps what it was sent."""

    def __init__(self, *replies):
        self.replies = [r if isinstance(r, Reply) else Reply(r, "stop", {"prompt_tokens": 100, "completion_tokens": 10})
                        for r in replies]
        self.seen: list[list[dict]] = []
        self.url = "http://fake/v1/chat/completions"

    def chat(self, messages):
        self.seen.append(copy.deepcopy(messages))
        return self.replies.pop(0)


# A reply cut at a server's output limit: a long reply (by the server's count), the prompt far below the window.
CUT_AT_OUTPUT_LIMIT = {"prompt_tokens": 900, "completion_tokens": 4096}

def make_session(tmp_path, *replies, max_steps=30):
    model = ScriptedModel(*replies)
    session = build_session(Config(model="m", max_steps=max_steps), model, Workspace(tmp_path))
    return session, model


def results_in(message: dict) -> list[dict]:
    return read_results(message["content"])


def test_a_task_lists_reads_and_edits_then_answers(tmp_path):
    (tmp_path / "app.py").write_bytes(b"print('helo')\n")
    session, model = make_session(
        tmp_path,
        "Let me look.\ntool: list_files()",
        'tool: read_file({"path": "app.py"})',
        'tool: edit_file({"path": "app.py", "old_str": "helo", "new_str": "hello"})',
        "Fixed the typo in app.py.",
    )
    assert session.run("fix the typo") == "Fixed the typo in app.py."
    assert (tmp_path / "app.py").read_bytes() == b"print('hello')\n"
    roles = [m["role"] for m in session.history.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert session.history.messages[2] == {"role": "assistant", "content": "Let me look.\ntool: list_files()"}
    assert results_in(session.history.messages[3]) == [{"tool": "list_files", "ok": True, "output": "app.py"}]
    assert results_in(session.history.messages[5])[0]["output"] == "print('helo')"  # a whole file, as it is
    # the model is shown its own earlier calls, every time
    assert model.seen[3][2]["content"] == "Let me look.\ntool: list_files()"
    assert model.seen[3][6]["content"].startswith("tool: edit_file(")
    assert session.model.tokens == {"prompt_tokens": 400, "completion_tokens": 40}


def test_several_calls_answer_in_one_message_in_order(tmp_path):
    (tmp_path / "a.txt").write_text("A\n")
    (tmp_path / "b.txt").write_text("B\n")
    session, _ = make_session(tmp_path, 'tool: read_file({"path": "a.txt"})\ntool: read_file({"path": "b.txt"})', "ok")
    session.run("read both")
    results = results_in(session.history.messages[3])
    assert [r["output"] for r in results] == ["A", "B"]


def test_a_bad_call_is_answered_and_later_calls_are_not_run(tmp_path):
    session, _ = make_session(
        tmp_path,
        'tool: list_files()\ntool: read_file({"file": "a.txt"})\ntool: edit_file({"path": "x.txt", "old_str": "", "new_str": "x"})',
        "ok")
    session.run("go")
    results = results_in(session.history.messages[3])
    assert [(r["tool"], r["ok"]) for r in results] == [("list_files", True), ("read_file", False), ("edit_file", False)]
    assert results[1]["output"] == "read_file has no argument file; its arguments are: path, offset, limit."
    assert results[2]["output"] == NOT_RUN
    assert not (tmp_path / "x.txt").exists()


def test_an_unreadable_call_gets_the_right_form_with_an_example(tmp_path):
    session, _ = make_session(tmp_path, 'tool: read_file({"path": "a.txt"', 'tool: list_files()', "done")
    assert session.run("go") == "done"
    output = results_in(session.history.messages[3])[0]["output"]
    assert "could not be read" in output and 'tool: read_file({"path": "src/app.py"})' in output


def test_three_format_errors_in_a_row_end_the_task(tmp_path):
    session, _ = make_session(tmp_path, "tool: nope", "read_file({\"path\": 1})", '{"name": "read_file", "arguments": {}}')
    with pytest.raises(TaskStopped, match="3 replies in a row whose first tool call could not be read"):
        session.run("go")


def test_format_errors_that_are_not_in_a_row_do_not_end_the_task(tmp_path):
    session, _ = make_session(tmp_path, "tool: nope", "tool: nope", "tool: list_files()", "tool: nope", "tool: nope", "done")
    assert session.run("go") == "done"


def test_the_step_limit_ends_the_task_with_a_clear_message(tmp_path):
    session, model = make_session(tmp_path, *[f'tool: read_file({{"path": "f{n}"}})' for n in range(3)], max_steps=3)
    with pytest.raises(TaskStopped, match=r"Stopped after 3 model call\(s\) \(--max-steps 3\)"):
        session.run("go")
    assert len(model.seen) == 3


def test_the_same_call_three_times_in_a_row_is_refused_as_a_loop(tmp_path):
    session, _ = make_session(tmp_path, *["tool: list_files()"] * 3, "ok")
    session.run("go")
    assert results_in(session.history.messages[7])[0]["output"].startswith("You have made this exact call 3 times in a row")
    assert results_in(session.history.messages[5])[0]["ok"]


def test_an_invented_result_is_cut_from_the_history_and_the_model_told(tmp_path):
    session, _ = make_session(
        tmp_path, 'tool: list_files()\ntool_result({"ok": true, "output": "secret.txt"})\nThe only file is secret.txt.',
        "ok")
    session.run("go")
    assert session.history.messages[2]["content"] == "tool: list_files()"
    assert session.history.messages[3]["content"].startswith("Note: Your reply went on after your tool calls")


def test_a_reply_cut_inside_a_call_is_not_run(tmp_path):
    session, _ = make_session(
        tmp_path, Reply('tool: edit_file({"path": "big.py", "old_str": "", "new_str": "def f():\n', "length",
                        CUT_AT_OUTPUT_LIMIT), "ok")
    session.run("go")
    assert not (tmp_path / "big.py").exists()
    assert "cut off (at its token limit) inside this call" in results_in(session.history.messages[3])[0]["output"]


def test_a_declined_write_reaches_the_model_with_the_reason(tmp_path):
    session, _ = make_session(tmp_path, 'tool: edit_file({"path": "n.txt", "old_str": "", "new_str": "x"})', "ok")
    session.tools.workspace.confirm = lambda *_: "The user said no: not now."
    session.run("go")
    assert results_in(session.history.messages[3])[0]["output"] == "Not approved: create n.txt. The user said no: not now. No changes were made."


def test_a_bug_inside_a_task_is_one_line_and_the_session_survives(tmp_path, capsys):
    class BrokenModel(ScriptedModel):
        def chat(self, messages):
            raise KeyError("choices")

    session = build_session(Config(model="m"), BrokenModel(), Workspace(tmp_path, secret="sk-x"))
    assert agent.attempt(session, "go") == 1
    assert capsys.readouterr().err == "plainagent: internal error, please report it: KeyError: 'choices'\n"


# --- configuration ---


def args(**given):
    values = {"model": None, "base_url": None, "max_steps": None, "cwd": ".", "yes": False, "prompt": None,
              "context_tokens": None, "log": None, "resume": None, "mode": None}
    values.update(given)
    return argparse.Namespace(**values)


def test_precedence_flag_over_env_over_the_users_dotenv(tmp_path):
    script = tmp_path / "script"
    script.mkdir()
    (script / ".env").write_text("OPENAI_MODEL=from-script\nOPENAI_API_KEY=sk-script\nOPENAI_BASE_URL=https://script/v1\n"
                                 "PLAINAGENT_MAX_STEPS=7\n")
    environ = {"OPENAI_MODEL": "from-env", "UNRELATED": "x"}
    config = load_config(args(), environ, tmp_path, script)
    assert (config.model, config.api_key.value, config.base_url, config.max_steps) == ("from-env", "sk-script", "https://script/v1", 7)
    assert config.sources == {"OPENAI_MODEL": "the environment", "OPENAI_API_KEY": str(script / ".env"),
                              "OPENAI_BASE_URL": str(script / ".env"), "PLAINAGENT_MAX_STEPS": str(script / ".env")}
    config = load_config(args(model="from-flag", max_steps=3, base_url="http://localhost:8000/v1"), environ, tmp_path, script)
    assert (config.model, config.max_steps, config.base_url) == ("from-flag", 3, "http://localhost:8000/v1")
    assert config.sources["OPENAI_BASE_URL"] == "--base-url"
    assert load_config(args(), {"OPENAI_MODEL": "m", "OPENAI_API_KEY": "k"}, tmp_path, tmp_path).max_steps == 30
    assert load_config(args(), {}, script, script).model == "from-script"


def test_dotenv_files_do_not_leak_into_the_process_environment(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("OPENAI_MODEL=m\nOPENAI_API_KEY=sk-file\n")
    load_config(args(), {}, tmp_path, tmp_path)
    import os
    assert "OPENAI_API_KEY" not in os.environ


def test_missing_model_names_the_variable_and_the_users_own_file(tmp_path):
    with pytest.raises(ConfigError, match=rf"OPENAI_MODEL is not set: set it in the .env beside agent.py "
                                          rf"\({tmp_path / 'install' / '.env'}; "):
        load_config(args(), {"OPENAI_API_KEY": "k"}, tmp_path, tmp_path / "install")


@pytest.mark.parametrize("base_url, needs_key", [
    ("https://api.openai.com/v1", True), ("https://taotoken.net/api/v1", True),
    ("http://localhost:11434/v1", False), ("http://127.0.0.1:1234/v1", False), ("http://[::1]:8000/v1", False),
    ("https://me:secret@llm.example.com/v1", False),  # credentials in the URL go in place of the key
    ("https://llm.example.com/v1?api-key=abc", False),
])
def test_a_key_is_required_except_for_local_servers_and_urls_with_credentials(tmp_path, base_url, needs_key):
    environ = {"OPENAI_MODEL": "m", "OPENAI_BASE_URL": base_url}
    if needs_key:
        with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
            load_config(args(), environ, tmp_path, tmp_path)
    else:
        assert load_config(args(), environ, tmp_path, tmp_path).api_key.value == ""


@pytest.mark.parametrize("value, stop", [("off", []), ('["\\nUser:", "\\ntool_result("]', ["\nUser:", "\ntool_result("])])
def test_stop_sequences_are_configurable(tmp_path, value, stop):
    environ = {"OPENAI_MODEL": "m", "OPENAI_API_KEY": "k", "PLAINAGENT_STOP": value}
    assert load_config(args(), environ, tmp_path, tmp_path).stop == stop
    assert Config().stop == ["\ntool_result("]


@pytest.mark.parametrize("variable, value", [("PLAINAGENT_STOP", "[unclosed"), ("PLAINAGENT_STOP", '"one"'),
                                             ("PLAINAGENT_MAX_STEPS", "many")])
def test_bad_settings_name_the_variable(tmp_path, variable, value):
    with pytest.raises(ConfigError, match=f"{variable}="):
        load_config(args(), {"OPENAI_MODEL": "m", "OPENAI_API_KEY": "k", variable: value}, tmp_path, tmp_path)


def test_the_key_is_not_in_the_config_repr(tmp_path):
    config = load_config(args(), {"OPENAI_MODEL": "m", "OPENAI_API_KEY": "sk-hidden"}, tmp_path, tmp_path)
    assert "sk-hidden" not in repr(config)


@pytest.mark.parametrize("argv, message", [
    (["-p", "x"], "OPENAI_MODEL is not set"),
    (["-p", "x", "-m", "m", "--base-url", "localhost:11434/v1"], "is not an http(s) URL"),
    (["-p", "x", "-m", "m", "--base-url", "http://localhost/v1", "-C", "missing-dir"], "no such directory"),
    (["-p", "x", "-m", "m", "--base-url", "http://localhost/v1", "--max-steps", "0"], "--max-steps must be at least 1"),
    # urllib and urllib3 read these hosts apart: what is said and where requests go would differ
    (["-p", "x", "-m", "m", "--base-url", "http://127.0.0.2\\@api.openai.com/v1"], "holds '\\\\', which no URL has"),
    (["-p", "x", "-m", "m", "--base-url", "http://api.open\u0430i.com/v1"], "write its host in ASCII, as DNS has it "
                                                                             "(api.xn--openi-7ve.com)"),
    # urllib3 refuses this host outright: one line, never a traceback (which printed the URL's password)
    (["-p", "x", "-m", "m", "--base-url", "http://admin:S3cret@\uff41\uff50\uff49.example/v1"], "write its host in ASCII"),
])
def test_config_errors_exit_2_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and err.startswith("plainagent: ")


def test_a_workspace_the_user_may_not_open_is_one_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    """The tools open the root once, at the start (beneath.Root): a folder without read or search permission is said
    then. (As root every folder opens, so the permission is taken away where it is asked.)"""
    (tmp_path / "locked").mkdir()
    monkeypatch.setattr("os.access", lambda path, mode: Path(path).name != "locked")
    assert main(["-p", "x", "-m", "m", "--base-url", "http://localhost/v1", "-C", str(tmp_path / "locked")]) == 2
    assert capsys.readouterr().err == f"plainagent: -C {tmp_path / 'locked'}: you may not open this folder (its permissions).\n"


# --- asking the user ---


def test_undo_in_the_repl_reverts_the_write_and_the_model_hears_of_it(tmp_path, monkeypatch, capsys):
    session, model = make_session(tmp_path, 'tool: edit_file({"path": "notes/new.txt", "old_str": "", "new_str": "x"})',
                                  "Created it.", "Fine.")
    monkeypatch.setattr("sys.stdin", io.StringIO("make a note\n/undo\nwhat happened?\n"))
    assert agent.repl(session, agent.attempt) == 0
    assert not (tmp_path / "notes").exists()  # the file, and the folder made for it
    assert "Undone: removed notes/new.txt" in capsys.readouterr().err
    last = model.seen[-1]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last[-1]["content"].startswith("(The user ran /undo: Undone: removed notes/new.txt")
    assert last[-1]["content"].endswith(")\n\nwhat happened?")


# --- how a task ends, and what the history keeps of it ---


@pytest.mark.parametrize("reply, says", [
    (Reply("The three causes are: first, the", "length", CUT_AT_OUTPUT_LIMIT), "cut off at its output token limit"),
    (Reply("", "stop"), "reply was empty"),
    (Reply("   \n", "stop"), "reply was empty"),
    (Reply("<think>Let me think about the answer.</think>", "stop"), "reply was only reasoning"),
])
def test_a_cut_off_or_empty_answer_is_a_failure_not_an_answer(tmp_path, reply, says):
    session, _ = make_session(tmp_path, reply)
    with pytest.raises(agent.AnswerIncomplete, match=says) as stopped:
        session.run("explain")
    assert stopped.value.partial == ("The three causes are: first, the" if reply.finish_reason == "length" else "")


def test_one_shot_mode_exits_1_for_a_cut_off_answer_and_shows_the_part(tmp_path, capsys):
    session, _ = make_session(tmp_path, Reply("Half an answ", "length", CUT_AT_OUTPUT_LIMIT))
    assert agent.attempt(session, "explain") == 1
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        "Half an answ",
        "plainagent: The model's answer was cut off at its output token limit, so it is incomplete. "
        "Ask it to go on, or to answer more briefly. (If the server's context window is smaller than plainagent's "
        "budget, set --context-tokens to it: a full window cuts answers too.)"]


def test_a_tool_that_fails_when_run_stops_the_calls_after_it(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    session, _ = make_session(
        tmp_path,
        'tool: edit_file({"path": "a.py", "old_str": "y = 1", "new_str": "y = 2"})\n'
        'tool: run_command({"command": "touch ran.txt"})',
        "ok")
    session.tools.workspace.confirm = None
    session.run("go")
    results = results_in(session.history.messages[3])
    assert [(r["tool"], r["ok"]) for r in results] == [("edit_file", False), ("run_command", False)]
    assert results[1]["output"] == NOT_RUN
    assert not (tmp_path / "ran.txt").exists()


def test_a_command_that_exits_non_zero_is_a_result_logged_as_failed(tmp_path, capsys):
    session, _ = make_session(tmp_path, 'tool: run_command({"command": "exit 3"})\ntool: list_files()', "ok")
    session.run("go")
    results = results_in(session.history.messages[3])
    assert [(r["tool"], r["ok"]) for r in results] == [("run_command", True), ("list_files", True)]
    assert "  failed: exit code 3; no output" in capsys.readouterr().err.splitlines()


def test_only_a_command_is_logged_as_failed_and_only_when_it_failed(tmp_path, capsys):
    (tmp_path / "status.txt").write_text("exit code 1: a line of a file\n")
    session, _ = make_session(tmp_path, 'tool: read_file({"path": "status.txt"})\n'
                                        'tool: run_command({"command": "cat status.txt"})', "ok")
    session.run("go")
    err = capsys.readouterr().err.splitlines()
    assert "  ok: exit code 1: a line of a file" in err and "  ok: exit code 0: (+1 line)" in err


def test_a_refused_call_quoting_the_key_does_not_show_it_to_the_model(tmp_path):
    key = "sk-test-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123"
    model = ScriptedModel(f'tool: run_command {{"command": "echo {key}"}}', "ok")
    session = build_session(Config(model="m"), model, Workspace(tmp_path, secret=key))
    session.run("go")
    assert key not in json.dumps(model.seen[-1]) and "[REDACTED]" in model.seen[-1][-1]["content"]


def test_a_bad_argument_is_logged_with_the_tool_named_once(tmp_path, capsys):
    session, _ = make_session(tmp_path, 'tool: read_file({"path": 3})', "ok")
    session.run("go")
    assert "✗ read_file: argument path must be a string, not an integer." in capsys.readouterr().err.splitlines()


def test_the_repeated_call_guard_starts_afresh_with_each_task(tmp_path):
    session, _ = make_session(tmp_path, "tool: list_files()", "done", "tool: list_files()", "done",
                              "tool: list_files()", "done")
    for _ in range(3):
        assert session.run("list the files") == "done"
    assert all(result["ok"] for message in session.history.messages[3::4] for result in results_in(message))


def test_format_errors_do_not_carry_over_between_tasks(tmp_path):
    session, _ = make_session(tmp_path, "tool: nope", "tool: nope", "done", "tool: nope", "done")
    assert session.run("one") == "done"
    assert session.run("two") == "done"


class FailingModel(ScriptedModel):
    """Answers with the script; an exception in the script is raised instead."""

    def chat(self, messages):
        self.seen.append(copy.deepcopy(messages))
        reply = self.replies.pop(0)
        if isinstance(reply.text, Exception):
            raise reply.text
        return reply


def test_a_failed_request_is_noted_and_the_history_stays_well_formed(tmp_path, capsys):
    from harness.common.seam_types import ChatError
    model = FailingModel("tool: list_files()", Reply(ChatError("502 from http://x/v1/chat/completions: Bad Gateway")),
                         "Second answer.")
    session = build_session(Config(model="m"), model, Workspace(tmp_path))
    assert agent.attempt(session, "first") == 1
    assert agent.attempt(session, "second") == 0
    roles = [m["role"] for m in model.seen[-1]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]  # they still alternate
    assert model.seen[-1][4]["content"] == "(That task failed: 502 from http://x/v1/chat/completions: Bad Gateway)"
    assert model.seen[-1][5]["content"] == "second"


def test_a_task_stopped_after_a_call_tells_the_model_at_the_next_task(tmp_path):
    session, model = make_session(tmp_path, "tool: nope", "tool: nope", "tool: nope", "Fine.")
    assert agent.attempt(session, "first") == 1
    assert agent.attempt(session, "second") == 0
    last = model.seen[-1]
    assert [m["role"] for m in last][-2:] == ["assistant", "user"]
    assert last[-1]["content"].startswith("(That task failed: Stopped: the model wrote 3 replies in a row")
    assert last[-1]["content"].endswith("may not all have run.)\n\nsecond")


def test_the_session_starts_with_the_system_prompt_rendered_from_the_tools(tmp_path):
    session = build_session(Config(model="m"), ScriptedModel(), Workspace(tmp_path))
    assert session.history.messages == [{"role": "system", "content": render_system_prompt(TOOLS)}]


# --- configuration edge cases: each is one line naming what the user set ---


@pytest.mark.parametrize("environ, message", [
    ({"PLAINAGENT_MAX_STEPS": "0"}, "PLAINAGENT_MAX_STEPS=0: it must be at least 1."),
    ({"OPENAI_API_KEY": "sk-proj-abc\u2026"}, "OPENAI_API_KEY is still the example's placeholder"),
    ({"OPENAI_API_KEY": "sk-proj-ab\u00e9cdef"}, "OPENAI_API_KEY contains 'é', which no API key has"),
    ({"OPENAI_API_KEY": "sk-proj abc"}, "OPENAI_API_KEY contains ' ', which no API key has"),
    ({"OPENAI_API_KEY": "sk-..."}, "OPENAI_API_KEY is still the example's placeholder"),
    ({"OPENAI_API_KEY": "sk-or-..."}, "OPENAI_API_KEY is still the example's placeholder"),
    ({"OPENAI_API_KEY": "YOUR_API_KEY"}, "OPENAI_API_KEY is still the example's placeholder"),
])
def test_unusable_settings_are_config_errors_naming_the_variable(tmp_path, environ, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(args(), {"OPENAI_MODEL": "m", "OPENAI_API_KEY": "sk-real-0123456789", **environ}, tmp_path, tmp_path)


def test_a_placeholder_key_is_not_sent_to_a_local_server(tmp_path):
    environ = {"OPENAI_MODEL": "m", "OPENAI_API_KEY": "sk-...", "OPENAI_BASE_URL": "http://localhost:11434/v1"}
    assert load_config(args(), environ, tmp_path, tmp_path).api_key.value == ""


@pytest.mark.parametrize("key", ["ollama", "EMPTY", "x", "lm-studio"])
def test_short_keys_local_servers_accept_are_kept(tmp_path, key):
    environ = {"OPENAI_MODEL": "m", "OPENAI_API_KEY": key, "OPENAI_BASE_URL": "http://localhost:11434/v1"}
    assert load_config(args(), environ, tmp_path, tmp_path).api_key.value == key


@pytest.mark.parametrize("base_url, local", [
    ("http://192.168.1.20:8080/v1", True), ("http://10.0.0.5/v1", True), ("http://172.16.3.4:8000/v1", True),
    ("http://[fd12::1]:8000/v1", True), ("http://gpu-box:8000/v1", True), ("http://llm.lan/v1", True),
    ("http://host.docker.internal:11434/v1", True), ("http://studio.local:1234/v1", True),
    ("http://8.8.8.8/v1", False), ("https://api.deepseek.com", False), ("https://example.com.evil/v1", False),
])
def test_servers_on_the_private_network_need_no_key(base_url, local):
    assert is_local(base_url) is local


def test_dash_c_naming_a_file_says_not_a_directory(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("x")
    assert main(["-p", "x", "-m", "m", "--base-url", "http://localhost/v1", "-C", "notes.txt"]) == 2
    assert capsys.readouterr().err == f"plainagent: -C {tmp_path / 'notes.txt'}: not a directory.\n"


@pytest.mark.parametrize("argv, stdin", [(["-p", ""], b""), (["-p", "  \n"], b""), (["-p", "-"], b""),
                                         (["-p", "-"], b"\n\n")])
def test_an_empty_task_is_a_usage_error(monkeypatch, capsys, argv, stdin):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    assert main([*argv, "-m", "m", "--base-url", "http://localhost/v1"]) == 2
    assert capsys.readouterr().err == 'plainagent: the task is empty: pass it as -p "TASK", or pipe it in with -p -.\n'


def test_a_task_on_stdin_that_is_not_utf8_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"fix caf\xe9 bug")))
    assert main(["-p", "-", "-m", "m", "--base-url", "http://localhost/v1"]) == 2
    assert capsys.readouterr().err == ("plainagent: the task on stdin is not UTF-8 text (byte 7); convert it first, "
                                       "e.g. with iconv.\n")


def test_the_tests_run_without_proxy_or_ca_bundle_settings():
    import os
    assert not {"HTTP_PROXY", "https_proxy", "ALL_PROXY", "REQUESTS_CA_BUNDLE"} & set(os.environ)


def test_a_reply_with_only_native_tool_calls_is_a_failure_that_names_them(tmp_path):
    session, _ = make_session(tmp_path, Reply("", "tool_calls", native_calls=["read_file"]))
    with pytest.raises(agent.AnswerIncomplete, match=r"native function call \(read_file\) instead of a `tool:` line"):
        session.run("go")
    session, _ = make_session(tmp_path, Reply("Let me read it.", "tool_calls", native_calls=["read_file"]))
    with pytest.raises(agent.AnswerIncomplete, match="native function call") as stopped:
        session.run("go")
    assert stopped.value.partial == "Let me read it."


def test_an_answer_stopped_by_a_content_filter_is_a_failure(tmp_path):
    session, _ = make_session(tmp_path, Reply("Here is the partial answ", "content_filter"))
    with pytest.raises(agent.AnswerIncomplete, match="content filter stopped the answer") as stopped:
        session.run("go")
    assert stopped.value.partial == "Here is the partial answ"


def test_the_activity_log_shows_escape_codes_instead_of_sending_them(tmp_path, capsys):
    (tmp_path / "evil.txt").write_text("\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J\u202etxt.exe\n")
    session, _ = make_session(tmp_path, 'tool: read_file({"path": "evil.txt"})\ntool: run_command({"command": "echo \\u009b31m"})', "ok")
    session.run("go")
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err and "\x9b" not in err and "\x07" not in err
    assert "\\x1b]52;c;ZWNobyBoaQ==\\x07\\x1b[2J\\u202etxt.exe" in err


@pytest.mark.parametrize("base_url, says", [
    ("http://[::1", "is not a valid URL"), ("http://localhost:99999/v1", "is not a valid URL"),
    ("http:///v1", "is not an http(s) URL with a host"), ("localhost:11434/v1", "is not an http(s) URL with a host"),
])
def test_a_base_url_that_cannot_work_is_a_config_error(tmp_path, base_url, says):
    with pytest.raises(ConfigError, match=re.escape(says)):
        load_config(args(base_url=base_url), {"OPENAI_MODEL": "m"}, tmp_path, tmp_path)


def test_a_dotenv_that_is_not_utf8_is_a_config_error(tmp_path):
    (tmp_path / ".env").write_bytes("OPENAI_MODEL=m\n".encode("utf-16"))
    with pytest.raises(ConfigError, match=r"\.env cannot be read: it is not UTF-8 text \(byte 0\); save it as UTF-8\.$"):
        load_config(args(), {}, tmp_path, tmp_path)


def test_a_workspace_that_cannot_be_resolved_is_a_config_error(tmp_path):
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    for cwd in ("loop1", "x" * 300):
        with pytest.raises(ConfigError, match=r"^-C .*(Symlink loop|File name too long)"):
            load_config(args(cwd=cwd), {"OPENAI_MODEL": "m", "OPENAI_API_KEY": "k"}, tmp_path, tmp_path)


def test_a_task_that_is_not_utf8_on_the_command_line_is_a_usage_error(capsys):
    assert main(["-p", "fix caf\udce9", "-m", "m", "--base-url", "http://localhost/v1"]) == 2
    assert capsys.readouterr().err == "plainagent: the task is not UTF-8 text; convert it first, e.g. with iconv.\n"


def test_a_lone_surrogate_in_an_argument_is_refused_with_a_reason(tmp_path):
    session, _ = make_session(tmp_path, 'tool: edit_file({"path": "a.txt", "old_str": "", "new_str": "x\\ud800"})', "ok")
    session.run("go")
    assert "holds a lone surrogate" in results_in(session.history.messages[3])[0]["output"]
    assert not (tmp_path / "a.txt").exists()


def test_a_dotenv_cannot_copy_other_variables_into_a_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    (tmp_path / ".env").write_text("OPENAI_BASE_URL=http://localhost:8000/v1/${AWS_SECRET_ACCESS_KEY}\nOPENAI_MODEL=m\n")
    assert load_config(args(), {}, tmp_path, tmp_path).base_url == "http://localhost:8000/v1/${AWS_SECRET_ACCESS_KEY}"


def test_an_unknown_mode_is_one_line(capsys):
    assert main(["--mode", "bogus", "-p", "x", "-m", "m", "--base-url", "http://localhost/v1"]) == 2
    assert capsys.readouterr().err == "plainagent: --mode bogus: not a mode; use one of: ask, read-only, edits, yes.\n"


def test_a_reply_of_streamed_reasoning_only_says_so_and_shows_it(tmp_path):
    session, _ = make_session(tmp_path, Reply("", "stop", reasoning="The user wants a poem. I should"))
    with pytest.raises(agent.AnswerIncomplete, match="reply was only reasoning") as stopped:
        session.run("go")
    assert stopped.value.partial == "The user wants a poem. I should"


def test_a_task_that_ended_on_a_reply_without_calls_tells_the_model_so_without_calls_to_doubt(tmp_path):
    model = ScriptedModel(Reply("I was about to say", finish_reason="content_filter"), "Fine.")
    session = build_session(Config(model="m"), model, Workspace(tmp_path))
    assert agent.attempt(session, "first") == 1
    assert agent.attempt(session, "second") == 0
    note = model.seen[-1][-1]["content"]
    assert note.startswith("(That task failed: ") and note.endswith(")\n\nsecond")
    assert "tool calls" not in note  # there were none
