"""Commands get the project's environment (issue 34): a workspace with a venv of its own (.venv or venv, with a
pyvenv.cfg) has its commands run with it, as uv and VS Code pick it; plainagent's own venv, active or not, is
never theirs; another project's venv, active when plainagent started, is the user's choice and stays. The start
line says which."""

import json
import os
import sys
import venv

import pytest
from fake_endpoint import FakeEndpoint
from test_e2e import agent

from harness.commands.shell import command_environment, project_venv
from harness.files.workspace import Workspace

BIN = "Scripts" if sys.platform == "win32" else "bin"
PREFIX = 'tool: run_command({"command": "python -c \\"import sys; print(sys.prefix)\\""})'


def make_venv(folder):
    venv.create(folder, with_pip=False)
    return folder


@pytest.mark.parametrize("name", [".venv", "venv"])
def test_the_workspaces_venv_is_what_commands_run_with(tmp_path, name):
    own = make_venv(tmp_path / name)
    env = command_environment({"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, Workspace(tmp_path))
    assert env["VIRTUAL_ENV"] == str(own) and env["PATH"] == os.pathsep.join([str(own / BIN), "/usr/bin", "/bin"])


def test_a_folder_named_venv_without_pyvenv_cfg_is_no_venv(tmp_path):
    (tmp_path / ".venv" / BIN).mkdir(parents=True)
    assert project_venv(tmp_path, {}) is None
    assert "VIRTUAL_ENV" not in command_environment({"PATH": "/usr/bin"}, Workspace(tmp_path))


def test_another_projects_venv_active_at_the_start_is_the_users_choice(tmp_path):
    make_venv(tmp_path / "project" / ".venv")
    chosen = make_venv(tmp_path / "chosen")
    environ = {"PATH": f"{chosen / BIN}{os.pathsep}/usr/bin", "VIRTUAL_ENV": str(chosen)}
    env = command_environment(environ, Workspace(tmp_path / "project"))
    assert env["VIRTUAL_ENV"] == str(chosen) and env["PATH"] == environ["PATH"]


def test_plainagents_own_venv_active_gives_way_to_the_workspaces(tmp_path):
    own = make_venv(tmp_path / "project" / ".venv")
    ours = os.path.join(sys.prefix, BIN)
    environ = {"PATH": f"{ours}{os.pathsep}/usr/bin", "VIRTUAL_ENV": sys.prefix}
    env = command_environment(environ, Workspace(tmp_path / "project"))
    assert env["VIRTUAL_ENV"] == str(own) and env["PATH"] == os.pathsep.join([str(own / BIN), "/usr/bin"])


def test_a_projects_python_m_pytest_runs_its_own_python_and_the_start_line_says_so(install, project):
    own = make_venv(project / ".venv")
    with FakeEndpoint([PREFIX, "Done."]) as endpoint:
        done = agent(install, project, endpoint, "-p", "which python?", "--yes")
    assert done.returncode == 0, done.stderr
    assert "\ncommands run with the workspace's .venv (its python first on PATH)\n" in done.stderr
    output = json.dumps(str(own))[1:-1]
    assert f"tool_result(run_command) <<END\n{output}\nEND" in endpoint.received[1].body["messages"][-1]["content"]
