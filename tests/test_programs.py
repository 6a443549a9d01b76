"""The programs plainagent itself runs (harness/common/programs.py): a git a command planted first on PATH, in a
relative PATH entry or behind a link is never run, and the listing is still git's; the Python the tether runs on is
never one a command could have replaced. Every fake program writes a marker file when run: it must not exist."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands.shell import run_shell
from harness.common import programs
from harness.common.programs import distrust, find_program, is_writable, tether_python
from harness.files.ignore_rules import IgnoreRules, run_git
from tools import Workspace, run_tool

GIT = shutil.which("git")  # the real one, found before any test changes PATH
pytestmark = pytest.mark.skipif(GIT is None or os.name != "posix", reason="needs git, and POSIX scripts")
# What each fake program does when run: leave a marker, and say something git never would.
FAKE = "#!/bin/sh\necho \"$0 $*\" >> {marker}\necho planted-output\nexit 0\n"


def plant(folder: Path, name: str, marker: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(FAKE.format(marker=marker))
    program.chmod(0o755)
    return program


@pytest.fixture
def project(tmp_path):
    """A repository whose nested .gitignore only git reads (the fallback reads the top-level one alone)."""
    root = tmp_path / "project"
    files = {".gitignore": "build/\n", "sub/.gitignore": "secret.log\n", "app.py": "x\n", "sub/secret.log": "y\n",
             "sub/keep.py": "z\n", "build/out.o": "o\n"}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run([GIT, "init", "-q"], cwd=root, check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull})
    return root


GITS_LISTING = ".gitignore\napp.py\nsub/\nsub/.gitignore\nsub/keep.py"  # git's answer: sub/secret.log left out
GITS_SEARCH = "app.py:1: x\nsub/.gitignore:1: secret.log\nsub/keep.py:1: z"


def test_a_git_planted_first_on_path_in_the_workspace_or_a_relative_entry_is_never_run(project, tmp_path,
                                                                                       monkeypatch):
    """.venv/bin first on PATH (the project's venv activated), then a relative entry and an empty one (the current
    folder, here node_modules): each holds a git, and the git further on is the one that runs."""
    marker = tmp_path / "ran"
    plant(project / ".venv/bin", "git", marker)
    plant(project / "node_modules/.bin", "git", marker)
    plant(project / "node_modules", "git", marker)
    monkeypatch.chdir(project / "node_modules")
    monkeypatch.setenv("PATH", os.pathsep.join([str(project / ".venv/bin"), ".bin", "",
                                                os.path.dirname(GIT), os.environ["PATH"]]))
    distrust([project])
    ws = Workspace(project)
    assert find_program("git") == GIT
    assert run_tool(ws, "list_files", {}).output == GITS_LISTING
    assert run_tool(ws, "search_files", {"pattern": "y|z|o|x"}).output == GITS_SEARCH
    assert run_git(project, ["rev-parse", "--is-inside-work-tree"]).stdout == b"true\n"
    assert not marker.exists()


def test_a_link_outside_to_a_program_inside_is_refused(project, tmp_path, monkeypatch):
    """~/bin/git, a link into the workspace: the entry lies outside, the program it leads to does not."""
    marker = tmp_path / "ran"
    inside = plant(project / "node_modules/.bin", "git", marker)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/git").symlink_to(inside)
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "bin"), os.path.dirname(GIT)]))
    distrust([project])
    assert find_program("git") == GIT
    assert run_tool(Workspace(project), "list_files", {}).output == GITS_LISTING
    assert not marker.exists()


def test_with_no_git_outside_the_walk_reads_the_gitignore_itself(project, tmp_path, monkeypatch):
    """Only the planted git on PATH: as if there were no git; the top-level .gitignore still leaves build/ out."""
    marker = tmp_path / "ran"
    plant(project / ".venv/bin", "git", marker)
    monkeypatch.setenv("PATH", str(project / ".venv/bin"))
    distrust([project])
    assert find_program("git") is None and run_git(project, ["status"]) is None
    assert IgnoreRules(project).git_ignores is None
    assert run_tool(Workspace(project), "list_files", {}).output == (
        ".gitignore\napp.py\nsub/\nsub/.gitignore\nsub/keep.py\nsub/secret.log")
    assert not marker.exists()


def test_a_trusted_git_outside_is_still_used(project, monkeypatch):
    distrust([project])
    assert IgnoreRules(project).git_ignores == {"build", "sub/secret.log"}
    assert run_tool(Workspace(project), "list_files", {}).output == GITS_LISTING


@pytest.mark.parametrize("folder", ["extra", "temp", "shm"])
def test_the_other_folders_commands_write_are_distrusted_too(tmp_path, monkeypatch, folder):
    """PLAINAGENT_SANDBOX_WRITE's folders (as distrust is given them), a session's private TMPDIR, /dev/shm."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    places = {"extra": tmp_path / "extra/bin", "temp": tmp_path / "tmp/plainagent-1-x/bin",
              "shm": Path("/dev/shm")}
    distrust([tmp_path / "project", tmp_path / "extra"])
    assert is_writable(places[folder])
    assert not is_writable(tmp_path / "tmp/elsewhere") and not is_writable(tmp_path)


