"""History survives any command: the repository's history as it was at the session's first command, kept outside
the walls and put back when a command took it away.

The failure it prevents: a command may write in the workspace, and its .git is in the workspace. Tried in
--yes mode, `rm -rf .git`, and from a monorepo's package `find "$(git rev-parse --absolute-git-dir)" -mindepth 1
-delete`, left nothing to restore: the commits from before the session were gone. The mount namespace keeps git's
hooks, config and packs read-only (namespaces.py), but the folder that holds them, the loose objects and the refs
must stay writable, or `git commit` fails.

So at the first command the keeper takes a snapshot in plainagent's state folder, which commands cannot read or
write: every object file hard-linked (a link costs no space and keeps the file when a command removes the name;
copied where links cannot be made), HEAD, packed-refs and refs/ copied. After each command a look of about 260
`stat`s: HEAD, every pack and one object of each objects/XX folder still there? If not, what is missing is
linked back (nothing there is overwritten: a branch the command moved stays moved) and the result says so.
Measured in bench/history.py. Not covered: a command that rewrites a loose object's bytes in place (`chmod u+w`,
then a write) changes the snapshot's link too; git would report the object corrupt, not lose the others.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path

from harness.commands.landlock import repository_outside
from harness.common.directories import hold, left_behind, state_dir

SNAPSHOTS = "git-snapshots"  # in the state folder (not "history": the REPL's history file has that name)
KEPT_FILES = ("HEAD", "packed-refs", "ORIG_HEAD", "config", "description")  # copied, with refs/ (small; a command may rewrite them)


def git_folder(workspace: Path) -> Path | None:
    """The folder that holds the repository's objects: the workspace's .git, or the one of the repository it is a
    part of (landlock.repository_outside's: a monorepo's .git, or a worktree's common folder); None outside git."""
    for folder in [Path(workspace) / ".git", *reversed(repository_outside(Path(workspace)))]:
        if (folder / "objects").is_dir() and (folder / "HEAD").is_file():
            return folder
    return None


class GitHistory:
    """One session's snapshot of one repository's history; `before_command` and `after_command` wrap each command."""

    def __init__(self, git: Path | None, root: Path | None = None):
        self.git = git
        self.root = root  # where snapshots are kept: the state folder's SNAPSHOTS, unless a test says
        self.snapshot: Path | None = None
        self.fanout: list[str] = []  # what the look after a command checks: a sample of the objects, the packs
        self.linked = True  # whether every object was hard-linked (then a file put in an object's place is seen)

    def before_command(self) -> None:
        """At the first command, the snapshot (then nothing: what is committed later is the session's own)."""
        if self.git is None or self.snapshot is not None:
            return
        root = self.root or state_dir() / SNAPSHOTS
        if self.root is None and (state_dir() / "history").is_dir():  # where they were kept before: the name of the
            shutil.rmtree(state_dir() / "history", ignore_errors=True)  # REPL's history file, which it kept out
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        remove_left_behind(root)
        self.snapshot = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))
        weakref.finalize(self, put_away, self.snapshot, hold(self.snapshot))  # held: seen in use from every process
        for parent, _, names in os.walk(self.git / "objects"):
            into = self.snapshot / os.path.relpath(parent, self.git)
            into.mkdir(parents=True, exist_ok=True)
            for name in names:
                self.linked &= keep(Path(parent) / name, into / name, link=True) == "linked"
        for name in KEPT_FILES:
            keep(self.git / name, self.snapshot / name, link=False)
        if (self.git / "refs").is_dir():
            shutil.copytree(self.git / "refs", self.snapshot / "refs", symlinks=True, dirs_exist_ok=True)
        objects = self.snapshot / "objects"
        # One object of each objects/XX folder (a wipe of the objects, their folders kept, is seen) and every pack.
        self.fanout = [str(next(path.iterdir(), path).relative_to(self.snapshot)) for path in objects.iterdir()
                       if len(path.name) == 2]
        self.fanout += [str(path.relative_to(self.snapshot)) for path in (objects / "pack").glob("*")]

    def after_command(self) -> str | None:
        """The note for the command's result when history was missing and put back; None when nothing was. With
        HEAD or every ref gone the repository was wiped (`rm -rf .git`, then perhaps `git init`): everything is put
        back, HEAD and refs too. Otherwise only object files, also those a file was put in the place of (a
        command's refs are its own: after `git gc` the packed ones are the truth, and a moved branch stays moved)."""
        if self.snapshot is None or all(self.intact(name) for name in ["HEAD", *self.fanout]) and not self.refs_gone():
            return None
        wiped = not os.path.lexists(self.git / "HEAD") or self.refs_gone()
        n_back = 0
        for parent, _, names in os.walk(self.snapshot):
            is_objects = Path(parent).is_relative_to(self.snapshot / "objects")
            into = self.git / os.path.relpath(parent, self.snapshot)
            if not (wiped or is_objects):
                continue
            try:
                into.mkdir(parents=True, exist_ok=True)
            except OSError:  # a file where a folder was: the command's to have made; not removed
                continue
            for name in names:
                relative = os.path.relpath(os.path.join(parent, name), self.snapshot)
                if os.path.lexists(into / name) and (self.intact(relative) or not is_objects) and not (
                        wiped and relative == "HEAD"):
                    continue
                try:
                    if os.path.lexists(into / name):  # an object's name is its content: what else is there is not it
                        os.unlink(into / name)
                except OSError:
                    continue
                n_back += bool(keep(Path(parent) / name, into / name, link=is_objects))
        if wiped:
            return (f"(plainagent: the command removed the repository's history in {self.git}; {n_back} of its files "
                    "were put back from the snapshot taken at the session's first command: the commits from before "
                    "the session are there again, and HEAD and the branches as they were then.)")
        return (f"(plainagent: {n_back} of the repository's object files from before the session were gone or replaced "
                f"after the command ({self.git / 'objects'}); they were put back from the session's snapshot, so no "
                "commit from before the session is lost. The branches are as the command left them.)")

    def intact(self, relative: str) -> bool:
        """Whether the repository still holds `relative` (HEAD, an object, a pack): the very file, where the snapshot
        links it."""
        try:
            here = os.lstat(self.git / relative)
        except OSError:
            return False
        if not self.linked or not relative.startswith("objects"):
            return True
        try:
            return here.st_ino == os.lstat(self.snapshot / relative).st_ino
        except OSError:
            return True

    def refs_gone(self) -> bool:
        """Whether none of the branches and tags of the snapshot is there any more, loose or packed."""
        names = [str(path.relative_to(self.snapshot)) for path in (self.snapshot / "refs").rglob("*") if path.is_file()]
        try:
            names += [line.split()[1] for line in (self.snapshot / "packed-refs").read_text().splitlines()
                      if line and line[0] not in "#^" and len(line.split()) == 2]
        except OSError:
            pass
        if not names:
            return False
        try:
            packed = (self.git / "packed-refs").read_text(errors="replace")
        except OSError:
            packed = ""
        return not any(os.path.lexists(self.git / name) or f" {name}\n" in packed + "\n" for name in names)


def keep(source: Path, target: Path, link: bool) -> str:
    """`source` at `target`: hard-linked when `link` and it can be, else copied: "linked", "copied", or "" when
    it is gone."""
    try:
        if link:
            try:
                os.link(source, target, follow_symlinks=False)
                return "linked"
            except OSError:  # another file system, or links not allowed here: a copy
                pass
        shutil.copy2(source, target, follow_symlinks=False)
        return "copied"
    except OSError:
        return ""


def remove_left_behind(root: Path) -> None:
    """The snapshots of sessions whose process is gone (killed with -9: nothing ran at its end)."""
    for folder in root.iterdir():
        try:
            if left_behind(folder, int(folder.name.split("-")[0])):
                shutil.rmtree(folder, ignore_errors=True)
        except (ValueError, OSError):
            continue


def put_away(snapshot: Path, lock: int | None) -> None:
    """A session's snapshot, once it ends: removed, then let go (nobody takes it for a dead one's meanwhile)."""
    shutil.rmtree(snapshot, ignore_errors=True)
    if lock is not None:
        os.close(lock)
