"""read_file's and edit_file's work on the workspace's files: reading a regular file, an edit from the read to
the write, and creating a new file.

Helpers of the tools in tools.py (their docstrings, what the model reads, stay there). Every path has passed
`Workspace.resolve`; the text work itself is documents.py's (decoding, keeping line endings) and edits.py's
(matching old_str);
the question before the write and the write with its undo record are the workspace's (`approve`, `write`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from harness.sandbox.documents import (
    BINARY_SNIFF_BYTES,
    BOM,
    LINE_BREAK,
    decode_for_edit,
    keep_final_newline,
    split_lines,
)
from harness.sandbox.edits import check_python_edit, describe_change, replace_once, unified_diff
from harness.sandbox.redaction import REDACTED
from harness.sandbox.search import suggest_paths
from harness.sandbox.workspace import ToolError, Workspace

READ_MAX_FILE_BYTES = 50_000_000  # read_file loads the whole file; past this, head/tail/grep do better
EDIT_MAX_BYTES = 1_000_000  # files larger than this are not edited: a whole-file rewrite is not cheap to check


def read_text(ws: Workspace, full: Path, path: str) -> tuple[list[str], list[str]]:
    """A text file's lines, with the API key redacted, and notes for the model on how it was read."""
    if full.is_file() and full.stat().st_size > READ_MAX_FILE_BYTES:
        raise ToolError(f"{path} is {full.stat().st_size:,} bytes, too big to load; use run_command with head, "
                        "tail or grep to look at parts of it.")
    data = read_bytes(ws, full, path)
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolError(f"{path} is a binary file ({len(data):,} bytes); read_file shows text files only.")
    data, notes = data.removeprefix(BOM), []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        notes.append("the file is not valid UTF-8: undecodable bytes are shown as \ufffd, and edit_file "
                     "will refuse this file")
    return split_lines(ws.redact(text)), notes  # redacted before any line is cut: a cut through the key shows half


def change_file(ws: Workspace, path: str, old_str: str, new_str: str) -> str:
    full = ws.resolve(path)
    if full.is_dir():
        raise ToolError(f"{path} is a directory; give the path of a file.")
    if old_str == "":  # a new file holds exactly what was asked: a lone CR in new_str may be meant
        return create_file(ws, full, path, new_str)
    if not full.exists():
        raise ToolError(f'{path} does not exist. To create it, call edit_file with old_str "" and the whole '
                        f"content as new_str. {suggest_paths(ws, path)}")
    mode = stat.S_IMODE(full.stat().st_mode)
    if not mode & 0o222:  # the mode bits, not os.access: root may write anything, but the owner said no
        raise ToolError(f"{path} is read-only (mode {mode:o}); edit_file does not change it. If it should "
                        "change, ask the user.")
    # Models sometimes send CRLF; an existing file decides the line endings, so work in LF and convert back.
    # A lone CR is a line break too (split_lines), so it becomes one in the file's style.
    old, new = LINE_BREAK.sub("\n", old_str), LINE_BREAK.sub("\n", new_str)
    if old == new:
        raise ToolError("old_str and new_str are identical, so there is nothing to change.")
    if full.stat().st_size > EDIT_MAX_BYTES:
        raise ToolError(f"{path} is {full.stat().st_size:,} bytes; edit_file only changes files up to "
                        f"{EDIT_MAX_BYTES:,} bytes.")
    document = decode_for_edit(read_bytes(ws, full, path), path)
    if ws.leaks(document.text):  # whether an old_str matched would tell the model the key a piece at a time
        raise ToolError(f"{path} holds the API key plainagent runs with (shown as {REDACTED}), so edit_file "
                        "does not change it. Ask the user to make this edit.")
    asked, rule, first, last = replace_once(document.text, old, new, path)
    text = keep_final_newline(document.text, asked)
    data = document.encode(text)
    if data == document.raw:  # a whitespace rule matched, and new_str is what the file already holds there
        raise ToolError(f"old_str matched line {first} of {path} ({rule}), and new_str is what is already "
                        "there: the edit would change nothing.")
    warning = check_python_edit(document.text, text, path) if full.suffix == ".py" else ""
    ws.approve("edit", f"edit {named(ws, path, full)}", unified_diff(document.text, text, ws.relative(full)))
    ws.write(full, data, mode, before=document.raw)
    return f"Edited {named(ws, path, full)}{describe_change(document.text, asked, text, first, last, rule)}{warning}"


def create_file(ws: Workspace, full: Path, path: str, content: str) -> str:
    if full.exists():
        raise ToolError(f"{path} already exists, and an empty old_str only creates new files. To change it, "
                        "read it and pass the exact text to replace as old_str.")
    ws.approve("edit", f"create {named(ws, path, full)}", content)
    umask = os.umask(0)  # the only way to read the umask is to set it; put it straight back
    os.umask(umask)
    data = content.encode("utf-8")
    ws.write(full, data, 0o666 & ~umask, before=None)
    return f"Created {named(ws, path, full)} ({len(split_lines(content))} lines, {len(data):,} bytes)."


def named(ws: Workspace, path: str, full: Path) -> str:
    """The path as the model gave it, and the file that really changes when a link leads elsewhere:
    "docs/notes.md (a link to Makefile)". The user approves the file, not the link's name."""
    real = ws.relative(full)
    given = Path(os.path.normpath(ws.root / path))
    if given == full:
        return path
    if given.is_symlink():
        return f"{path} (a link to {real})"
    return f"{path} (through a linked folder: {real})"


def read_bytes(ws: Workspace, full: Path, path: str) -> bytes:
    """A regular file's bytes, or a ToolError for a directory, a missing file, a pipe or a device."""
    if full.is_dir():
        raise ToolError(f"{path} is a directory; use list_files to see what is in it.")
    if not full.exists():
        raise ToolError(f"{path} does not exist. {suggest_paths(ws, path)}")
    if not full.is_file():  # opening a FIFO would wait for a writer forever
        raise ToolError(f"{path} is not a regular file (a pipe, socket or device); only files can be read.")
    return full.read_bytes()
