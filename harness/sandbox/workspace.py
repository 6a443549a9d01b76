"""The sandbox every tool works in: which paths may be touched, the walk that lists them, the journal that
lets /undo take back the agent's writes, and the session's API key, kept out of every result.

The failures it prevents: a tool reaching outside the workspace (a `..`, an absolute path, a link that
leads out), a secret read or overwritten, and a write of the agent's that the user cannot take back.
`tools.py` calls this module and never decides these rules itself; this module knows nothing about the
tools (it must not import `tools.py`). The rules:
  - every path a tool reads, lists, searches or writes passes `Workspace.confine`, one gate: its real
    location (links followed) must be inside the root, neither its name nor its target's may look like a
    secret (`secret_files.py`), and nothing under `.git/` is read or written (git commands through
    run_command are the way: git's store holds credentials in .git/config, and its own tools know how to
    read the rest);
  - the walk (`Workspace.walk`, used for listing, searching and suggestions) leaves out what
    `ignore_rules.py` says: tools' folders, and what git ignores;
  - each write is journaled with the bytes before and after, so `Workspace.undo` can restore the file,
    and refuses when the file is no longer what the agent left;
  - every result is redacted with the session's key, by the one rule of `redaction.py`.
Not covered: hard links (a hard link to a file outside is the file itself, and no path can tell), and
links inside directories reached through a symlinked directory (the walk does not follow those).
"""

from __future__ import annotations

import errno
import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.sandbox.documents import write_atomically
from harness.sandbox.guard import DEFAULT_RULES, Rule
from harness.sandbox.ignore_rules import IgnoreRules, skip_dir
from harness.sandbox.redaction import leaks, redact
from harness.sandbox.secret_files import is_secret


class ToolError(Exception):
    """A tool could not do what was asked; the message tells the model why and what to do instead.
    Defined here, not in tools.py, because the sandbox's refusals are tool results too."""


class PathRefused(ToolError):
    """`Workspace.confine` refused a path; `reason` is the short form a listing shows next to the name."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


# Answers the user's question before a write or a command: (kind, title, preview) -> None to go ahead,
# or the reason for refusing ("" when the user gave none). kind is "edit", "command" or "fetch".
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
    fetch_allow: frozenset[str] = frozenset()  # hosts web_fetch reaches unasked, private ones too (fetch.py)

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

    # --- the API key (the rule is redaction.py's; the workspace holds the session's key) ---

    def redact(self, text: str, *, cut_before: bool = False, cut_after: bool = False) -> str:
        """The text with the session's API key blanked out, so no tool result ever shows it to the model."""
        return redact(text, self.secret, cut_before=cut_before, cut_after=cut_after)

    def leaks(self, text: str) -> bool:
        """Whether `text` holds the API key (a command's environment variable, for instance)."""
        return leaks(text, self.secret)


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


def remove_empty(folders: list[Path]) -> None:
    """Remove these folders, deepest first, while they are empty: never a folder holding anything."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (the user put something there), or already gone
            return


