"""read_file's and edit_file's work on the workspace's files: reading a regular file, an edit from the read to
the write, and creating a new file.

Helpers of the tools in tools.py (their docstrings, what the model reads, stay there). Every path has passed
`Workspace.resolve`, and is then used only through the workspace (`stat`, `read`, `write`), by the real path it
checked; the text work itself is text_files.py's (decoding, keeping line endings) and edits.py's (matching
old_str); the question before the write and the write with its undo record are the workspace's (`approve`,
`write`), and an edit that acts later (acts_later.py) is asked in every mode. The write happens only if the file
still holds what the edit was made from, once the question is answered. A value withheld from the model
(secret_shapes.py) is never matched a piece at a time by an edit's old_str, nor shown by its result: a line is
edited as read_file showed it, each marker standing for the value at its place, which stays as it is; and a
value old_str holds whole (the user told the model) is matched, and may change. The user's question shows the
real bytes.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
from collections import Counter
from pathlib import Path

from harness.common.counting import count
from harness.common.redaction import REDACTED
from harness.common.seam_types import ToolError
from harness.common.text_files import (
    LINE_BREAK,
    EditRefused,
    decode,
    decode_for_edit,
    keep_final_newline,
    split_lines,
)
from harness.files.acts_later import acts_later
from harness.files.edits import (
    check_python_edit,
    describe_change,
    describe_every,
    replace_every,
    replace_once,
    unified_diff,
)
from harness.files.search import suggest_paths
from harness.files.workspace import Workspace

READ_MAX_FILE_BYTES = 50_000_000  # read_file loads the whole file; past this, head/tail/grep do better
EDIT_MAX_BYTES = 1_000_000  # files larger than this are not edited: a whole-file rewrite is not cheap to check


def read_text(ws: Workspace, full: Path, path: str) -> tuple[list[str], list[str]]:
    """A text file's lines, with the API key redacted, and notes for the model on how it was read."""
    info = file_status(ws, full, path)
    data = ws.read(full, READ_MAX_FILE_BYTES + 1) if info.st_size <= READ_MAX_FILE_BYTES else b""
    if info.st_size > READ_MAX_FILE_BYTES or len(data) > READ_MAX_FILE_BYTES:  # or it grew since it was looked at
        raise ToolError(f"{path} is {max(info.st_size, len(data)):,} bytes, too big to load; use run_command with "
                        "head, tail or grep to look at parts of it.")
    decoded = decode(data)
    if decoded is None:
        raise ToolError(f"{path} is a binary file ({len(data):,} bytes); read_file shows text files only.")
    notes = []
    if decoded.problem():
        notes.append(f"the file {decoded.problem()}: undecodable bytes are shown as \ufffd, and edit_file will "
                     "refuse this file")
    elif decoded.codec != "utf-8":  # the model's commands (grep, sed) would not find its text as UTF-8
        notes.append(f"the file is {decoded.name}, with a byte-order mark; edit_file writes it back the same way")
    # Redacted before any line is cut: a cut through the key would show half of it.
    return split_lines(ws.redact(decoded.text)), notes


def cut_lines(path: str, lines: list[str], first: int, limit: int) -> list[str]:
    """read_file's note on the lines it shows cut at `limit` characters (numbered from `first`): which, and how
    to see the rest. Without it, what is past the cut of a one-line 300 KB file is out of sight for good."""
    cut = [first + index for index, line in enumerate(lines) if len(line) > limit]
    if not cut:
        return []
    if len(cut) == 1:
        where = f"line {cut[0]} is cut at {limit:,} of its {len(lines[cut[0] - first]):,} characters"
    else:
        where = f"lines {', '.join(map(str, cut[:-1]))} and {cut[-1]} are cut at {limit:,} characters each"
    return [f"{where}. To see the rest: search_files with path={json.dumps(path)} shows the text around a match "
            f"anywhere in a line, and run_command can print any part of it (characters {limit + 1:,}-{2 * limit:,}, "
            "say)"]


