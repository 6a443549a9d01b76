"""Edits that act later: files a program runs or obeys on its own, at some later moment the user does not connect
with this edit, and the files that instruct a coding agent. Such an edit is asked in every mode (`yes` and `edits`
too), with the reason in the question, and refused where nobody can be asked.

The failure it prevents is an edit that looks harmless in the log and runs code afterwards, outside the
session, its sandbox and its undo: four small files (HEAD, config with core.fsmonitor, objects/, refs/) turn a
folder into a git repository whose `config` git follows on the user's next `git status` (or a shell prompt that
shows the branch); a line added to a hook in `.husky/` runs at the next commit; a line in `.bashrc` runs in the
next shell; a line in AGENTS.md sits in every later session's instructions. The rule, which docs/trust.md states
for users, looks at the path as the model named it and at the file it really is (a link's name and its target
both count), and at what git itself says:
  - git's own folders: a file named HEAD, commondir or gitdir anywhere (they make a folder a repository git
    works in); anything in a folder that holds a HEAD file; a repository's own parts (config, refs/, hooks/...)
    in a folder that holds objects/ or refs/;
  - git's settings: the files of ACTING_LATER's first row, any file git reads as its configuration here (asked of
    git: every file its configuration comes from, and every file an include names, even one not yet there), and
    any file whose text reads as git configuration that can name a program ([core], [alias], [filter "x"]...);
  - git's hooks: the folder git runs them from, from the file's repository and from the workspace's (asked of
    git: `rev-parse --git-path hooks`, which follows core.hooksPath, a global one too), husky's scripts beside
    husky's `_` folder, and the hook managers' settings;
  - ACTING_LATER's other rows: what a shell, direnv or mise runs when it starts or enters a folder, what starts at
    login, what an editor acts on when it opens the folder, what Python runs at every start, and the
    instructions and settings of coding agents, plainagent's among them;
  - a file with other names (hard links): one of them may be any of the above, and no path can tell.
Code that runs only when the user asks for it (a Makefile, a test, package.json's scripts) is an ordinary edit:
its diff is what the user reviews. What a command writes of these is look.py's: put back, and asked about.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

from harness.common.seam_types import ToolError
from harness.files.ignore_rules import run_git
from harness.files.workspace import Workspace

# The names that make a folder a repository's own folder (git's is_git_directory: HEAD beside objects/ and
# refs/, or a commondir that points to them), and what lives in one.
STORE_MARKS = (("objects", "refs"), ("commondir",))  # all of one group: a project's folder named objects/ is not
STORE_PARTS = {"head", "config", "config.worktree", "objects", "refs", "hooks", "info", "packed-refs", "commondir",
               "gitdir", "worktrees", "modules", "logs", "index", "branches", "description", "shallow"}
# A section of git's configuration that can name a program to run, or another file to read as configuration.
# As git reads it: after any blank, a byte-order mark or a carriage return; not a Markdown link ("[Core](…)").
GIT_SECTION = re.compile(r'(?im)^[\s\ufeff]*\[[ \t]*(core|alias|filter|diff|merge|include|includeif|credential|'
                         r'gpg|sequence|pager|uploadpack|receive|protocol|url|ssh|submodule|init)\b[^\]\n]*\]'
                         r'(?![(\[:])')
# The names git runs a hook by (githooks(5)), with or without an extension: a file so named is a hook wherever a
# repository's hooks folder, a template's, a link or an include makes it one ("update" alone is too common a name).
HOOK_NAMES = {"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
              "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
              "pre-push", "pre-receive", "proc-receive", "post-receive", "post-update", "reference-transaction",
              "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman",
              "post-index-change", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit"}

GIT_RUNS = "git runs the programs it names (filters, diff and merge drivers, fsmonitor, hooks)"
HOOKS = "it sets git hooks: what it says runs at the next commit or push"
# (patterns, why): a pattern matches the end of the file's path, in any letter case; "*" crosses folders.
ACTING_LATER = [
    ((".gitconfig", ".gitmodules", ".gitattributes", ".lfsconfig", ".config/git/*", ".jj/repo/config.toml",
      ".config/jj/*"),
     f"git (or jj) reads it as its settings, and {GIT_RUNS}"),
    ((".husky/*", ".huskyrc*", "husky.config.*", ".pre-commit-config.yaml", ".pre-commit-hooks.yaml", "lefthook.*",
      ".lefthook.*", "lefthook-local.*", ".lefthook-local.*", ".lefthook/*", ".config/lefthook.*", ".lintstagedrc*",
      "lint-staged.config.*", ".overcommit.yml", "commitlint.config.*", ".commitlintrc*"), HOOKS),
    ((".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".zshrc", ".zshenv",
      ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".login", ".logout", ".xonshrc",
      ".xprofile", ".xinitrc", ".xsession", ".xsessionrc", ".Xclients", ".pam_environment", ".screenrc",
      ".oh-my-zsh/custom/*", ".tmux.conf", ".wezterm.lua", ".config/tmux/*", ".config/fish/*", ".config/nushell/*",
      ".config/powershell/*", ".config/starship.toml", ".config/kitty/*", ".config/wezterm/*", ".config/autostart/*",
      ".config/systemd/user/*", ".config/environment.d/*", ".config/i3/*", ".config/sway/*", ".config/hypr/*",
      ".config/openbox/*", ".config/lxsession/*", ".config/plasma-workspace/*"),
     "a shell, a terminal or the desktop runs it when it starts or when you log in"),
    ((".envrc", ".direnvrc", "mise.toml", ".mise.toml", "mise.*.toml", ".mise.*.toml", ".mise/*", "mise/config.toml",
      ".config/mise/*", ".config/direnv/*"),
     "direnv or mise runs it when a shell enters this folder"),
    ((".vscode/tasks.json", ".vscode/settings.json", ".vscode/mcp.json", "*.code-workspace", ".devcontainer/*",
      ".devcontainer.json", ".idea/*", ".zed/*", ".helix/*", ".config/Code/User/*", ".config/zed/*",
      ".config/helix/*", ".nvim.lua", ".nvimrc", ".exrc", ".vimrc", ".gvimrc", ".lvimrc", ".vim/*", ".config/nvim/*",
      ".emacs", ".emacs.el", ".emacs.d/*", ".config/emacs/*", ".doom.d/*", ".spacemacs", ".dir-locals.el",
      ".config/kak/*"),
     "an editor acts on it when it starts or opens the folder (tasks that run on opening, the programs it starts)"),
    (("sitecustomize.py", "usercustomize.py", "site-packages/*.pth", "dist-packages/*.pth", ".pdbrc", ".pythonrc*",
      ".ipython/*", ".jupyter/*", ".irbrc", ".pryrc", ".Rprofile", ".Renviron", ".perldb", ".gdbinit",
      ".config/gdb/*", ".lldbinit", ".psqlrc", ".yarnrc", ".yarnrc.yml", "bunfig.toml", ".cargo/config",
      ".cargo/config.toml", ".config/go/env"),
     "a program runs it, or what it names, at every start (Python's start-up files, a debugger's or a console's, "
     "yarn's yarnPath, cargo's runner, go's -toolexec)"),
    (("AGENTS.md", "AGENT.md", "AGENTS.override.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", ".cursorrules",
      ".windsurfrules", ".clinerules", ".goosehints", ".rules", "opencode.json", ".github/copilot-instructions.md",
      ".github/instructions/*", ".github/prompts/*", ".github/agents/*", ".junie/*", ".mcp.json", ".aider.conf.yml",
      ".aider.model.*", ".cursor/*", ".claude/*", ".codex/*", ".gemini/*", ".continue/*", ".windsurf/*", ".roo/*",
      ".kiro/*", ".opencode/*"),
     "it instructs coding agents or starts their tools (plainagent puts AGENTS.md into every session's "
     "instructions): one edit here speaks in every later session"),
]


def acts_later(ws: Workspace, full: Path, text: str, named: Path | None = None, names: int = 1) -> str:
    """Why an edit that leaves `text` in the checked real path `full` is asked in every mode, in words for the
    question; "" for an ordinary edit. `named`: the path as the model named it, when a link leads elsewhere;
    `names`: how many names (hard links) the file has."""
    # The name the model used, the file it really is, and the names links give it (~/.bashrc -> dotfiles/bashrc).
    for path in dict.fromkeys([named or full, full, *links_to(full, [ws.root, Path.home(), Path.home() / ".config"])]):
        if why := by_name(ws, path, real=path == full):
            return why
    if found := GIT_SECTION.search(text):
        return (f"its text reads as git's configuration ({found.group().strip()}): read as a config or an include, "
                f"{GIT_RUNS}")
    if why := by_git(ws, full, named or full):
        return why
    if names > 1:
        return (f"it has {names} names (hard links), and an edit changes the file under all of them: one may be a "
                "file that acts later (a hook, AGENTS.md), which no path can show")
    return ""


def by_name(ws: Workspace, path: Path, real: bool) -> str:
    """The rules that read the path itself: git's own folders, and ACTING_LATER. `real`: the path is the file's
    real one, whose folders can be looked into (a name through a link is judged by its words alone)."""
    if path.name.casefold() in ("head", "commondir", "gitdir"):
        return (f"a file named {path.name} makes {place(ws, path.parent)} a repository git works in: git run there "
                f"(or a shell prompt that shows the branch) then follows the config file beside it"
                f"{beside(ws, path.parent) if real else ''}, and {GIT_RUNS}")
    if real and (store := git_store_around(ws, path)) is not None:
        return (f"{place(ws, store)} looks like a repository's own folder (it holds HEAD, or objects/ and refs/): git "
                f"run there follows the files in it, and {GIT_RUNS}")
    # Windows takes "AGENTS.md." and "AGENTS.md::$DATA" for AGENTS.md: such spellings are judged as it would.
    parts = [re.sub(r"(?i)::\$data$", "", part).rstrip(". ") or part for part in path.parts]
    tails = ["/".join(parts[start:]).casefold() for start in range(1, len(parts))]
    for patterns, why in ACTING_LATER:
        if any(fnmatch.fnmatchcase(tail, pattern.casefold()) for pattern in patterns for tail in tails):
            return why
    if stem(parts[-1]) in HOOK_NAMES:
        return (f"it is named like a git hook ({path.name}): in a hooks folder, or linked from one, it runs at the "
                "next commit, merge or push")
    return ""


def stem(name: str) -> str:
    """A file's name without its extensions, as a hook is named: "pre-commit.sh" -> "pre-commit"."""
    return name.split(".")[0].casefold()


