"""Files that act later, written by a command: a look before and after each command, what changed put back, and
the user asked, in every mode, with the diff.

The failure it prevents: `edit_file` asks before an edit that acts later (acts_later.py), in every mode; a command in
mode `yes` did not. Tried: `git init sub` and a `core.fsmonitor` in sub/.git/config (run on the user's next `git
status` there), a `.git/hooks/pre-commit`, an AGENTS.md the next session obeyed. Where the kernel makes
namespaces, what exists of these is bound read-only to commands (namespaces.py); what does not exist yet (a new
repository, a new AGENTS.md) cannot be bound, and without namespaces nothing is. So around each command:
  - before: the watched files' bytes, modes and links: the instruction files at the workspace's root
    (INSTRUCTION_FILES: .husky/, .cursorrules, ...) and an agent's anywhere (AGENT_FILES), and in every repository
    in the workspace or around it (a .git folder or file, a bare one) its config, commondir and hooks; found by
    a walk of at most MAX_FOLDERS folders, breadth first;
  - after: each difference is put back as it was (the new version moved aside to the state folder's put-aside/,
    a new repository's `.git` whole) and the user asked, once for the command, whether to keep what it wrote.
    Yes puts it back in place; no, or nobody to ask (-p without a terminal), leaves it aside, and the model is
    told where. Nothing the command started runs on after it (lifetime.py), so nothing slips a change in after.
Measured in bench/look.py.
"""

from __future__ import annotations

import collections
import difflib
import functools
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from harness.commands.landlock import repository_outside
from harness.commands.namespaces import INSTRUCTION_FILES
from harness.common.directories import state_dir
from harness.common.programs import find_program

MAX_FOLDERS = 20_000  # folders walked for new repositories at most: a bigger workspace is looked at that far
AGENT_FILES = {"AGENTS.md", "AGENTS.override.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md"}  # in any folder
MAX_KEPT = 1 << 20  # bytes of a watched file kept to put back; a bigger one is moved aside whole instead
WHY = ("outside the walls: git runs what its config and hooks name at your next git command there, and instruction "
       "files go into the next session's prompt; it is put back as it was until you say yes")


