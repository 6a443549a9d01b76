"""Project instructions: the standing rules a project (AGENTS.md at the workspace root, the file Codex, Cursor
and others read) and the user ($XDG_CONFIG_HOME/plainagent/AGENTS.md, else ~/.config/plainagent/AGENTS.md)
give the agent. Each is read once, when the session starts, and goes into the system prompt under a heading
naming where it came from (`prompt.py`), so the prompt stays the same from turn to turn.

A file is capped at MAX_BYTES, with a note when it is cut. One that is not UTF-8 text is not loaded (the user
is told, with what to do): read with replacement characters, its rules could reach the model garbled, and
nobody would notice. The workspace's file passes the same gate as every path a tool reads, so an AGENTS.md
that is a link to ~/.aws/credentials is not sent to the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.common.directories import config_dir
from harness.common.text_files import BOM
from harness.files.secret_files import is_secret
from harness.files.workspace import PathRefused, Workspace

NAME = "AGENTS.md"
MAX_BYTES = 8_000  # per file, about 2,500 tokens: rules, not a manual; every request carries them


@dataclass
class Instructions:
    file: str  # the file, as the banner names it: "AGENTS.md", "~/.config/plainagent/AGENTS.md"
    source: str  # where it came from, as the prompt's heading and the banner name it
    text: str  # as the model reads it, with a note at the end when it was cut
    note: str = ""  # for the user: "cut at 8,000 of 20,000 bytes", or ""


def load_instructions(workspace: Workspace, environ: dict, log: Callable[[str], None]) -> list[Instructions]:
    """The user's file, then the project's (the more specific comes last); what cannot be loaded is logged."""
    user_file = config_dir(environ) / NAME
    shown = f"~/{user_file.relative_to(Path.home()).as_posix()}" if user_file.is_relative_to(Path.home()) \
        else str(user_file)
    found = [read_instructions(user_file, shown, f"{shown} (the user's own)", log)]
    project_file = workspace.root / NAME
    if project_file.exists() or project_file.is_symlink():
        try:
            project_file = workspace.confine(project_file)
        except PathRefused as refusal:
            log(f"plainagent: {NAME} not loaded: {refusal}")
            return [found[0]] if found[0] else []
        found.append(read_instructions(project_file, NAME, f"{NAME} in the workspace root", log))
    return [instructions for instructions in found if instructions]


def read_instructions(path: Path, shown: str, source: str, log: Callable[[str], None]) -> Instructions | None:
    """One file's instructions, capped; None (and a line logged) when it cannot be used."""
    if path.is_symlink() and not path.exists():
        log(f"plainagent: {shown} not loaded: it is a link to nothing.")
        return None
    if not path.exists():
        return None
    if path.is_symlink() and is_secret(path.resolve().as_posix().lstrip("/")):  # the user's own file, too
        log(f"plainagent: {shown} not loaded: it is a link to {path.resolve()}, which may hold secrets.")
        return None
    if not path.is_file():  # a FIFO would wait for a writer for ever
        log(f"plainagent: {shown} not loaded: it is not a regular file.")
        return None
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_BYTES + len(BOM) + 1).removeprefix(BOM)
        size = path.stat().st_size
    except OSError as error:
        log(f"plainagent: {shown} not loaded: {error.strerror or error}.")
        return None
    cut = len(data) > MAX_BYTES
    data = data[:MAX_BYTES]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        if not (cut and error.start >= len(data) - 3):  # a character split by the cut is not an encoding error
            log(f"plainagent: {shown} not loaded: it is not UTF-8 text (byte {error.start}); save it as UTF-8 "
                "(e.g. iconv -f latin1 -t utf-8).")
            return None
        text = data[:error.start].decode("utf-8")
    text = text.replace("\r\n", "\n")  # a file saved on Windows reads the same in the prompt
    if not text.strip():
        return None
    note = f"cut at {MAX_BYTES:,} of {size:,} bytes" if cut else ""
    if cut:
        text = text.rstrip() + (f"\n\n(The rest of {shown} was cut: plainagent reads the first {MAX_BYTES:,} bytes "
                                f"of {size:,}.)")
    return Instructions(shown, source, text.strip(), note)


def warn_if_large(instructions: list[Instructions], history, log: Callable[[str], None]) -> None:
    """Say so when the system prompt with these instructions takes more than a quarter of the budget
    (history/session_history.py `SessionHistory`): every request carries it, and no compaction can shrink it."""
    size, budget = history.budget.estimate(history.messages[:1]), history.budget.tokens
    if instructions and size > budget // 4:
        log(f"plainagent: the system prompt with {', '.join(given.file for given in instructions)} takes about "
            f"{size:,} of the {budget:,}-token context budget; shorten it, or raise --context-tokens.")