def links_to(full: Path, folders: list[Path]) -> list[Path]:
    """The names the links in these folders give `full`: a link to it, or to a folder it is in. A file a link
    elsewhere leads to is that link too (a dotfiles repository's `bashrc`, which ~/.bashrc leads to)."""
    found = []
    for folder in dict.fromkeys(folders):
        try:
            with os.scandir(folder) as entries:
                links = [Path(entry.path) for entry in entries if entry.is_symlink()]
        except OSError:  # no such folder, or one we may not read
            continue
        for link in links:
            target = Path(os.path.realpath(link))
            if full == target or full.is_relative_to(target):
                found.append(link / full.relative_to(target))
    return found


def git_store_around(ws: Workspace, path: Path) -> Path | None:
    """The folder inside the workspace that holds `path` as one of a repository's own files: any file below a
    folder holding HEAD, or a repository's own part (config, refs/, hooks/...) below one holding objects/ and
    refs/, or commondir (a project's own folder named objects/ makes its neighbours no less ordinary). None: none
    does."""
    folder = path.parent
    while folder.is_relative_to(ws.root):
        below = path.relative_to(folder).parts[0].casefold()
        if has(ws, folder / "HEAD") or (below in STORE_PARTS and any(
                all(has(ws, folder / mark) for mark in group) for group in STORE_MARKS)):
            return folder
        if folder == ws.root:
            return None
        folder = folder.parent
    return None


