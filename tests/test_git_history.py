"""History survives any command (harness/commands/git_history.py): real repositories under tmp_path, real
commands through run_shell, with the kernel's walls and without; and ordinary git work left as it is."""

import gc
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from test_landlock import ABI, Tree

from harness.commands.git_history import SNAPSHOTS, GitHistory, git_folder, remove_left_behind
from harness.commands.namespaces import namespaces_work
from harness.commands.shell import run_shell
from harness.common.directories import state_dir
from harness.files.workspace import Workspace

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


@pytest.fixture(autouse=True)
def git_identity(monkeypatch):
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)


def git(folder: Path, *argv: str) -> str:
    return subprocess.run(["git", *argv], cwd=folder, capture_output=True, text=True, check=True).stdout


def repository(folder: Path, commits: int = 3) -> list[str]:
    """A repository with `commits` commits on main and a branch `topic`; its log, newest first."""
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q", "-b", "main")
    for n in range(commits):
        (folder / "app.py").write_text(f"x = {n}\n")
        git(folder, "add", "app.py")
        git(folder, "commit", "-q", "-m", f"commit {n}")
    git(folder, "branch", "topic")
    return git(folder, "log", "--format=%H %s").splitlines()


def keeper_for(workspace: Path) -> Workspace:
    return Workspace(workspace, git_history=GitHistory(git_folder(workspace)))


def test_rm_rf_dot_git_is_put_back_and_the_model_is_told(tmp_path):
    project = tmp_path / "project"
    log = repository(project)
    ws = keeper_for(project)
    result = run_shell(ws, "rm -rf .git && echo gone", 20)
    assert result.startswith("gone\n(plainagent: the command removed the repository's history in ")
    assert "the commits from before the session are there again" in result
    assert git(project, "log", "--format=%H %s").splitlines() == log
    assert git(project, "rev-parse", "topic").strip() == log[0].split()[0]
    assert git(project, "fsck", "--no-progress").strip() == ""
    assert (project / "app.py").read_text() == "x = 2\n"


def test_a_monorepo_package_wiping_the_whole_repositorys_git_folder_gets_it_back(tmp_path):
    top = tmp_path / "mono"
    log = repository(top)
    package = top / "packages/api"
    package.mkdir(parents=True)
    assert git_folder(package) == top / ".git"
    ws = keeper_for(package)
    result = run_shell(ws, 'find "$(git rev-parse --absolute-git-dir)" -mindepth 1 -delete; echo done', 20)
    assert "the command removed the repository's history in " + str(top / ".git") in result
    assert git(package, "log", "--format=%H %s").splitlines() == log


def test_loose_objects_removed_behind_the_refs_are_put_back(tmp_path):
    project = tmp_path / "project"
    log = repository(project)
    ws = keeper_for(project)
    result = run_shell(ws, "find .git/objects -type f -delete", 20)
    assert "of the repository's object files from before the session were gone" in result
    assert git(project, "log", "--format=%H %s").splitlines() == log


@pytest.mark.parametrize("wipe", [
    "rm -rf .git && git init -q -b other",  # a new HEAD: the refs were all that said where the history was
    "find .git/objects -type f -path '*/objects/??/*' | while read f; do rm -f \"$f\"; echo junk > \"$f\"; done",
])
def test_history_wiped_behind_a_new_head_or_objects_replaced_by_junk_is_put_back(tmp_path, wipe):
    project = tmp_path / "project"
    log = repository(project)
    ws = keeper_for(project)
    result = run_shell(ws, wipe, 20)
    assert "put back from the" in result, result
    assert git(project, "log", "--format=%H %s").splitlines() == log
    assert git(project, "fsck", "--no-progress").strip() == ""


def test_ordinary_git_work_is_left_as_it_is(tmp_path):
    """A new commit, a branch deleted, a branch moved, a gc: nothing is put back over them, and no note says so but
    the gc's (which only undoes tidying)."""
    project = tmp_path / "project"
    repository(project)
    ws = keeper_for(project)
    assert run_shell(ws, "git branch -D topic -q && echo y >> app.py && git commit -qam more && git log --oneline "
                         "| wc -l", 20) == "4"
    assert git(project, "branch", "--list").split() == ["*", "main"]  # topic stays deleted
    result = run_shell(ws, "git gc -q --prune=now && git log --oneline | wc -l", 20)
    assert result.splitlines()[0] == "4" and "no commit from before the session is lost" in result
    assert git(project, "log", "--oneline").count("\n") == 4 and git(project, "branch", "--list").split() == ["*", "main"]
    assert git(project, "fsck", "--no-progress").strip() == ""


