"""Edits that act later: files a program runs or obeys on its own, at some later moment the user does not connect
with this edit, and the files that instruct a coding agent. Such an edit is asked in every mode (`yes` and `edits`
too), with the reason in the question, and refused where nobody can be asked.

The failure it prevents is an edit that looks harmless in the log and runs code afterwards, outside the
session, its sandbox and its undo: four small files (HEAD, config with core.fsmonitor, objects/, refs/) turn a
folder into a git repository whose `config` git follows on the user's next `git status` (or a shell prompt that
shows the branch); a line added to a hook in `.husky/` runs at the next commit; a line in `.envrc` runs at the
next `cd`; a line in AGENTS.md sits in every later session's instructions. The rule, which docs/trust.md states
for users:
  - git's own folders and settings: a file named HEAD, commondir or gitdir anywhere (they make a folder a
    repository git works in); anything else in a folder that already looks like one (holds HEAD, objects/,
    refs/ or commondir); the files of git settings (.gitconfig, .gitmodules, .gitattributes, .lfsconfig,
    ~/.config/git/); and the hooks: the folder git runs hooks from (`git rev-parse --git-path hooks`, which
    follows core.hooksPath), .husky/, and the hook managers' settings (pre-commit, lefthook);
  - what a shell, direnv or mise runs when it starts or enters a folder, and what starts at login;
  - what an editor acts on when it opens the folder, and what Python runs at every start;
  - the instructions and settings of coding agents, plainagent's among them (AGENTS.md, CLAUDE.md, .cursor/).
Code that runs only when the user asks for it (a Makefile, a test, package.json's scripts) is an ordinary edit:
its diff is what the user reviews. Commands are not covered here: in mode `yes` a command may write these files
too (the kernel sandbox allows writes in the workspace); docs/trust.md says so.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from harness.sandbox.ignore_rules import run_git
from harness.sandbox.workspace import Workspace

# The names that make a folder a repository's own folder (git's is_git_directory: HEAD beside objects/ and
# refs/, or a commondir that points to them), and what lives in one.
STORE_MARKS = ("HEAD", "objects", "refs", "commondir")
STORE_PARTS = {"head", "config", "objects", "refs", "hooks", "info", "packed-refs", "commondir", "gitdir",
               "worktrees", "modules", "logs", "index", "branches", "description"}

GIT_RUNS = "git runs the programs it names (filters, diff and merge drivers, fsmonitor, hooks)"
# (patterns, why): a pattern matches the end of the file's real path, in any letter case; "*" crosses folders.
ACTING_LATER = [
    ((".gitconfig", ".gitmodules", ".gitattributes", ".lfsconfig", ".config/git/*"),
     f"git reads it as its settings, and {GIT_RUNS}"),
    ((".husky/*", ".pre-commit-config.yaml", "lefthook.yml", ".lefthook.yml", "lefthook-local.yml"),
     "it sets git hooks: what it says runs at the next commit or push"),
    ((".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile",
      ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".xprofile", ".xinitrc", ".xsessionrc",
      ".config/fish/*", ".config/autostart/*", ".config/systemd/user/*", ".config/environment.d/*"),
     "a shell or the desktop runs it when it starts or when you log in"),
    ((".envrc", "mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".config/mise/*"),
     "direnv or mise runs it when a shell enters this folder"),
    ((".vscode/tasks.json", ".vscode/settings.json", ".devcontainer/*", ".nvim.lua", ".nvimrc", ".exrc"),
     "an editor acts on it when it opens the folder (tasks that run on opening, the programs it starts)"),
    (("sitecustomize.py", "usercustomize.py", "site-packages/*.pth"),
     "Python runs it at every start when it lies on Python's path"),
    (("AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", ".cursorrules", ".windsurfrules",
      ".clinerules", ".github/copilot-instructions.md", ".cursor/*", ".claude/*", ".codex/*", ".gemini/*"),
     "it instructs coding agents (plainagent puts AGENTS.md into every session's instructions): one edit here "
     "speaks in every later session"),
]


def acts_later(ws: Workspace, full: Path) -> str:
    """Why an edit of the checked real path `full` is asked in every mode, in words for the question; "" for an
    ordinary edit."""
    name = full.name.casefold()
    if name in ("head", "commondir", "gitdir"):
        return (f"a file named {full.name} makes {place(ws, full.parent)} a repository git works in: git run there "
                f"(or a shell prompt that shows the branch) then follows the config file beside it, and {GIT_RUNS}")
    store = git_store_around(ws, full)
    if store is not None:
        return (f"{place(ws, store)} looks like a repository's own folder (it holds HEAD, objects/ or refs/): git "
                f"run there follows the files in it, and {GIT_RUNS}")
    tails = ["/".join(full.parts[start:]).casefold() for start in range(1, len(full.parts))]
    for patterns, why in ACTING_LATER:
        if any(fnmatch.fnmatchcase(tail, pattern.casefold()) for pattern in patterns for tail in tails):
            return why
    hooks = hooks_folder(full.parent)
    if hooks is not None and (full == hooks or full.is_relative_to(hooks)):
        return f"it is in the folder git runs hooks from ({hooks}): it runs at the next commit, merge or push"
    return ""


def git_store_around(ws: Workspace, full: Path) -> Path | None:
    """The folder inside the workspace that holds `full` as one of a repository's own parts (its config, refs/,
    hooks/...) and already holds the marks of one; None when there is none."""
    folder = full.parent
    while True:
        below = full.relative_to(folder).parts[0].casefold()
        if below in STORE_PARTS and any(ws.stat(folder / mark) is not None for mark in STORE_MARKS):
            return folder
        if folder == ws.root or not folder.is_relative_to(ws.root):
            return None
        folder = folder.parent


def hooks_folder(folder: Path) -> Path | None:
    """The real folder git runs hooks from for a file in `folder` (core.hooksPath, else .git/hooks); None outside
    a repository. The folder may not exist yet (a new file in new folders): git is asked from the nearest one."""
    while not folder.is_dir():
        folder = folder.parent
    answer = run_git(folder, ["rev-parse", "--git-path", "hooks"])
    if answer is None or answer.returncode != 0 or not answer.stdout.strip():
        return None
    return Path(os.path.realpath(folder / os.fsdecode(answer.stdout.rstrip(b"\n"))))


def place(ws: Workspace, folder: Path) -> str:
    """A folder as the question names it: "the workspace", or "the folder src/"."""
    relative = ws.relative(folder)
    return "the workspace" if relative == "." else f"the folder {relative}/"