def has(ws: Workspace, path: Path) -> bool:
    try:
        return ws.stat(path) is not None
    except ToolError:  # changed while it was looked at: ask rather than let it pass
        return True


def beside(ws: Workspace, folder: Path) -> str:
    """What the config file beside a HEAD says, briefly: it may have been written, unasked, before the HEAD that
    brings it to life."""
    config = folder / "config"
    try:
        if ws.stat(config) is None:
            return ""
        text = ws.read(config, 20_000).decode("utf-8", "replace")
    except ToolError:  # a folder, a link, gone: it says nothing to show
        return ""
    # What git acts on, not comments: 200 characters of comments could otherwise hide the fsmonitor line.
    said = " ".join(" ".join(line.split()) for line in text.splitlines() if line.strip()[:1] not in ("", "#", ";"))
    return f" (which holds: {said[:300]}{f' … {len(said) - 300:,} more characters' * (len(said) > 300)})" if said \
        else ""


def by_git(ws: Workspace, full: Path, named: Path) -> str:
    """The rules git itself answers, asked from the file's folder and from the workspace's root (a repository
    nested in the workspace's may hold the other's hooks)."""
    paths = {folded(full), folded(named)}  # in one letter case: on macOS "GitHooks" is the folder "githooks"
    for folder in [ws.root, *nested_repository(ws, full)]:
        hooks, configs = ask_git(folder)
        for found in hooks:
            if any(path == folded(found) or path.startswith(folded(found) + "/") for path in paths):
                return f"it is in a folder git runs hooks from ({found}): it runs at the next commit, merge or push"
            if links := links_to(full, [found]):
                return f"the hook {links[0].name} in {found} is a link to it: it runs at the next commit or push"
        if paths & {folded(config) for config in configs}:
            return f"git reads it as its configuration here (a config or an include of one), and {GIT_RUNS}"
    return ""