class Look:
    """The look around each command, for one workspace; `ask` is the workspace's Confirm (kind "edit", with a
    reason: asked in every mode)."""

    def __init__(self, workspace: Path, ask=None, outside: list[Path] | None = None):
        self.root = Path(workspace)
        self.ask = ask
        self.outside = repository_outside(self.root) if outside is None else outside  # a monorepo's .git
        self.seen: dict[Path, tuple | None] = {}

    def before(self) -> None:
        self.seen = self.watched()

    def after(self, ask: bool = True) -> str | None:
        """The note for the command's result when it changed what acts later; None when it did not. `ask`: False
        after Ctrl-C (put back, nobody asked)."""
        now = self.watched()
        changed = [path for path in dict.fromkeys([*self.seen, *now])
                   if significant(path, self.seen.get(path)) != significant(path, now.get(path))]
        new_repositories = [path for path, kept in now.items() if kept == ("repository",) and path not in self.seen]
        # What acts in a repository the command made: the whole .git goes aside, not its config alone.
        changed = list(dict.fromkeys(next((git for git in new_repositories if path.is_relative_to(git)), path)
                                     for path in changed))
        if not changed:
            self.seen = now
            return None
        folder = self.put_aside_folder()
        preview = "\n".join(self.put_back(path, now.get(path), folder) for path in changed)
        names = ", ".join(self.shown(path) + (" (a new repository, whole)" if now.get(path) == ("repository",) else "")
                          for path in changed)
        answer = self.ask("edit", f"keeping what the command wrote: {names}", preview, WHY) if ask and self.ask else \
            "nobody was asked"
        if answer is None:  # kept: each back where the command put it
            for path in changed:
                self.restore_from(folder, path)
            self.seen = self.watched()
            return f"(plainagent: the command changed {names}, which act later; the user kept the changes.)"
        self.seen = self.watched()
        return (f"(plainagent: the command changed {names}, which act later outside the walls; they were put back as "
                f"they were, and what the command wrote is in {folder}: only the user can keep it ({answer}).)")

    # --- what is watched ---

    def watched(self) -> dict[Path, tuple | None]:
        """Each watched path: ("repository",) for a .git folder or file, else what it holds (kind, bytes, mode)."""
        found: dict[Path, tuple | None] = {}
        repositories, instructions = self.walk()
        for path in [*instructions, *(path for name in INSTRUCTION_FILES for path in files_under(self.root / name))]:
            found[path] = fingerprint(path)
        for git in [*repositories, *self.outside]:
            found[git] = ("repository",)
            for path in git_parts(git):
                found[path] = fingerprint(path)
        return found

    def walk(self) -> tuple[list[Path], list[Path]]:
        """The repositories in the workspace (a .git folder or file; a folder that is a bare one: HEAD, objects/,
        refs/) and the instruction files some agent reads in any folder (AGENT_FILES): breadth first, the shallow
        folders before the deep ones, MAX_FOLDERS at most, every folder but a .git's insides."""
        repositories, instructions, n_folders = [], [], 0
        folders, root = collections.deque([str(self.root)]), str(self.root)
        while folders and n_folders < MAX_FOLDERS:  # names as strings, and no stat: the listing says what is a folder
            folder = folders.popleft()
            n_folders += 1
            try:
                with os.scandir(folder) as listing:
                    entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
            except OSError:
                continue
            names = {name for name, _ in entries}
            if "HEAD" in names and "objects" in names and "refs" in names and folder != root:  # a bare repository
                repositories.append(Path(folder))
                continue
            if ".git" in names:
                repositories.append(Path(folder, ".git"))
            instructions += [Path(folder, name) for name in AGENT_FILES & names]
            folders.extend(f"{folder}{os.sep}{name}" for name, is_dir in entries if is_dir and name != ".git")
        return repositories, instructions

    # --- putting back ---

    def put_aside_folder(self) -> Path:
        folder = state_dir() / "put-aside" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        n = 0
        while (chosen := folder.with_name(f"{folder.name}-{n}" if n else folder.name)).exists():
            n += 1
        chosen.mkdir(parents=True, mode=0o700)
        return chosen

    def put_back(self, path: Path, now: tuple | None, folder: Path) -> str:
        """`path` as it was before the command; what the command left there moved into `folder`. Its diff."""
        before = self.seen.get(path)
        if os.path.lexists(path):
            target = folder / self.relative(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(path), str(target))
        if before is not None and before[0] != "repository":
            write(path, before)
        return describe(self.shown(path), before, now)

    def restore_from(self, folder: Path, path: Path) -> None:
        kept = folder / self.relative(path)
        if os.path.lexists(kept):
            if os.path.lexists(path) and not os.path.isdir(path):
                os.unlink(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(kept), str(path))

    def relative(self, path: Path) -> Path:
        return path.relative_to(self.root) if path.is_relative_to(self.root) else Path("outside", *path.parts[1:])

    def shown(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)


# What of git's configuration is ordinary and names no program: everything else counts (an fsmonitor, an alias,
# a filter, remote.X.uploadpack, tar.X.command, a pager, an include, ...), as a list of what is safe cannot miss
# a new way to run something. Section -> its harmless keys; None: all of them; a subsection ("merge.X.driver")
# is harmless only where HARMLESS_SUBSECTIONS says so.
HARMLESS = {"core": {"repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase",
                     "precomposeunicode", "symlinks", "autocrlf", "eol", "safecrlf", "quotepath", "abbrev"},
            "user": None, "author": None, "committer": None, "extensions": None, "pull": None, "color": None,
            "advice": None, "status": None, "log": None, "rerere": None, "i18n": None, "index": None, "gc": None,
            "init": {"defaultbranch"}, "push": {"default", "autosetupremote", "followtags"},
            "fetch": {"prune", "prunetags"}, "rebase": {"autostash", "autosquash", "updaterefs"},
            "merge": {"conflictstyle", "ff", "log"}, "commit": {"gpgsign", "verbose"}, "tag": {"gpgsign", "sort"}}
HARMLESS_SUBSECTIONS = {"remote": {"url", "fetch", "pushurl", "tagopt", "prune", "mirror", "push"},
                        "branch": {"remote", "merge", "rebase", "pushremote", "description"}}


def significant(path: Path, kept: tuple | None):
    """What of a watched path counts: a git config's settings that are not HARMLESS (a remote or a user name added
    is ordinary work), a repository's presence not at all (its files count), else all it holds."""
    if kept == ("repository",):
        return None
    if path.name in ("config", "config.worktree") and (kept is None or kept[0] == "file"):
        return acting_settings(kept[1]) if kept else ()
    return kept