def change_file(ws: Workspace, path: str, old_str: str, new_str: str, replace_all: bool = False) -> str:
    full = ws.resolve(path)
    info = ws.stat(full)
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{path} is a directory; give the path of a file.")
    if old_str == "" and replace_all:
        raise ToolError("replace_all needs the text to replace as old_str; an empty old_str only creates new files.")
    if old_str == "":  # a new file holds exactly what was asked: a lone CR in new_str may be meant
        check_withheld("", new_str, "", path)
        return create_file(ws, full, path, new_str, exists=info is not None)
    if info is None:
        raise ToolError(f'{path} does not exist. To create it, call edit_file with old_str "" and the whole '
                        f"content as new_str. {suggest_paths(ws, path)}")
    info = file_status(ws, full, path)
    mode = stat.S_IMODE(info.st_mode)
    if not mode & 0o222:  # the mode bits, not os.access: root may write anything, but the owner said no
        raise ToolError(f"{path} is read-only (mode {mode:o}); edit_file does not change it. If it should "
                        "change, ask the user.")
    # Models sometimes send CRLF; an existing file decides the line endings, so work in LF and convert back.
    # A lone CR is a line break too (split_lines), so it becomes one in the file's style.
    old, new = LINE_BREAK.sub("\n", old_str), LINE_BREAK.sub("\n", new_str)
    if old == new:
        raise ToolError("old_str and new_str are identical, so there is nothing to change.")
    raw = ws.read(full, EDIT_MAX_BYTES + 1) if info.st_size <= EDIT_MAX_BYTES else b""
    if info.st_size > EDIT_MAX_BYTES or len(raw) > EDIT_MAX_BYTES:  # or it grew since it was looked at
        raise ToolError(f"{path} is {max(info.st_size, len(raw)):,} bytes; edit_file only changes files up to "
                        f"{EDIT_MAX_BYTES:,} bytes.")
    document = decode_for_edit(raw, path)
    if ws.leaks(document.text):  # whether an old_str matched would tell the model the key a piece at a time
        raise ToolError(f"{path} holds the API key plainagent runs with (shown as {REDACTED}), so edit_file "
                        "does not change it. Ask the user to make this edit.")
    asked, rule, first, last, places = replace_unseen(ws, document.text, old, new, path, replace_all)
    text = keep_final_newline(document.text, asked)
    data = document.encode(text)
    if data == document.raw:  # a whitespace rule matched, and new_str is what the file already holds there
        raise ToolError(f"old_str matched line {first} of {path} ({rule}), and new_str is what is already "
                        "there: the edit would change nothing.")
    warning = check_python_edit(document.text, text, path) if full.suffix == ".py" else ""
    shown = named(ws, path, full) + other_names(info)
    why = acts_later(ws, full, text, as_named(ws, path), info.st_nlink)  # asked in every mode when it is not ""
    ws.approve("edit", f"edit {shown}", unified_diff(document.text, text, ws.relative(full)), why)
    ws.write(full, data, before=document.raw)  # only if the file still holds document.raw, after the answer
    # Lines the result may show are cut from the file as read_file shows it, withheld values and all: a key's
    # last lines alone have no shape left to withhold.
    change = (describe_every(document.text, asked, text, places) if replace_all
              else describe_change(document.text, asked, ws.redact(text), first, last, rule))
    return f"Edited {shown}{change}{warning}"