def folded(path: Path) -> str:
    return path.as_posix().casefold()


def nearest_folder(folder: Path) -> Path:
    """The folder itself, or the nearest one above it that exists (a new file may go into new folders)."""
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    return folder


def nested_repository(ws: Workspace, full: Path) -> list[Path]:
    """The file's folder, when a repository other than the workspace's may hold it (a `.git` between them): git
    answers the same from both otherwise, and each answer costs two processes."""
    folder = nearest_folder(full.parent)
    between = [folder, *folder.parents[:len(folder.relative_to(ws.root).parts) - 1]] if folder != ws.root else []
    return [folder] if any(os.path.lexists(step / ".git") for step in between) else []


def ask_git(folder: Path) -> tuple[set[Path], set[Path]]:
    """(the real folders git runs hooks from for `folder`, the real paths of the files git reads as configuration
    there). Hooks: its repository's (core.hooksPath, else .git/hooks), or a global core.hooksPath outside any
    repository, and with husky's `_` folder the scripts' folder above it. Configuration: the system's, the
    user's, the repository's and what they include, and every file an include names, there or not yet."""
    hooks, top = set(), folder
    answer = run_git(folder, ["rev-parse", "--show-cdup", "--git-path", "hooks"])
    if answer is not None and answer.returncode == 0 and answer.stdout.strip():
        *cdup, hooks_path = os.fsdecode(answer.stdout).rstrip("\n").split("\n")  # no cdup line in a bare repository
        top = folder / cdup[0] if cdup else folder  # where git reads its relative paths from
        hooks.add(Path(os.path.realpath(folder / hooks_path)))
    elif (answer := run_git(folder, ["config", "--get", "core.hooksPath"])) and answer.stdout.strip():
        hooks.add(Path(os.path.realpath(os.path.expanduser(os.fsdecode(answer.stdout.rstrip(b"\n"))))))
    hooks |= {found.parent for found in hooks if found.name == "_"}  # husky 9: `_/h` runs ../NAME
    configs = set()
    answer = run_git(top, ["config", "--list", "--show-origin", "--includes", "-z"])
    fields = os.fsdecode(answer.stdout).split("\0") if answer is not None and answer.returncode == 0 else []
    for origin, entry in zip(fields[::2], fields[1::2]):
        if origin.startswith("file:"):
            source = Path(os.path.realpath(top / os.path.expanduser(origin.removeprefix("file:"))))
            configs.add(source)
            key, _, value = entry.partition("\n")
            if re.fullmatch(r"include\.path|includeif\..*\.path", key, re.IGNORECASE | re.DOTALL):
                configs.add(Path(os.path.realpath(source.parent / os.path.expanduser(value))))
    return hooks, configs


def place(ws: Workspace, folder: Path) -> str:
    """A folder as the question names it: "the workspace", or "the folder src/"."""
    relative = ws.relative(folder) if folder.is_relative_to(ws.root) else str(folder)
    return "the workspace" if relative == "." else f"the folder {relative}/"
