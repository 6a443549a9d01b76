"""Where plainagent keeps its own files: the XDG base directories, else the spec's defaults under the home
directory, and never a relative path. Transcripts, the REPL's history and the user's AGENTS.md all go
through these two functions."""

import os
from pathlib import Path

import pytest

from harness.cli import instructions, task_reader
from harness.common.directories import config_dir, state_dir
from harness.history import transcript


@pytest.mark.parametrize("directory, variable, default", [
    (state_dir, "XDG_STATE_HOME", "~/.local/state/plainagent"),
    (config_dir, "XDG_CONFIG_HOME", "~/.config/plainagent"),
])
def test_each_directory_follows_its_xdg_variable_else_the_default(tmp_path, directory, variable, default):
    default = Path(default).expanduser()  # conftest's HOME, the test's own
    assert directory({variable: str(tmp_path)}) == tmp_path / "plainagent"
    assert directory({variable: "relative/dir"}) == default  # the spec says to ignore a relative path
    assert directory({variable: ""}) == directory({}) == default
    assert directory({"XDG_STATE_HOME" if variable == "XDG_CONFIG_HOME" else "XDG_CONFIG_HOME": "/x"}) == default


def test_without_an_argument_the_process_environment_is_read(tmp_path):
    assert state_dir() == tmp_path / "state" / "plainagent"  # conftest's XDG_STATE_HOME
    assert config_dir() == tmp_path / "config" / "plainagent"


def test_transcripts_history_and_instructions_use_these_and_no_copy_of_their_own(tmp_path):
    assert transcript.state_dir is task_reader.state_dir is state_dir
    assert instructions.config_dir is config_dir
    assert transcript.sessions_dir() == state_dir() / "sessions"
    with open(os.devnull) as stdin:
        assert task_reader.TaskReader(stdin=stdin).history == state_dir() / "history"