def test_outside_a_repository_nothing_is_kept(tmp_path):
    (tmp_path / "plain").mkdir()
    assert git_folder(tmp_path / "plain") is None
    ws = keeper_for(tmp_path / "plain")
    assert run_shell(ws, "echo hi", 20) == "hi"
    assert not (state_dir() / SNAPSHOTS).exists()


def test_the_snapshot_is_hard_links_outside_the_workspace_and_goes_with_the_session(tmp_path):
    project = tmp_path / "project"
    repository(project)
    keeper = GitHistory(git_folder(project))
    keeper.before_command()
    snapshot = keeper.snapshot
    assert snapshot.parent == state_dir() / SNAPSHOTS and not snapshot.is_relative_to(project)
    kept = [path for path in (snapshot / "objects").rglob("*") if path.is_file()]
    assert kept and all(path.stat().st_nlink == 2 for path in kept)  # linked, not copied
    (state_dir() / SNAPSHOTS / "999999999-gone").mkdir()  # a killed session's: removed at the next first command
    GitHistory(git_folder(project)).before_command()
    gc.collect()
    assert not (state_dir() / SNAPSHOTS / "999999999-gone").exists()
    del keeper
    gc.collect()
    assert not snapshot.exists()


@pytest.mark.skipif(not ABI or not namespaces_work(), reason="this kernel makes no namespaces for this user")
def test_inside_the_walls_rm_rf_dot_git_is_put_back_too(tmp_path):
    """The mount namespace keeps git's config, hooks and packs read-only; the rest a command may remove."""
    tree = Tree(tmp_path)
    log = repository(tree.workspace)
    git(tree.workspace, "gc", "-q")  # a pack, bound read-only, and loose objects after it
    (tree.workspace / "app.py").write_text("x = 9\n")
    git(tree.workspace, "commit", "-qam", "loose")
    tree.ws.git_history = GitHistory(git_folder(tree.workspace))
    result = tree.run("rm -rf .git; ls .git | sort | tr '\\n' ' '")
    assert "the command removed the repository's history" in result
    assert git(tree.workspace, "log", "--format=%s").splitlines() == ["loose", *[line.split(" ", 1)[1] for line in log]]
    assert git(tree.workspace, "fsck", "--no-progress").strip() == ""
    assert os.access(tree.workspace / ".git/HEAD", os.R_OK)


def test_the_snapshots_and_the_repls_history_file_never_share_a_name(tmp_path):
    """The REPL keeps its prompt's history in the state folder's `history` file: the snapshots once took that name
    as a folder, and every command in a repository failed after a REPL had run (or the REPL kept no history)."""
    project = tmp_path / "project"
    repository(project)
    (state_dir() / "history").mkdir(parents=True)  # left by a version that kept snapshots there
    (state_dir() / "history" / "999999999-gone").mkdir()
    GitHistory(git_folder(project)).before_command()
    assert not (state_dir() / "history").exists()  # the REPL may write its history file there again
    (state_dir() / "history").write_text("ls\n")  # and once it has, commands still run
    ws = keeper_for(project)
    assert run_shell(ws, "echo hi", 20) == "hi"
    assert (state_dir() / "history").read_text() == "ls\n"


def test_a_folder_in_use_is_never_taken_for_a_dead_sessions_whatever_its_number_says(tmp_path):
    """A session in another PID namespace (a container, `unshare -p`) has a number no process here has: its
    folders were removed as a dead session's, and its next command could not set up its walls. A lock says it."""
    from harness.commands import namespaces
    from harness.common.directories import hold
    alive = Path(tempfile.mkdtemp(prefix="plainagent-999999999-"))  # a number nobody has here
    lock = hold(alive)
    snapshots = state_dir() / SNAPSHOTS
    snapshots.mkdir(parents=True, exist_ok=True)
    (snapshots / "999999999-elsewhere").mkdir()
    snapshot_lock = hold(snapshots / "999999999-elsewhere")
    try:
        namespaces.remove_left_behind()
        remove_left_behind(snapshots)
        assert alive.exists() and (snapshots / "999999999-elsewhere").exists()
    finally:
        os.close(lock), os.close(snapshot_lock)  # as its process ending would
    namespaces.remove_left_behind()
    remove_left_behind(snapshots)
    assert not alive.exists() and not (snapshots / "999999999-elsewhere").exists()
