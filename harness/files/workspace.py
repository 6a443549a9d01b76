"""The sandbox every tool works in: which paths may be touched, the walk that lists them, the journal that
lets /undo take back the agent's writes, and the session's API key, kept out of every result.

The failures it prevents: a tool reaching outside the workspace (a `..`, an absolute path, a link that
leads out), a secret read or overwritten, the agent reading its own transcripts, and a write of the agent's
that loses the user's work or that the user cannot take back. `tools.py` calls this module and never decides
these rules itself; this module knows nothing about the tools (it must not import `tools.py`). The rules:
  - every path a tool reads, lists, searches or writes passes `Workspace.confine`, one gate: its real
    location (links followed) must be inside the root, neither its name nor its target's may look like a
    secret (`secret_files.py`), it must not be plainagent's own (the state and config folders, wherever they
    are, and a --log transcript: `-C ~` must not let a search quote the session), and nothing under `.git/`
    is read or written (git commands through run_command are the way: git's store holds credentials in
    .git/config, and its own tools know how to read the rest);
  - what passed the gate is then used by its real path and nothing else: read, listed and written through
    directory descriptors that follow no link, from the root opened once (`open_beneath.py`), so nothing swapped in
    after the check is used, the root itself included;
  - the walk (`Workspace.walk`, used for listing, searching and suggestions) leaves out what
    `ignore_rules.py` says: tools' folders, and what git ignores;
  - a write happens only if the file still holds what the edit was made from (or, for a new file, nothing is
    there): an approval is for the change the user saw, never over an edit they made meanwhile;
  - each write is journaled with the bytes before and after, so `Workspace.undo` can restore the file,
    and refuses when the file is no longer what the agent left;
  - every result is redacted with the session's key, by the one rule of `redaction.py`, and has values shaped
    like credentials withheld (`secret_shapes.py`), before anything is cut or searched.
Not covered: hard links (a hard link to a file outside is the file itself, and no path can tell: it is read,
and written in place, like any file; the question says when a file has other names), and links inside
directories reached through a symlinked directory (the walk does not follow those).
"""

from __future__ import annotations

import errno
import json
import os
import unicodedata
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.common.directories import config_dir, state_dir
from harness.common.redaction import Secret
from harness.common.seam_types import ToolError
from harness.files import open_beneath
from harness.files.ignore_rules import IgnoreRules, skip_dir
from harness.files.open_beneath import Changed
from harness.files.secret_files import is_secret
from harness.modes.permissions import Confirm

if TYPE_CHECKING:  # what the workspace carries for commands (harness/commands/), which use it: named, not imported
    from harness.commands.git_history import GitHistory
    from harness.commands.guard import Rule
    from harness.commands.landlock import Boundary
    from harness.commands.look import Look

OWN = "plainagent's own files: not read"  # the note a listing shows, and the reason of the refusal