@functools.lru_cache(maxsize=256)  # one parse for each text: the same config is looked at before and after
def acting_settings(text: bytes) -> tuple[str, ...]:
    """The settings of a git config file that are not HARMLESS, as git itself reads them (`git config --file
    --list`: its comments, quotes, line continuations and carriage returns are git's to know); the whole text
    when git cannot say (no git outside the walls, or not a config git reads)."""
    git = find_program("git")
    if git is None:
        return (text.decode("utf-8", "replace"),)
    with tempfile.NamedTemporaryFile(prefix="plainagent-config-") as file:
        file.write(text)
        file.flush()
        done = subprocess.run([git, "config", "--file", file.name, "--no-includes", "--list", "--null"],
                              capture_output=True, env={"PATH": os.defpath, "GIT_CONFIG_NOSYSTEM": "1",
                                                        "HOME": os.devnull}, timeout=10)
    if done.returncode != 0:
        return (text.decode("utf-8", "replace"),)
    acting = []
    for entry in filter(None, done.stdout.split(b"\0")):
        name = entry.split(b"\n", 1)[0].decode("utf-8", "replace").lower()
        section, *middle, key = name.split(".")
        allowed = HARMLESS_SUBSECTIONS.get(section, set()) if middle else HARMLESS.get(section, set())
        if allowed is not None and key not in allowed:
            acting.append(entry.decode("utf-8", "replace"))
    return tuple(acting)


def git_parts(git: Path) -> list[Path]:
    """What git obeys in a repository: for a .git folder, or the folder a .git file leads to ("gitdir: X"), and the
    common folder its `commondir` names: config, config.worktree, commondir, the hooks (not the samples: never
    run), and the config of its submodules (modules/) and worktrees; those that exist."""
    folders = [git]
    if os.path.isfile(git) and not os.path.islink(git):
        try:
            line = git.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            line = ""
        folders = [(git.parent / line.removeprefix("gitdir:").strip()).resolve()] if line.startswith("gitdir:") else []
    for folder in list(folders):
        try:
            common = (folder / "commondir").read_text(encoding="utf-8", errors="replace").strip()
            folders.append((folder / common).resolve())
        except OSError:
            pass
    parts = []
    for folder in dict.fromkeys(folders):
        if not os.path.isdir(folder):
            continue
        hooks = [path for path in files_under(folder / "hooks") if path.suffix != ".sample"]
        parts += [folder / "config", folder / "config.worktree", folder / "commondir", *hooks,
                  *folder.glob("modules/**/config"), *folder.glob("worktrees/*/config.worktree"),
                  *folder.glob("worktrees/*/commondir")]
    return [path for path in dict.fromkeys(parts) if os.path.lexists(path)]


def files_under(path: Path) -> list[Path]:
    if os.path.isdir(path) and not os.path.islink(path):
        return [Path(folder, name) for folder, _, names in os.walk(path) for name in names] or [path]
    return [path] if os.path.lexists(path) else []


def fingerprint(path: Path) -> tuple | None:
    try:
        info = os.lstat(path)
        if os.path.islink(path):
            return ("link", os.readlink(path), 0)
        if os.path.isdir(path):
            return ("folder", b"", info.st_mode & 0o7777)
        if info.st_size > MAX_KEPT:
            return ("big", (info.st_size, info.st_mtime_ns, info.st_ino), info.st_mode & 0o7777)
        with open(path, "rb") as file:
            return ("file", file.read(), info.st_mode & 0o7777)
    except OSError:
        return None


def write(path: Path, kept: tuple) -> None:
    """A watched file as it was (a big one cannot be: it stays aside, and its place empty)."""
    kind, data, mode = kept
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "link":
        os.symlink(data, path)
    elif kind == "folder":
        path.mkdir(mode=mode, exist_ok=True)
    elif kind == "file":
        with open(path, "wb") as file:
            file.write(data)
        os.chmod(path, mode)


def describe(name: str, before: tuple | None, now: tuple | None) -> str:
    """The change to one watched path, as the question shows it: a new repository, or the diff."""
    if now == ("repository",):
        return f"{name}: a new git repository whose config or hooks would run on your next git command in it"
    as_text = lambda kept: kept[1].decode("utf-8", "replace").splitlines() if kept and kept[0] == "file" else []  # noqa: E731
    what = "made" if before is None else "removed" if now is None else "changed"
    mode = f" (mode {oct(before[2])} -> {oct(now[2])})" if before and now and before[2] != now[2] else ""
    diff = list(difflib.unified_diff(as_text(before), as_text(now), f"{name} (before)", f"{name} (the command's)",
                                     lineterm=""))
    return "\n".join([f"{name}: {what}{mode}", *diff[:60], *(["..."] if len(diff) > 60 else [])])
