"""Permission modes: each mode against each kind of tool, driven through the loop by a scripted model on real
files; what read-only leaves out of the prompt; edits shown without a question; /mode; the settings."""

import pytest
from frames import read_results
from test_agent import ScriptedModel, args

import agent
from agent import build_session
from harness.cli.config import Config, ConfigError, load_config
from harness.cli.repl import slash_mode
from harness.cli.terminal import TerminalConfirm
from harness.files.workspace import Workspace
from harness.modes.permissions import NETWORK_TOOLS, READ_ONLY, READING_TOOLS, Permissions
from tools import TOOLS

CALLS = ('tool: read_file({"path": "a.txt"})\n'
         'tool: edit_file({"path": "new.txt", "old_str": "", "new_str": "new\\n"})\n'
         'tool: run_command({"command": "touch ran"})')


def run_in_mode(tmp_path, mode: str):
    """One reply calling a read, a write and a command, in `mode`; (results, the questions asked)."""
    (tmp_path / "a.txt").write_text("A\n")
    asked = []
    permissions = Permissions(mode, ask=lambda kind, title, preview, why: asked.append(kind))  # None: approve
    model = ScriptedModel(CALLS, "done")
    session = build_session(Config(model="m"), model, Workspace(tmp_path, permissions), permissions=permissions)
    assert session.run("go") == "done"
    return read_results(session.history.messages[3]["content"]), asked


@pytest.mark.parametrize("mode, asked, wrote, ran", [
    ("ask", ["edit", "command"], True, True),
    ("edits", ["command"], True, True),
    ("yes", [], True, True),
    ("read-only", [], False, False),
])
def test_each_mode_asks_for_and_allows_each_kind_of_tool(tmp_path, mode, asked, wrote, ran):
    results, questions = run_in_mode(tmp_path, mode)
    assert questions == asked
    assert results[0]["ok"] and results[0]["output"] == "A"  # reading is never asked
    assert (tmp_path / "new.txt").exists() == wrote
    assert (tmp_path / "ran").exists() == ran