# --- the Python the tether runs on ---


def test_the_tether_runs_on_the_real_path_of_a_python_outside(monkeypatch, tmp_path):
    distrust([tmp_path])
    assert tether_python() == os.path.realpath(sys.executable)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/exe is Linux's")
def test_a_python_in_the_workspace_replaced_by_a_wrapper_is_not_what_the_tether_runs_on(tmp_path, monkeypatch):
    """Started as .venv/bin/python (a copy, not a link) from a venv in the workspace: a command replaced it with a
    wrapper. The tether still runs on the binary the agent started from, and the wrapper never runs."""
    project, marker = tmp_path / "project", tmp_path / "ran"
    python = project / ".venv/bin/python"
    python.parent.mkdir(parents=True)
    shutil.copy(os.path.realpath(sys.executable), python)
    monkeypatch.setattr(sys, "executable", str(python))
    distrust([project])
    assert tether_python() == "/proc/self/exe"
    ws = Workspace(project)
    plant(project / ".venv/bin", "python", marker)  # the wrapper, where the python was
    assert run_shell(ws, "readlink /proc/$PPID/exe", 30) == os.path.realpath("/proc/self/exe")
    assert not marker.exists()


def test_off_linux_a_python_in_the_workspace_runs_no_command_in_the_sandbox(tmp_path, monkeypatch):
    """Elsewhere there is no binary of our own to run: the command is refused, in one line, rather than run."""
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setattr(sys, "executable", str(project / "python"))
    monkeypatch.setattr(programs, "LINUX", False)
    distrust([project])
    assert tether_python() is None
    from harness.commands import shell

    with pytest.raises(OSError) as raised:
        shell.start("true", project, dict(os.environ), ["3", ""])
    assert raised.value.strerror == (f"no Python to start the tether with: {project / 'python'} lies in a folder "
                                     "commands may write, and only Linux can run this process's own binary instead")


# --- wired in main(): the workspace is distrusted whether or not the kernel sandbox is on ---


@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_main_distrusts_the_workspace_with_the_sandbox_on_or_off(agent_home, project, tmp_path, sandbox):
    """The project's venv activated (.venv/bin first on PATH) and a git planted in it: list_files gives git's
    listing all the same, from the git further on; PLAINAGENT_SANDBOX=off changes nothing here, for commands
    write in the workspace either way."""
    from fake_endpoint import FakeEndpoint
    from test_e2e_trust import agent_here, own_settings, results_sent

    marker = tmp_path / "ran"
    plant(project / ".venv/bin", "git", marker)
    path = os.pathsep.join([str(project / ".venv/bin"), os.path.dirname(GIT), os.environ["PATH"]])
    with FakeEndpoint(["tool: list_files()", "Listed."]) as endpoint:
        settings = own_settings(agent_home, endpoint, f"PLAINAGENT_SANDBOX={sandbox}\n")
        done = agent_here(agent_home, project, endpoint, "-p", "list", extra_env={**settings, "PATH": path})
    assert done.returncode == 0, done.stderr
    assert results_sent(endpoint, 1)[0]["output"] == GITS_LISTING
    assert not marker.exists()
