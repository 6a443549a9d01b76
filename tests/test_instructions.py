"""Project instructions: AGENTS.md from the workspace root and the user's config directory, in the system
prompt under a heading naming each; capped; not UTF-8, not a file, or a link out of the workspace: not loaded,
and said; read once, so the prompt stays the same between turns."""

import os

import pytest
from test_agent import ScriptedModel

from agent import build_session
from harness.cli.config import Config
from harness.cli.instructions import MAX_BYTES, config_dir, load_instructions
from harness.files.workspace import Workspace
from prompt import render_system_prompt
from tools import TOOLS

HEADING = "\n# Instructions from {}\n\nStanding instructions for this work; follow them unless the user says otherwise.\n\n"


@pytest.fixture
def user_file(tmp_path):
    """$XDG_CONFIG_HOME/plainagent/AGENTS.md (the conftest points XDG_CONFIG_HOME at tmp_path/config)."""
    path = tmp_path / "config" / "plainagent" / "AGENTS.md"
    path.parent.mkdir(parents=True)
    return path


def load(root, lines=None):
    logged = [] if lines is None else lines
    return load_instructions(Workspace(root), dict(os.environ), logged.append)


def prompt_for(root) -> str:
    return build_session(Config(model="m"), ScriptedModel(), Workspace(root), instructions=load(root)).history.messages[0]["content"]


def test_without_agents_md_the_prompt_is_the_default(tmp_path):
    assert load(tmp_path) == []
    assert prompt_for(tmp_path) == render_system_prompt(TOOLS)


def test_the_projects_agents_md_follows_the_tools_under_a_heading_naming_it(tmp_path):
    (tmp_path / "AGENTS.md").write_bytes(b"\xef\xbb\xbfAlways use tabs.\r\nRun pytest -q.\n\n")
    assert prompt_for(tmp_path) == (render_system_prompt(TOOLS) + HEADING.format("AGENTS.md in the workspace root")
                                    + "Always use tabs.\nRun pytest -q.\n")


def test_the_users_file_comes_first_then_the_projects(tmp_path, user_file):
    user_file.write_text("Answer in French.\n")
    (tmp_path / "AGENTS.md").write_text("Always use tabs.\n")
    loaded = load(tmp_path)
    assert [(given.file, given.source, given.text) for given in loaded] == [
        (str(user_file), f"{user_file} (the user's own)", "Answer in French."),
        ("AGENTS.md", "AGENTS.md in the workspace root", "Always use tabs.")]
    assert prompt_for(tmp_path).endswith(
        HEADING.format(f"{user_file} (the user's own)") + "Answer in French.\n"
        + HEADING.format("AGENTS.md in the workspace root") + "Always use tabs.\n")


def test_the_config_directory_follows_xdg_else_home(tmp_path):
    assert config_dir({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "plainagent"
    assert config_dir({"XDG_CONFIG_HOME": "relative/dir"}) == config_dir({})
    assert str(config_dir({})).endswith("/.config/plainagent")


def test_an_oversized_file_is_cut_with_a_note_for_the_model_and_the_user(tmp_path):
    text = ("Rule.\n" * 2000).encode()  # 12,000 bytes
    (tmp_path / "AGENTS.md").write_bytes(text)
    [loaded] = load(tmp_path)
    assert loaded.note == "cut at 8,000 of 12,000 bytes"
    assert loaded.text == ("Rule.\n" * 1333 + "Ru"  # the first 8,000 bytes
                           + "\n\n(The rest of AGENTS.md was cut: plainagent reads the first 8,000 bytes of 12,000.)")


def test_a_character_split_by_the_cut_is_left_out_not_taken_for_bad_encoding(tmp_path):
    (tmp_path / "AGENTS.md").write_bytes(b"x" * (MAX_BYTES - 1) + "é and more".encode())
    [loaded] = load(tmp_path)
    assert loaded.text.startswith("x" * (MAX_BYTES - 1) + "\n\n(The rest of AGENTS.md was cut")


@pytest.mark.parametrize("data, byte", [(b"Utilisez des tabulations, s'il vous pla\xeet.\n", 39),
                                        ("Use tabs.\n".encode("utf-16"), 0)])
def test_a_file_that_is_not_utf8_is_not_loaded_and_the_user_is_told(tmp_path, data, byte):
    (tmp_path / "AGENTS.md").write_bytes(data)
    lines = []
    assert load(tmp_path, lines) == []
    assert lines == [f"plainagent: AGENTS.md not loaded: it is not UTF-8 text (byte {byte}); save it as UTF-8 "
                     "(e.g. iconv -f latin1 -t utf-8)."]


def test_a_link_to_a_secret_outside_the_workspace_is_not_sent_to_the_model(tmp_path):
    root, outside = tmp_path / "project", tmp_path / "credentials"
    root.mkdir()
    outside.write_text("aws_secret_access_key = abc\n")
    (root / "AGENTS.md").symlink_to(outside)
    lines = []
    assert load(root, lines) == []
    assert lines == [f"plainagent: AGENTS.md not loaded: AGENTS.md is outside the workspace {root}; only paths "
                     "inside it can be used."]


def test_a_fifo_is_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "AGENTS.md")
    lines = []
    assert load(tmp_path, lines) == []
    assert lines == ["plainagent: AGENTS.md not loaded: it is not a regular file."]


def test_an_empty_file_adds_nothing(tmp_path):
    (tmp_path / "AGENTS.md").write_text("\n  \n")
    assert load(tmp_path) == []


def test_the_prompt_stays_the_same_between_turns_even_if_the_file_changes(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Always use tabs.\n")
    model = ScriptedModel("one", "two")
    session = build_session(Config(model="m"), model, Workspace(tmp_path), instructions=load(tmp_path))
    session.run("first")
    (tmp_path / "AGENTS.md").write_text("Always use spaces.\n")
    session.run("second")
    assert model.seen[0][0] == model.seen[1][0]
    assert "Always use tabs." in model.seen[1][0]["content"]


def test_the_users_file_linked_to_a_secret_or_to_nothing_is_not_loaded(tmp_path, user_file):
    secrets = tmp_path / "elsewhere"
    secrets.mkdir()
    (secrets / ".env").write_text("SECRET=hunter2hunter2\n")
    user_file.symlink_to(secrets / ".env")
    lines = []
    assert load(tmp_path / "config", lines) == [] and "hunter2" not in "".join(lines)
    assert lines[0].endswith("/elsewhere/.env, which may hold secrets.")
    user_file.unlink()
    user_file.symlink_to(tmp_path / "gone.md")
    lines = []
    assert load(tmp_path / "config", lines) == [] and lines[0].endswith("not loaded: it is a link to nothing.")
