"""The lines people read, worded as a person would write them (#17 item 11): counts agree with their nouns, a
question ends with its question mark, a note says what happened and not something else, and a task that starts
with a path is a task."""

import argparse

import pytest
import responses

from harness.cli.config import ConfigError, load_config
from harness.cli.display import summarize
from harness.cli.repl import is_command, run_slash_command
from harness.commands import shell
from harness.common.seam_types import ChatError
from harness.files.workspace import Workspace
from harness.history.compaction import describe_removed
from harness.history.session_history import SessionHistory, cut
from harness.model.client import Client
from harness.modes.permissions import Permissions
from harness.parser.toolcalls import parse_reply
from tools import CallResult, check_args, run_tool

NAMES = ["read_file", "list_files", "edit_file", "search_files", "run_command"]


# --- counts ---


def test_one_stubbed_result_is_a_stub_and_two_are_stubs():
    context = SessionHistory([{"role": "system", "content": "S"}], 4000)
    context.add("user", "read it")
    context.add("assistant", 'tool: read_file({"path": "a.txt"})', calls=["read_file"])
    context.add_results([CallResult("read_file", {"path": "a.txt"}, True, "x" * 6000)], [])
    context.add("assistant", "Read.")
    context.add("user", "and these")
    assert context.compact(force=True).startswith("Context compacted: 1 older tool result replaced by a stub; ")
    for name in ("b.txt", "c.txt"):
        context.add("assistant", f'tool: read_file({{"path": "{name}"}})', calls=["read_file"])
        context.add_results([CallResult("read_file", {"path": name}, True, "y" * 6000)], [])
    context.add("assistant", "Read both.")
    context.add("user", "thanks")
    assert context.compact(force=True).startswith("Context compacted: 2 older tool results replaced by stubs; ")


def test_a_one_line_file_is_one_line(tmp_path):
    ws = Workspace(tmp_path)
    args = {"path": "a.txt", "old_str": "", "new_str": "1234567\n"}
    assert check_args("edit_file", args) is None
    assert run_tool(ws, "edit_file", args).output == "Created a.txt (1 line, 8 bytes)."
    args = {"path": "b.txt", "old_str": "", "new_str": "a\nb\n"}
    assert run_tool(ws, "edit_file", args).output == "Created b.txt (2 lines, 4 bytes)."


@pytest.mark.parametrize("lines, said", [(1, "1 line, 8 bytes"), (2, "2 lines, 8 bytes"), (0, "0 lines, 8 bytes")])
def test_a_stub_counts_its_lines_in_words_that_agree(lines, said):
    call = {"name": "read_file", "args": {"path": "a.txt"}, "ok": True, "lines": lines, "bytes": 8}
    assert describe_removed(call).startswith(f"(Output removed to save context: {said}. ")


def test_the_cut_note_of_a_single_line_says_one_line():
    shown = cut("x" * 5000, 1000)  # one long line: a minified file, a log without line breaks
    assert shown[shown.index("(Cut here"):].startswith(
        "(Cut here to fit the context budget: this result has 1 line, 5,000 bytes;")


@pytest.mark.parametrize("output, line", [("a\nb", "a (+1 line)"), ("a\nb\nc", "a (+2 lines)"), ("a", "a")])
def test_the_activity_log_counts_the_lines_it_does_not_show(output, line):
    assert summarize(output) == line


# --- the 404 hint ---


@responses.activate
@pytest.mark.parametrize("body, ending", [("", "did you mean http://localhost:11434/v1?"),
                                          ("404 page not found", "did you mean http://localhost:11434/v1? Body: 404 "
                                                                 "page not found")])
def test_the_hint_for_a_missing_version_path_ends_as_a_question(body, ending):
    responses.post("http://localhost:11434/chat/completions", status=404, body=body)
    client = Client("http://localhost:11434", "", "m", sleep=lambda seconds: None)
    with pytest.raises(ChatError) as error:
        client.chat([{"role": "user", "content": "hi"}])
    assert str(error.value).endswith(ending)
    assert "?." not in str(error.value)


# --- what a note says happened ---


def test_an_edit_applied_unasked_after_a_mode_switch_does_not_name_a_flag_never_given():
    shown = []
    permissions = Permissions("ask", ask=lambda *question: pytest.fail("asked"), log=shown.append)
    permissions.switch("edits")
    assert permissions("edit", "edit a.py", "--- a/a.py\n+++ b/a.py\n") is None
    assert shown[-1].endswith("\n(applied without asking: mode edits)")
    assert "--mode" not in shown[-1]


def test_a_command_killed_at_its_timeout_without_output_says_so_once(tmp_path):
    ws = Workspace(tmp_path)
    assert shell.run_shell(ws, "sleep 30", timeout=0.2) == "killed after 0.2 s (timeout); no output"
    assert shell.run_shell(ws, "echo started; sleep 30", timeout=0.2) == (
        "killed after 0.2 s (timeout); the output so far:\nstarted")


def test_an_invented_result_without_a_call_is_not_said_to_follow_tool_calls():
    parsed = parse_reply('I will list the files.\ntool_result({"ok": true, "output": "a.py"})\nThere is a.py.', NAMES)
    assert parsed.text == "I will list the files."
    assert len(parsed.calls) == 1 and not any("after your tool calls" in note for note in parsed.notes)
    told = " ".join(parsed.notes + [parsed.calls[0].problem])
    assert "discarded" in told and "no tool call" in told
    with_call = parse_reply('tool: list_files()\ntool_result({"ok": true, "output": "a.py"})', NAMES)
    assert with_call.notes[0].startswith("Your reply went on after your tool calls")


# --- a task that starts with a path ---


@pytest.mark.parametrize("line", ["/tmp is full, what can I delete?", "/etc has a broken hosts file; fix it",
                                  "/usr/bin/python fails", "/tmp",
                                  "/help me read this:\n  File \"a.py\", line 3"])  # a pasted block is a task
def test_a_task_that_starts_with_a_path_that_exists_is_a_task(line):
    assert not is_command(line)


@pytest.mark.parametrize("line", ["/help", "/MODE edits", "/model gpt-4o", "/hlep", "/nope at all"])
def test_a_slash_word_that_names_no_path_is_a_command(line):
    assert is_command(line)


def test_an_unknown_command_says_how_to_send_a_task_that_starts_with_a_slash():
    shown = run_slash_command(None, "/hlep me")
    assert shown.startswith("Unknown command /hlep. Commands: /help, /reset, /undo, ")
    assert "a word before it" in shown


# --- the missing key ---


def args(**given):
    values = {"model": None, "base_url": None, "max_steps": None, "cwd": ".", "yes": False, "prompt": None,
              "context_tokens": None, "log": None, "resume": None, "mode": None}
    return argparse.Namespace(**values | given)


def test_the_missing_key_points_at_the_env_beside_agent_py_and_not_the_projects(tmp_path):
    install, project = tmp_path / "plainagent", tmp_path / "project"
    install.mkdir(), project.mkdir()
    (project / ".env").write_text("OPENAI_API_KEY=sk-the-projects-own-key-for-its-app\n")  # the app's, not ours
    with pytest.raises(ConfigError) as error:
        load_config(args(), {"OPENAI_MODEL": "m"}, project, install)
    message = str(error.value)
    assert message.startswith("OPENAI_API_KEY is not set for https://api.openai.com/v1: set it in the .env beside "
                              f"agent.py ({install / '.env'}; .env.example there shows how) or in the environment (")
    assert f"{project / '.env'} sets one, but a project's .env" in message  # why the one it has is not used