class PathRefused(ToolError):
    """`Workspace.confine` refused a path; `reason` is the short form a listing shows next to the name."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason



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
    real: Path | None = None  # a file's real location as the gate checked it: what a search reads, not the
    # name again (a link retargeted after the check would lead elsewhere)


@dataclass
class Workspace:
    """The directory the agent may work in, and the session state the tools share."""

    root: Path
    confirm: Confirm | None = None  # asked before each write and command (permissions.Permissions); None approves
    secret: Secret = field(default_factory=Secret)  # the session's key (a str is taken too): out of results and
    # commands' environment
    journal: list[Write] = field(default_factory=list)  # every write, oldest first
    deny_rules: list[Rule] | None = None  # commands never run (guard.py); None: its DEFAULT_RULES
    own_files: list[Path | None] = field(default_factory=list)  # plainagent's files elsewhere: a --log transcript
    own: list[str] = field(init=False, repr=False)  # real paths no tool touches (folded): own_files, state, config
    fetch_allow: frozenset[str] = frozenset()  # hosts web_fetch may reach, private ones too (fetch.py)
    passed_env: frozenset[str] = frozenset()  # variables commands get although their names say credentials
    boundary: Boundary | None = None  # the kernel boundary commands run in (landlock.py); None: none
    git_history: GitHistory | None = None  # the repository's history, kept for after each command
    look: Look | None = None  # what acts later, looked at before and after each command (look.py)
    folder: open_beneath.Root = field(init=False, repr=False)  # the root, opened once: what every use starts from
    uncut: tuple[str, str] | None = None  # the last command result cut for the model: (its result, the output
    # as kept for the user, up to shell.py's SHOWN_MAX_BYTES), for /show

    def __post_init__(self):
        self.secret = self.secret if isinstance(self.secret, Secret) else Secret(self.secret)  # a bare key, in tests
        self.root = Path(self.root).resolve()
        self.folder = open_beneath.Root(self.root)
        self.own = [folded(Path(path).resolve()) for path in [state_dir(), config_dir(), *self.own_files] if path]

    # --- paths ---

    def resolve(self, path: str) -> Path:
        """The real path of `path` as the model gave it (relative to the root, or absolute inside it)."""
        if not path.strip():
            raise ToolError("path is empty; give a path relative to the workspace root, e.g. \"src/app.py\".")
        if "\0" in path:
            raise ToolError(f"path contains a NUL character: {path!r}; give a plain file path.")
        if os.path.realpath(self.root) != str(self.root):  # the root itself moved: say that, not "outside"
            raise ToolError(f"The workspace folder {self.root} was moved or replaced (by a link, say) since the "
                            "session started, so no path through it is used. Tell the user.")
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
        if self.is_own(named) or self.is_own(real):
            raise PathRefused(f"{shown} is plainagent's own (its transcripts, history or settings): no tool reads, "
                              "searches or changes it. Ask the user if you need something from it.", OWN)
        if is_secret(named.as_posix()):  # the absolute path: with -C ~/.ssh, a key is still in .ssh/
            raise PathRefused(f"{shown} may hold secrets (API keys, private keys), so it is not read, searched "
                              "or edited. Ask the user if you need something from it.", "may hold secrets")
        if is_secret(real.as_posix()):  # a harmless name that leads to a secret: config.txt -> .env
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

    def is_own(self, path: Path) -> bool:
        """Whether `path` (absolute, without "..") is plainagent's own state or settings, or inside them. In any
        letter case and Unicode form: on macOS ".LOCAL/State" is ".local/state" itself."""
        name = folded(path)
        return any(name == own or name.startswith(own.rstrip("/") + "/") for own in self.own)

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
            folder = folders.popleft()
            try:  # through descriptors: a folder swapped for a link since it was listed is not entered
                items = open_beneath.listing(self.folder, folder)
            except (OSError, Changed):  # unreadable (permissions), gone or swapped since it was listed
                continue
            for name, is_dir, is_link in items:
                path = folder / name
                if (is_dir and skip_dir(path)) or (
                        not asked_for_ignored and rules.ignores(self.relative(path), path.name, is_dir=is_dir)):
                    continue
                if is_link:
                    yield self.walked_link(path)
                elif is_dir and self.is_own(path):  # -C ~: the state folder is shown, and not entered
                    yield Entry(path, True, OWN)
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
        return Entry(path, False, real=path)

    def walked_link(self, path: Path) -> Entry:
        try:
            real = self.confine(path)
        except PathRefused as refusal:
            return Entry(path, False, note=refusal.reason)
        if real.is_dir():
            return Entry(path, True, "a link to a folder: not followed; list its target instead")
        if not real.exists():
            return Entry(path, False, "a broken link: what it leads to does not exist")
        return Entry(path, False, real=real)

    # --- using what passed the gate: by its real path, following no link (open_beneath.py) ---

    def stat(self, full: Path) -> os.stat_result | None:
        """What is at the checked real path `full`, itself (None: nothing is)."""
        try:
            return open_beneath.lstat(self.folder, full)
        except Changed as change:
            raise ToolError(self.changed_while_used(full, change.how)) from None

    def read(self, full: Path, limit: int | None = None) -> bytes:
        """The bytes of the regular file at the checked real path `full`; at most `limit` of them (a file can grow
        between the look at its size and the read)."""
        try:
            return open_beneath.read(self.folder, full, limit)
        except (FileNotFoundError, NotADirectoryError):  # there a moment ago (`stat`): gone since
            raise ToolError(self.changed_while_used(full, "removed")) from None
        except Changed as change:
            raise ToolError(self.changed_while_used(full, change.how)) from None

    def listing(self, full: Path) -> list[tuple[str, bool, bool]]:
        """(name, is a folder, is a link) of each entry in the checked real folder `full`."""
        try:
            return open_beneath.listing(self.folder, full)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolError(self.changed_while_used(full, "removed")) from None
        except Changed as change:
            raise ToolError(self.changed_while_used(full, change.how)) from None

    def changed_while_used(self, full: Path, how: str) -> str:
        name = self.relative(full)
        if how == "link":
            return (f"{name} changed while it was being opened: it, or a folder on its way, became a symbolic "
                    "link, so it was not used (a tool uses only what it checked). Try again; if this keeps "
                    "happening, something is rewriting the workspace.")
        if how == "removed":
            return f"{name} was removed while it was being opened. Use list_files to see what exists."
        return f"{name} changed while it was being opened (it is no longer a regular file). Try again."

    # --- writes, and taking them back ---

    def approve(self, kind: str, title: str, preview: str, why: str = "") -> None:
        """Ask the user before a write or a command; a refusal becomes a ToolError with their reason."""
        if self.confirm is None:
            return
        refusal = self.confirm(kind, title, preview, why)
        if refusal is not None:
            raise ToolError(f"Not approved: {title}. {refusal}")

    def write(self, full: Path, data: bytes, before: bytes | None) -> None:
        """Write `data` at the checked real path `full`, making missing folders, and journal it for /undo.
        `before` is what the edit was made from (None: a new file). When the file no longer holds it, or a file
        has appeared, nothing is written and the ToolError says why: the user approved a change to what they
        saw, and their own edit made meanwhile must not be lost."""
        try:
            if before is None:
                made_dirs = open_beneath.create(self.folder, full, data)
            else:
                open_beneath.replace(self.folder, full, data, expected=before)
                made_dirs = []
        except Changed as change:
            raise ToolError(self.changed_since_read(full, change.how)) from None
        except OSError as error:
            raise ToolError(f"could not write {self.relative(full)}: {error.strerror or error}.") from None
        self.journal.append(Write(full, before, data, made_dirs))

    def changed_since_read(self, full: Path, how: str) -> str:
        """Why an approved write was not made, for the model and, first words first, the user's activity log."""
        name, meanwhile = self.relative(full), "(by you or another program, e.g. while the question was on screen)"
        if how == "created":
            return (f"{name} was not created: a file appeared there after this edit was asked for {meanwhile}, and "
                    f"an empty old_str never overwrites a file. Read {name} with read_file, then edit what it holds.")
        what, advice = {
            "removed": ("it was removed", "Use list_files to see what exists."),
            "read-only": ("it was made read-only", "If it should change, ask the user."),
            "link": ("it, or a folder on its way, became a symbolic link", f"Read {name} again with read_file."),
            "not a file": ("it stopped being a regular file", "Use list_files to see what is there."),
        }.get(how, ("it changed", f"Writing would have overwritten that change. Read {name} again with read_file "
                                  "and make the edit on what it holds now."))
        return f"{name} was not written: {what} after it was read for this edit {meanwhile}. {advice}"

    def undo(self) -> str:
        """Take back the agent's last write, in one line for the user (and the model): restore the bytes
        before, or remove a file it created. Refuses when the file has changed since, so the user's own
        edits are never lost; a refused write stays in the journal, for /undo to retry once it is fixed."""
        if not self.journal:
            return "Nothing to undo."
        last = self.journal[-1]
        name = self.relative(last.path)
        if not name.isprintable():  # a line break in a file's name would end the note and start a forged result
            name = json.dumps(name)
        changed = (f"Not undone: {name} has changed since the agent wrote it (by you or a command), and undoing "
                   "would lose that. Put it back as the agent left it to undo, or fix it by hand.")
        try:
            info = open_beneath.lstat(self.folder, last.path)
            now = open_beneath.read(self.folder, last.path) if info is not None else None
        except Changed:  # a link, a folder or a pipe where the file was
            return changed
        except OSError as error:
            return f"Could not undo the last write to {name}: cannot read it ({error.strerror or error})."
        if now == last.before:  # the user took it back already (a created file deleted, an edit reverted)
            self.journal.pop()
            open_beneath.remove_folders(self.folder, last.made_dirs)
            return f"Nothing to undo in {name}: it is already as it was before the agent's last write."
        if now != last.after:
            return changed.replace("has changed", "was removed") if now is None else changed
        try:  # each checks once more that the file holds what the agent left, right before it acts
            if last.before is None:
                open_beneath.remove(self.folder, last.path, expected=last.after)
                open_beneath.remove_folders(self.folder, last.made_dirs)
            else:
                open_beneath.replace(self.folder, last.path, last.before, expected=last.after)
        except Changed:
            return changed
        except OSError as error:
            return f"Could not undo the last write to {name}: {error.strerror or error}."
        self.journal.pop()
        if last.before is None:
            return f"Undone: removed {name}, which the agent had created."
        return f"Undone: {name} is back as it was before the agent's last edit."

    # --- the API key (the rule is redaction.py's; the workspace holds the session's key) ---

    def redact(self, text: str, *, cut_before: bool = False, cut_after: bool = False) -> str:
        """The text with the session's API key blanked out, and values shaped like credentials withheld
        (secret_shapes.py), so no tool result ever shows them to the model."""
        from harness.common.secret_shapes import withhold  # its ~60 patterns compile at the first result, not at start

        return withhold(self.secret.redact(text, cut_before=cut_before, cut_after=cut_after), cut_before=cut_before,
                        cut_after=cut_after)

    def leaks(self, text: str) -> bool:
        """Whether `text` holds the API key (a command's environment variable, for instance)."""
        return self.secret.leaks(text)


def follow_links(path: Path, shown: str) -> Path:
    """Where `path` really is, every link followed; PathRefused for links that loop (a -> b, b -> a), which
    lead to no file at all."""
    try:
        real = path.resolve()
    except RuntimeError:  # Python before 3.13 raises "Symlink loop from ..."
        real = None
    except OSError as error:  # ELOOP from the system
        if error.errno != errno.ELOOP:  # a link that vanished between two looks at it (a rename meanwhile)
            raise PathRefused(f"{shown} changed while it was being looked at (a link on its way appeared or "
                              "went); try again.", "changed while it was being looked at") from None
        real = None
    if real is None or real.is_symlink():  # 3.13 and later stop at the looping link instead of raising
        raise PathRefused(f"{shown} goes through a loop of symbolic links (a link that leads back to itself), "
                          "so it leads to no file. Ask the user to fix or remove the link.",
                          "a link loop: it leads back to itself, to no file")
    return real


def folded(path: Path) -> str:
    """A path as a case-insensitive file system compares it: one Unicode form, one letter case."""
    return unicodedata.normalize("NFC", path.as_posix()).casefold()
