"""What the walk leaves out when it lists, searches or suggests files: tools' folders, and what git ignores.

The failure it prevents is the model's context filled with what is not the project: node_modules,
caches, virtualenvs and build output cost tokens on every listing and search, and crowd out the files
that matter. In a git repository git itself is asked (every .gitignore, negations, .git/info/exclude, the
user's global excludes), so the walk shows what `git status` would; elsewhere the top-level .gitignore is
read, simplified, and an allow-list it cannot read (`/*` then `!/src/`) is noted rather than hiding
everything in silence. A folder git ignores is still walked when it is asked for by name
(`list_files("build")`). Secret files are kept out by `secret_files.py`, not here.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path

from harness.common.programs import find_program, trusted_path

# Directories that hold tools' output, not the project: listing or searching them only burns tokens.
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
             ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".eggs", ".next", ".parcel-cache"}
GIT_TIMEOUT = 10  # seconds for `git ls-files`; past it the walk falls back to reading .gitignore itself


def skip_dir(path: Path) -> bool:
    """Folders no one wants listed: dependencies, caches, build metadata, virtualenvs."""
    return path.name in SKIP_DIRS or path.name.endswith(".egg-info") or (path / "pyvenv.cfg").exists()


class IgnoreRules:
    """What the walk leaves out. In a git repository, git's own answer (every .gitignore, negations,
    .git/info/exclude, the user's global excludes); elsewhere, the top-level .gitignore, simplified."""

    def __init__(self, root: Path):
        self.git_ignores = paths_git_ignores(root)
        self.patterns = gitignore_patterns(root) if self.git_ignores is None else []
        # An allow-list (`/*` then `!/src/`) read without its negations hides everything: say so when it does.
        self.negations_skipped = self.git_ignores is None and any(
            line.startswith("!") for line in gitignore_lines(root))

    def ignores(self, relative: str, name: str, *, is_dir: bool) -> bool:
        if self.git_ignores is None:
            return is_ignored(relative, name, self.patterns, is_dir=is_dir)
        parts = relative.split("/")
        return any("/".join(parts[:n]) in self.git_ignores for n in range(1, len(parts) + 1))


def paths_git_ignores(root: Path) -> set[str] | None:
    """The untracked paths git ignores under `root`, relative to it (a folder ignored as a whole is one
    path); None where git is missing, `root` is not in a repository, or `root` itself is ignored by the
    repository around it (git's answer would hide everything). Asking for what is ignored, not for what is
    shown, keeps empty folders visible and the answer short: node_modules/ is one line."""
    listed = run_git(root, ["ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z"])
    if listed is None:
        return None
    ignored = {path.rstrip("/") for path in os.fsdecode(listed.stdout).split("\0") if path}  # "build/" -> "build"
    if listed.returncode != 0 or "." in ignored:
        return None
    return ignored


def run_git(folder: Path, arguments: list[str]) -> subprocess.CompletedProcess | None:
    """git, asked about `folder` by the agent itself (its output in bytes), or None when there is no git or it
    could not run. This git runs in the agent's own process, outside the commands' kernel boundary, on a
    repository a command may have prepared: nothing in its configuration may make git run a program.
    core.fsmonitor names one; a "promisor" remote of a partial clone is fetched from when an object is missing,
    and its uploadpack (or core.sshCommand) runs a program: no transport at all (protocol.allow=never,
    GIT_NO_LAZY_FETCH from git 2.45). Nor may the git be one a command wrote (`.venv/bin/git`, first on PATH):
    it is found outside every folder commands write in (programs.py), or there is no git."""
    git = find_program("git")
    if git is None:  # no git (that may be run): do not start a process only to learn it (each walk asks)
        return None
    command = [git, "-c", "core.fsmonitor=false", "-c", "protocol.allow=never", *arguments]
    # Without the key: a process's starting environment is readable by every other process of the user. And with
    # PATH's trusted entries only, for what git itself starts.
    env = {name: value for name, value in os.environ.items() if name != "OPENAI_API_KEY"} | {
        "GIT_NO_LAZY_FETCH": "1", "PATH": trusted_path()}
    try:
        return subprocess.run(command, cwd=folder, env=env, capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=GIT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None


def gitignore_patterns(root: Path) -> list[str]:
    """The top-level .gitignore's patterns (negations `!` are not supported and are skipped)."""
    return [line.strip() for line in gitignore_lines(root) if line.strip() and not line.startswith(("#", "!"))]


def gitignore_lines(root: Path) -> list[str]:
    try:
        return (root / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def is_ignored(relative: str, name: str, patterns: list[str], *, is_dir: bool) -> bool:
    """Git's rules, simplified: a pattern with an inner '/' is anchored at the root, others match any name."""
    for pattern in patterns:
        if pattern.endswith("/"):
            if not is_dir:
                continue
            pattern = pattern.rstrip("/")
        pattern = pattern.removeprefix("**/")
        if "/" in pattern:
            if fnmatch.fnmatch(relative, pattern.lstrip("/")):
                return True
        elif fnmatch.fnmatch(name, pattern):
            return True
    return False