def replace_unseen(ws: Workspace, text: str, old: str, new: str, path: str,
                   replace_all: bool) -> tuple[str, str, int, int | None, list[int]]:
    """edits.py's replace_once or replace_every (the text after, the rule that matched, the first and last line,
    the places), where the model saw values withheld (secret_shapes.py): old_str is matched in the file as the
    model saw it, never inside such a value (whether it matched there, or matched "2 places", would tell the
    value a piece at a time): each of their characters stands as `fill` meanwhile, and is put back after; and
    the edit must leave every value as withheld as it was. A value old_str holds whole is the model's to know
    (the user told it, to rotate a token): that one is matched as it is, and may change."""
    from harness.common.secret_shapes import masked, unmasked, withheld_values  # when first used (Workspace.redact)
    withheld: list[tuple[str, str]] = []
    fill = unused_character(text + old + new)
    source = masked(text, fill, withheld) if fill else text
    if not fill and withheld_values(text):
        raise ToolError(f"{path} holds NUL and all of Unicode's noncharacters, one of which edit_file needs to "
                        "stand for the values it withholds from you; ask the user to make this edit.")
    # Whole, never a piece: a guess must be all of a value to match, so no run of tries finds one piece by piece.
    if told := {value for _, value in withheld if value in old}:
        source = shown_again(source, text, told, fill)
        withheld = [(kind, value) for kind, value in withheld if value not in told]
    matched, replacement = (stood_for(ws, source, text, old, new, fill, path) if withheld and not replace_all
                            else (old, new))
    check_withheld(matched, replacement, text, path)
    try:
        if replace_all:
            asked, places = replace_every(source, old, new, path)
            rule, first, last = "exact match", places[0], None
        else:
            (asked, rule, first, last), places = replace_once(source, matched, replacement, path), []
    except (ToolError, EditRefused):
        if not (fill and fill in source):  # nothing stood for a value: what the error shows is the model's to see
            raise
        # Said of the file as read_file showed it, with markers, never with the characters that stood for values.
        (replace_every if replace_all else replace_once)(ws.redact(text), old, new, path)
        raise ToolError(f"old_str matches {path} as read_file showed it only through part of a marker of a value "
                        "plainagent withheld from you; the file holds the value, not the marker. Make the edit "
                        "around it, with no part of the marker in old_str, or ask the user to change it.") from None
    if fill and fill in source:
        asked = unmasked(asked, text, source, fill)
        check_revealed(withheld, keep_final_newline(text, asked), path)
    return asked, rule, first, last, places


def stood_for(ws: Workspace, source: str, text: str, old: str, new: str, fill: str, path: str) -> tuple[str, str]:
    """old_str and new_str copied from read_file with values' markers in them, with each marker in place of the
    characters that stand for its value in `source` (`masked`), when old_str is at one place of the file as
    read_file shows it, and new_str keeps its markers, in order: a line is edited as it was shown, its value
    kept as it is. Otherwise as they are, for check_withheld to say why not."""
    from harness.common.secret_shapes import MARKERS  # when first used (Workspace.redact)
    markers, pieces = MARKERS.findall(old), MARKERS.split(old)
    if not markers or any(marker in text for marker in markers) or "" in pieces[1:-1]:  # side by side: which is which
        return old, new
    shown = ws.redact(text).count(old)  # the places the model can count itself, never the values' lengths
    places = list(itertools.islice(re.finditer(f"({re.escape(fill)}+)".join(map(re.escape, pieces)), source), 2))
    if shown > 1 or len(places) > 1:  # the second: a value of another kind in the same text elsewhere
        raise ToolError(f"old_str matches more than one place in {path} as read_file shows it; give more of the "
                        "lines around the change, so it matches one.")
    if not (shown and places):
        return old, new
    if MARKERS.findall(new) != markers:
        raise ToolError("new_str does not hold the markers old_str holds, in the same order: each marker in old_str "
                        "stands for the value withheld from you at its place, and new_str keeps it where its marker "
                        "is. Keep them as they are, or ask the user to change the value.")
    runs = iter(places[0].groups())
    return places[0][0], MARKERS.sub(lambda marker: next(runs), new)


def shown_again(mask: str, text: str, told: set[str], fill: str) -> str:
    """`mask` (`text` with its withheld values' characters as `fill`) with each value in `told` as it is, at each
    place where it is a withheld value whole: not where it is part of a longer one, whose run goes on past it."""
    spans = []
    for value in told:
        filled = "".join("\n" if character == "\n" else fill for character in value)
        start = text.find(value)
        while start != -1:
            end = start + len(value)
            if mask[start:end] == filled and mask[start - 1:start] != fill and mask[end:end + 1] != fill:
                spans.append((start, end))
            start = text.find(value, end)
    pieces, done = [], 0
    for start, end in sorted(spans):  # each a run of its own, so none overlaps another
        pieces += [mask[done:start], text[start:end]]
        done = end
    return "".join(pieces) + mask[done:]