def test_read_only_refuses_a_write_it_did_not_offer_and_runs_nothing_after_it(tmp_path):
    results, _ = run_in_mode(tmp_path, "read-only")
    assert results[1] == {"tool": "edit_file", "ok": False, "output": READ_ONLY.format(name="edit_file")}
    assert READ_ONLY.format(name="edit_file") == (
        "This session is read-only: edit_file is not available, and nothing can be written "
        "or run. Use the reading tools, or tell the user what you would change and how.")
    assert not results[2]["ok"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.txt"]


def signatures(prompt: str) -> list[str]:
    """The tool names in a system prompt: the first word of each entry (a signature, then its description)."""
    return [entry.split("(")[0] for entry in prompt.split("# Tools\n\n")[1].split("\n\n")]


# Every tool in every mode but read-only, which offers the reading tools and the network's (asked). Derived from
# the registry, so a new tool needs no change here: only READING_TOOLS says whether read-only offers it.
EVERY_TOOL = list(TOOLS)
READ_ONLY_TOOLS = [name for name in TOOLS if name in READING_TOOLS or name in NETWORK_TOOLS]


@pytest.mark.parametrize("mode, tools", [("ask", EVERY_TOOL), ("edits", EVERY_TOOL), ("yes", EVERY_TOOL),
                                         ("read-only", READ_ONLY_TOOLS)])
def test_the_system_prompt_offers_the_modes_tools_only(tmp_path, mode, tools):
    session = build_session(Config(model="m"), ScriptedModel(), Workspace(tmp_path), permissions=Permissions(mode))
    prompt = session.history.messages[0]["content"]
    assert signatures(prompt) == tools
    if mode == "read-only":
        assert "edit_file(" not in prompt and "run_command(" not in prompt
        assert {"read_file", "list_files", "search_files", "web_fetch", "delegate"} <= set(tools)  # as listed today


def test_the_workspace_refuses_writes_in_read_only_mode_even_if_a_tool_is_reached(tmp_path):
    assert Permissions("read-only")("command", "run this command", "$ ls") == READ_ONLY.format(name="run_command")


def test_edits_mode_shows_the_diff_in_the_activity_log_without_asking(tmp_path, capsys):
    (tmp_path / "app.py").write_text("x = 1\n")
    class NeverAsked(TerminalConfirm):  # the terminal's preview, and no question
        def __call__(self, *question):
            pytest.fail("asked")

    permissions = Permissions("edits", ask=NeverAsked(tmp_path), log=agent.log)
    model = ScriptedModel('tool: edit_file({"path": "app.py", "old_str": "x = 1", "new_str": "x = 2"})', "done")
    session = build_session(Config(model="m"), model, Workspace(tmp_path, permissions), permissions=permissions)
    session.run("go")
    assert (tmp_path / "app.py").read_text() == "x = 2\n"
    assert ("Edit app.py (+1 -1 lines):\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
            "(applied without asking: mode edits)\n") in capsys.readouterr().err


def test_mode_switches_the_tools_the_prompt_and_tells_the_model(tmp_path):
    session = build_session(Config(model="m"), ScriptedModel("ok"), Workspace(tmp_path))
    full_prompt = session.history.messages[0]["content"]
    assert slash_mode(session, "read-only") == "Mode: read-only (reads only, writes and runs nothing)."
    assert "edit_file(" not in session.history.messages[0]["content"]
    assert session.tools.permissions.refusal("run_command") == READ_ONLY.format(name="run_command")
    assert slash_mode(session, "ask") == "Mode: ask (asks before each write and command)."
    assert session.history.messages[0]["content"] == full_prompt
    session.run("go")
    assert session.history.messages[1]["content"] == (
        "(The user switched the session to mode read-only: it reads only, writes and runs nothing.)\n\n"
        "(The user switched the session to mode ask: it asks before each write and command.)\n\ngo")


@pytest.mark.parametrize("given, line", [
    ("sloppy", "No mode 'sloppy'; the modes are: ask, read-only, edits, yes. This session's mode is ask."),
    ("", "Mode: ask (asks before each write and command). /mode NAME switches: ask, read-only, edits, yes."),
])
def test_mode_without_a_valid_name_changes_nothing(tmp_path, given, line):
    session = build_session(Config(model="m"), ScriptedModel(), Workspace(tmp_path))
    prompt = session.history.messages[0]["content"]
    assert slash_mode(session, given) == line
    assert session.tools.permissions.mode == "ask" and session.history.messages[0]["content"] == prompt and not session.notes


# --- settings ---


@pytest.mark.parametrize("given, environ, mode", [
    ({}, {}, "ask"),
    ({}, {"PLAINAGENT_MODE": "edits"}, "edits"),
    ({"mode": "read-only"}, {"PLAINAGENT_MODE": "edits"}, "read-only"),
    ({"yes": True}, {"PLAINAGENT_MODE": "read-only"}, "yes"),
    ({"yes": True, "mode": "yes"}, {}, "yes"),
])
def test_the_mode_comes_from_the_flag_then_the_environment(tmp_path, given, environ, mode):
    config = load_config(args(**given), {"OPENAI_MODEL": "m", "OPENAI_BASE_URL": "http://localhost/v1", **environ},
                         tmp_path, tmp_path / "script")
    assert config.mode == mode


@pytest.mark.parametrize("given, environ, message", [
    ({"yes": True, "mode": "ask"}, {}, "-y is --mode yes, and --mode ask says otherwise: give one of them."),
    ({}, {"PLAINAGENT_MODE": "careful"}, "PLAINAGENT_MODE='careful' is not a mode; use one of: ask, read-only, "
                                         "edits, yes."),
    ({}, {"PLAINAGENT_DENY": "terraform 'destroy"}, "PLAINAGENT_DENY=\"terraform 'destroy\": No closing quotation; "
                                                    "rules are separated by ';', e.g. PLAINAGENT_DENY=\"terraform "
                                                    "destroy; npm publish\"."),
])
def test_unusable_mode_settings_are_one_clear_line(tmp_path, given, environ, message):
    with pytest.raises(ConfigError) as error:
        load_config(args(**given), {"OPENAI_MODEL": "m", "OPENAI_BASE_URL": "http://localhost/v1", **environ},
                    tmp_path, tmp_path / "script")
    assert str(error.value) == message


def test_switching_the_mode_forgets_the_always_answers_given_before():
    class Asker:
        def __init__(self):
            self.always, self.asked = {"command"}, []

        def __call__(self, kind, title, preview, why=""):
            if kind in self.always:
                return None
            self.asked.append(title)
            return "no"

    asker = Asker()
    permissions = Permissions("ask", asker)
    assert permissions("command", "run this command", "$ ls") is None  # "always" from earlier
    permissions.switch("edits")
    assert permissions("command", "run this command", "$ ls") == "no" and asker.asked == ["run this command"]
