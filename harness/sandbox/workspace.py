"""The sandbox every tool works in: which paths may be touched, which files hold secrets, what the walk
skips, the journal that lets /undo take back the agent's writes, and redaction of the API key.

`tools.py` calls this module and never decides these rules itself; this module knows nothing about the
tools (it must not import `tools.py`). The rules:
  - every path a tool reads, lists, searches or writes passes `Workspace.confine`, one gate: its real
    location (links followed) must be inside the root, neither its name nor its target's may look like a
    secret, and nothing under `.git/` is read or written (git commands through run_command are the way:
    git's store holds credentials in .git/config, and its own tools know how to read the rest);
  - the walk (`Workspace.walk`, used for listing, searching and suggestions) leaves out what git ignores
    in a repository (asking git), else what the top-level .gitignore names;
  - each write is journaled with the bytes before and after, so `Workspace.undo` can restore the file,
    and refuses when the file is no longer what the agent left.
Not covered: hard links (a hard link to a file outside is the file itself, and no path can tell), and
links inside directories reached through a symlinked directory (the walk does not follow those).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import subprocess
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.sandbox.documents import write_atomically
from harness.sandbox.guard import DEFAULT_RULES, Rule

# Directories that hold tools' output, not the project: listing or searching them only burns tokens.
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
             ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".eggs", ".next", ".parcel-cache"}

# Files that hold secrets, matched case-insensitively (on macOS and Windows `.ENV` is `.env` itself). A pattern
# matches the file's name; one with a "/" matches the path's last components (".aws/credentials" in any
# folder); one ending in "/**" matches every file under a folder of that name, at any depth.
SECRET_NAMES = [
    # dotenv files: .env.local, .envrc, prod.env
    ".env*", "*.env",
    # private keys and key stores
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.ppk",
    # ssh and gpg: keys, and everything else in their folders (configs name hosts and key files)
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".ssh/**", ".gnupg/**", "secring.gpg",
    # passwords and tokens in plain text
    ".netrc", "_netrc", ".pgpass", ".git-credentials", ".htpasswd", ".vault-token", ".s3cfg", ".boto",
    # repository configs: remote URLs with tokens, `http.extraheader = AUTHORIZATION: ...` (CI checkouts)
    ".git/config", ".hg/hgrc",
    # package registries: a token next to harmless settings (`_authToken=`, `password =`)
    ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
    ".dockercfg", ".docker/config.json",
    # cloud accounts: AWS, Azure, Google Cloud (user and service-account keys), GitHub CLI, Terraform Cloud
    ".aws/credentials", ".azure/**", "application_default_credentials.json", "credentials.db",
    "access_tokens.db", "credentials.json", "*service-account*.json", "*service_account*.json",
    "gh/hosts.yml", ".terraform.d/credentials.tfrc.json",
    # clusters
    ".kube/config", "kubeconfig", "*.kubeconfig", "kubeconfig.yaml", "kubeconfig.yml",
    # Terraform state and variables hold every secret a deployment used, in plain text
    "*.tfstate", "*.tfvars", "*.tfvars.json",
]
# A backup of a secret is the secret: key.pem.bak, .env~, terraform.tfstate.backup.
BACKUP_SUFFIXES = (".bak", ".backup", ".old", ".orig", ".save", ".swp", "~")
# Templates that document the variables without values: the model may read these.
NOT_SECRET_SUFFIXES = (".example", ".sample", ".template", ".dist")

REDACT_MIN_CHARS = 16  # shorter keys ("ollama", "EMPTY", "x") are placeholders, and text too common to blank
PIECE_MIN_CHARS = 4  # a piece of the key left at a cut is blanked from this long ("sk-p" on is worth hiding)
GIT_TIMEOUT = 10  # seconds for `git ls-files`; past it the walk falls back to reading .gitignore itself


class ToolError(Exception):
    """A tool could not do what was asked; the message tells the model why and what to do instead.
    Defined here, not in tools.py, because the sandbox's refusals are tool results too."""