def check_withheld(old: str, new: str, text: str, path: str) -> None:
    """Refuse an edit that carries a withheld value's marker (secret_shapes.py) the file does not really hold:
    matched, it would stand for text that is not there; written, it would replace a value with its marker."""
    from harness.common.secret_shapes import marker_in  # when first used (Workspace.redact)
    for name, given in (("old_str", old), ("new_str", new)):
        withheld = marker_in(given)
        if withheld and withheld not in text:
            raise ToolError(f"{name} holds {withheld}, which stands for a value plainagent withheld from you (it "
                            f"looks like a credential); {path} " + ("holds the value itself, so old_str is not in "
                            "it" if name == "old_str" else "would get those words in place of a value") + ". Make "
                            "the edit around that line, with the value left out, or ask the user to change it.")


def check_revealed(withheld: list[tuple[str, str]], after: str, path: str) -> None:
    """Refuse an edit after which a value withheld from the file's view would show in it: text joined to it
    (`echo xsk-…`, `AKIA…x`), a name changed beside it (`"tokne": "…"`) or a URL broken before it takes away the
    shape that withheld it. Every such trick comes to one test, whatever the shape: each value withheld before
    the edit is withheld after it as often. Text that only spells a value out anew (new_str's "hunter" before
    the file's "2") withholds nothing fewer, so what an edit is told never says whether a guess was right."""
    from harness.common.secret_shapes import withheld_values  # when first used (Workspace.redact)
    after_values = Counter(value for _, value in withheld_values(after))  # `withheld`: the file's, before
    for kind, value in withheld:
        if not after_values[value]:
            raise ToolError(f"After this edit, {path} would show a value plainagent withheld from you ({kind}): "
                            "the text you changed beside it is what marks it as one. Leave that text as it is, or "
                            "ask the user to make this edit.")
        after_values[value] -= 1


def unused_character(text: str) -> str:
    """A character neither the file nor the edit holds, to stand for a withheld value's characters while old_str
    is matched: NUL, or one of Unicode's noncharacters, which no text means; "" if it holds them all."""
    return next((fill for fill in ["\0", *map(chr, range(0xFDD0, 0xFDF0))] if fill not in text), "")


def create_file(ws: Workspace, full: Path, path: str, content: str, exists: bool) -> str:
    if exists:
        raise ToolError(f"{path} already exists, and an empty old_str only creates new files. To change it, "
                        "read it and pass the exact text to replace as old_str.")
    ws.approve("edit", f"create {named(ws, path, full)}", content, acts_later(ws, full, content, as_named(ws, path)))
    data = content.encode("utf-8")
    ws.write(full, data, before=None)  # never over a file created meanwhile
    n_lines = len(split_lines(content))
    return f"Created {named(ws, path, full)} ({count(n_lines, 'line')}, {count(len(data), 'byte')})."


def named(ws: Workspace, path: str, full: Path) -> str:
    """The path as the model gave it, and the file that really changes when a link leads elsewhere:
    "docs/notes.md (a link to Makefile)". The user approves the file, not the link's name."""
    real = ws.relative(full)
    given = as_named(ws, path)
    if given == full:
        return path
    if given.is_symlink():
        return f"{path} (a link to {real})"
    return f"{path} (through a linked folder: {real})"


def as_named(ws: Workspace, path: str) -> Path:
    """The absolute path as the model named it, without "..", no link followed: a link's own name."""
    return Path(os.path.normpath(ws.root / path))


def other_names(info: os.stat_result) -> str:
    """A note for a file with other names (hard links), which an edit changes too: it is written in place."""
    if info.st_nlink < 2:
        return ""
    return f" (a file with {info.st_nlink} names, hard links: the change shows under every name)"


def file_status(ws: Workspace, full: Path, path: str) -> os.stat_result:
    """The status of a regular file, or a ToolError for a directory, a missing file, a pipe or a device."""
    info = ws.stat(full)
    if info is None:
        raise ToolError(f"{path} does not exist. {suggest_paths(ws, path)}")
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{path} is a directory; use list_files to see what is in it.")
    if not stat.S_ISREG(info.st_mode):  # opening a FIFO would wait for a writer forever
        raise ToolError(f"{path} is not a regular file (a pipe, socket or device); only files can be read.")
    return info