class PathRefused(ToolError):
    """`Workspace.confine` refused a path; `reason` is the short form a listing shows next to the name."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


# Answers the user's question before a write or a command: (kind, title, preview) -> None to go ahead,
# or the reason for refusing ("" when the user gave none). kind is "edit" or "command".
Confirm = Callable[[str, str, str], "str | None"]


@dataclass
class Write:
    """One write the agent made, kept so /undo can take it back."""

    path: Path
    before: bytes | None  # None: the agent created the file
    after: bytes  # what the agent left: /undo refuses when the file no longer holds exactly this
    made_dirs: list[Path] = field(default_factory=list)  # folders created for a new file, deepest first


@dataclass
class Entry:
    """A path found by the walk."""

    path: Path  # where it is, as named (a link's own location, not its target)
    is_dir: bool
    note: str | None = None  # why a tool will not read it or look inside ("may hold secrets"), or None


@dataclass
class Workspace:
    """The directory the agent may work in, and the session state the tools share."""

    root: Path
    confirm: Confirm | None = None  # asked before each write and command (permissions.Permissions); None approves
    secret: str = ""  # the API key: redacted from every result, kept out of commands' environment
    journal: list[Write] = field(default_factory=list)  # every write, oldest first
    deny_rules: list[Rule] = field(default_factory=lambda: list(DEFAULT_RULES))  # commands never run (guard.py)
    subagent: Callable[[str], str] | None = None  # runs a delegate call's task: set by agent.Session (the loop)

    def __post_init__(self):
        self.root = Path(self.root).resolve()

    # --- paths ---

    def resolve(self, path: str) -> Path:
        """The real path of `path` as the model gave it (relative to the root, or absolute inside it)."""
        if not path.strip():
            raise ToolError("path is empty; give a path relative to the workspace root, e.g. \"src/app.py\".")
        if "\0" in path:
            raise ToolError(f"path contains a NUL character: {path!r}; give a plain file path.")
        named = Path(os.path.normpath(self.root / path))  # "a/../.env" is named .env, whatever "a" is
        return self.confine(named, real=follow_links(self.root / path, path), shown=path)

    def confine(self, named: Path, *, real: Path | None = None, shown: str = "") -> Path:
        """The one gate every path passes before a tool reads, lists, searches or writes it: its real
        location, or PathRefused. `named` is the absolute path as named, without "..": for a link, the link
        itself. `real` is where it leads, when the caller knows it already."""
        shown = shown or self.relative(named)
        real = real or follow_links(named, shown)  # follows every link, so none can lead outside unnoticed
        if not self.contains(real):
            raise PathRefused(f"{shown} is outside the workspace {self.root}; only paths inside it can be used.",
                              "leads outside the workspace")
        if is_secret(self.relative(named) if self.contains(named) else named.name):
            raise PathRefused(f"{shown} may hold secrets (API keys, private keys), so it is not read, searched "
                              "or edited. Ask the user if you need something from it.", "may hold secrets")
        if is_secret(self.relative(real)):  # a harmless name that leads to a secret: config.txt -> .env
            raise PathRefused(f"{shown} leads to {self.relative(real)}, which may hold secrets (API keys, "
                              "private keys), so it is not read, searched or edited.", "may hold secrets")
        if self.inside_git(named) or self.inside_git(real):
            raise PathRefused(f"{shown} is inside .git/, git's own store: it may hold credentials (remote URLs "
                              "with tokens, auth headers), and a write could corrupt the repository. Use git "
                              "commands through run_command instead (git log, git show, git status).",
                              "inside .git/")
        return real

    def contains(self, path: Path) -> bool:
        return path == self.root or path.is_relative_to(self.root)

    def inside_git(self, path: Path) -> bool:
        # Case-insensitive: on macOS and Windows ".GIT/config" is ".git/config".
        return self.contains(path) and ".git" in (part.lower() for part in path.relative_to(self.root).parts)

    def relative(self, full: Path) -> str:
        """How the model should name `full`: relative to the root, with '/'."""
        return full.relative_to(self.root).as_posix() if full != self.root else "."

    def walk(self, top: Path) -> Iterator[Entry]:
        """The entries under `top`, breadth-first (all of one level before the next; each folder sorted),
        skipping SKIP_DIRS, virtualenvs and what git ignores. Each entry has passed `confine`: a refused
        one says why in its note. A link to a folder is shown, not followed."""
        rules = IgnoreRules(self.root)
        # A folder git ignores, asked for by name (list_files("build")): show what is in it all the same.
        asked_for_ignored = top != self.root and rules.ignores(self.relative(top), top.name, is_dir=True)
        folders = deque([top])
        while folders:
            try:
                with os.scandir(folders.popleft()) as scan:
                    items = sorted(scan, key=lambda item: item.name)
            except OSError:  # unreadable (permissions) or gone since it was listed: nothing to show in it
                continue
            for item in items:
                path, is_dir = Path(item.path), item.is_dir(follow_symlinks=False)
                if (is_dir and skip_dir(path)) or (
                        not asked_for_ignored and rules.ignores(self.relative(path), path.name, is_dir=is_dir)):
                    continue
                if item.is_symlink():
                    yield self.walked_link(path)
                elif is_dir:
                    yield Entry(path, True)
                    folders.append(path)
                else:
                    yield self.walked_file(path)

    def walked_file(self, path: Path) -> Entry:
        try:
            self.confine(path, real=path)  # a plain file in a real folder is where its name says
        except PathRefused as refusal:
            return Entry(path, False, note=refusal.reason)
        return Entry(path, False)

    def walked_link(self, path: Path) -> Entry:
        try:
            real = self.confine(path)
        except PathRefused as refusal:
            return Entry(path, False, note=refusal.reason)
        if real.is_dir():
            return Entry(path, True, "a link to a folder: not followed; list its target instead")
        if not real.exists():
            return Entry(path, False, "a broken link: what it leads to does not exist")
        return Entry(path, False)

    # --- writes, and taking them back ---

    def approve(self, kind: str, title: str, preview: str) -> None:
        """Ask the user before a write or a command; a refusal becomes a ToolError with their reason."""
        if self.confirm is None:
            return
        refusal = self.confirm(kind, title, preview)
        if refusal is not None:
            raise ToolError(f"Not approved: {title}. {refusal}")

    def write(self, full: Path, data: bytes, mode: int, before: bytes | None) -> None:
        """Write atomically, making missing folders, and journal the bytes before and after for /undo."""
        made_dirs = []
        try:
            for folder in reversed([parent for parent in full.parents if not parent.exists()]):
                folder.mkdir()
                made_dirs.insert(0, folder)
            write_atomically(full, data, mode)
        except OSError as error:
            remove_empty(made_dirs)
            raise ToolError(f"could not write {self.relative(full)}: {error.strerror or error}.") from None
        self.journal.append(Write(full, before, data, made_dirs))

    def undo(self) -> str:
        """Take back the agent's last write, in one line for the user (and the model): restore the bytes
        before, or remove a file it created. Refuses when the file has changed since, so the user's own
        edits are never lost; a refused write stays in the journal, for /undo to retry once it is fixed."""
        if not self.journal:
            return "Nothing to undo."
        last = self.journal[-1]
        name = self.relative(last.path)
        try:
            now = last.path.read_bytes() if last.path.is_file() else None
        except OSError as error:
            return f"Could not undo the last write to {name}: cannot read it ({error.strerror or error})."
        if now == last.before:  # the user took it back already (a created file deleted, an edit reverted)
            self.journal.pop()
            remove_empty(last.made_dirs)
            return f"Nothing to undo in {name}: it is already as it was before the agent's last write."
        if now != last.after:
            change = "was removed" if now is None else "has changed"
            return (f"Not undone: {name} {change} since the agent wrote it (by you or a command), and undoing "
                    f"would lose that. Put it back as the agent left it to undo, or fix it by hand.")
        try:
            if last.before is None:
                last.path.unlink()
                remove_empty(last.made_dirs)
            else:
                write_atomically(last.path, last.before, last.path.stat().st_mode & 0o7777)
        except OSError as error:
            return f"Could not undo the last write to {name}: {error.strerror or error}."
        self.journal.pop()
        if last.before is None:
            return f"Undone: removed {name}, which the agent had created."
        return f"Undone: {name} is back as it was before the agent's last edit."

    # --- the API key ---

    def redact(self, text: str, *, cut_before: bool = False, cut_after: bool = False) -> str:
        """The text with the API key blanked out, so no tool result ever shows it to the model. Redact before
        cutting anything out: a cut through the key would leave its first half to show. Where a text was
        already cut (a command's output, kept in a head and a tail), `cut_before` and `cut_after` say it
        starts or ends at a cut, and a piece of the key there is blanked too."""
        if not self.hides_secret():
            return text
        text = text.replace(self.secret, "[REDACTED]")
        for size in range(len(self.secret) - 1, PIECE_MIN_CHARS - 1, -1):  # the longest piece first
            if cut_after and text.endswith(self.secret[:size]):
                text, cut_after = text[:-size] + "[REDACTED]", False
            if cut_before and text.startswith(self.secret[-size:]):
                text, cut_before = "[REDACTED]" + text[size:], False
        return text

    def leaks(self, text: str) -> bool:
        """Whether `text` holds the API key (a command's environment variable, for instance)."""
        return self.hides_secret() and self.secret in text

    def hides_secret(self) -> bool:
        # Real keys are long (OpenAI's 51+ characters, DeepSeek's 35, Mistral's 32); a short value such as
        # "ollama", "EMPTY" or "x" is a local server's placeholder, and blanking it would corrupt every file
        # and output that happens to hold those letters.
        return len(self.secret) >= REDACT_MIN_CHARS


def follow_links(path: Path, shown: str) -> Path:
    """Where `path` really is, every link followed; PathRefused for links that loop (a -> b, b -> a), which
    lead to no file at all."""
    try:
        real = path.resolve()
    except RuntimeError:  # Python before 3.13 raises "Symlink loop from ..."
        real = None
    except OSError as error:  # ELOOP from the system
        if error.errno != errno.ELOOP:
            raise
        real = None
    if real is None or real.is_symlink():  # 3.13 and later stop at the looping link instead of raising
        raise PathRefused(f"{shown} goes through a loop of symbolic links (a link that leads back to itself), "
                          "so it leads to no file. Ask the user to fix or remove the link.",
                          "a link loop: it leads back to itself, to no file")
    return real


def is_secret(path: str) -> bool:
    """Whether a file may hold secrets, by its path relative to the root (or its name): ".env" -> True."""
    parts = without_backup_suffixes(path.lower()).split("/")
    for pattern in SECRET_NAMES:
        if pattern.endswith("/**") and any(fnmatch.fnmatchcase(part, pattern[:-3]) for part in parts[:-1]):
            return True
    if parts[-1].endswith(NOT_SECRET_SUFFIXES):
        return False
    for pattern in SECRET_NAMES:
        tail = "/".join(parts[-(pattern.count("/") + 1):])
        if fnmatch.fnmatchcase(tail, pattern):
            return True
    return False


def without_backup_suffixes(path: str) -> str:
    """"key.pem.bak~" -> "key.pem"."""
    while suffix := next((suffix for suffix in BACKUP_SUFFIXES if path.endswith(suffix)), ""):
        path = path[: -len(suffix)]
    return path


def skip_dir(path: Path) -> bool:
    """Folders no one wants listed: dependencies, caches, build metadata, virtualenvs."""
    return path.name in SKIP_DIRS or path.name.endswith(".egg-info") or (path / "pyvenv.cfg").exists()


def remove_empty(folders: list[Path]) -> None:
    """Remove these folders, deepest first, while they are empty: never a folder holding anything."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (the user put something there), or already gone
            return


# --- ignore rules ---


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
    # core.fsmonitor names a program git would run: a prepared .git/config must not run one by our hand.
    command = ["git", "-c", "core.fsmonitor=false", "ls-files", "--others", "--ignored", "--exclude-standard",
               "--directory", "-z"]
    try:
        listed = subprocess.run(command, cwd=root, capture_output=True, stdin=subprocess.DEVNULL, timeout=GIT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    ignored = {path.rstrip("/") for path in os.fsdecode(listed.stdout).split("\0") if path}  # "build/" -> "build"
    if listed.returncode != 0 or "." in ignored:
        return None
    return ignored


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
