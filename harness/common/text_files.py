"""A file's bytes as the tools read and edit_file writes them: decoding, and encoding back.

A file is decoded (`decode`) as UTF-8, or as UTF-16 or UTF-32 when it starts with their byte-order mark (what
Windows Notepad and PowerShell write), and is binary when NUL characters show it is not text. edit_file loads it
as a `Document` (text with "\n" line endings) and encodes it back in its own encoding, with the BOM, the line
endings (one style or mixed) and the final newline it had, so an edit changes the bytes it means to change and no
other: no CRLF file turned into LF, no BOM dropped, no UTF-16 file rewritten as UTF-8, no newline added at the end.
The write itself (atomic, never over a change made since the read, keeping hard links and the owner) is
`open_beneath.py`'s.

This module also owns the line model every part of plainagent counts with: a line ends at CRLF, LF or CR
and nowhere else (`LINE_BREAK`, `split_lines`). read_file, edit_file, search_files and the tool-call parser
all use it, so the line numbers in results, excerpts, diffs and read_file output always agree.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

BINARY_SNIFF_BYTES = 8192  # a NUL in this many leading bytes (characters, for UTF-16/32) marks a file as binary
BOM = codecs.BOM_UTF8  # UTF-8's byte-order mark: kept on the files that have it, never shown as text
# byte-order mark -> (codec, name for the model). UTF-32 LE's mark begins with UTF-16 LE's: it is tried first.
# Without a mark a file is UTF-8: UTF-16 is not guessed, its NUL bytes make it binary (as git and grep take it).
MARKED_ENCODINGS = {
    BOM: ("utf-8", "UTF-8"),
    codecs.BOM_UTF32_LE: ("utf-32-le", "UTF-32 (little-endian)"),
    codecs.BOM_UTF32_BE: ("utf-32-be", "UTF-32 (big-endian)"),
    codecs.BOM_UTF16_LE: ("utf-16-le", "UTF-16 (little-endian)"),
    codecs.BOM_UTF16_BE: ("utf-16-be", "UTF-16 (big-endian)"),
}
LINE_BREAK = re.compile(r"\r\n|\r|\n")  # where a line ends; str.splitlines would also split at \f and U+2028


@dataclass
class Decoded:
    """A file's text, and how to write it back."""

    text: str  # the BOM removed; undecodable bytes, if any, shown as U+FFFD
    bom: bytes  # the byte-order mark the file starts with, or b""
    codec: str  # "utf-8", "utf-16-le", ...
    name: str  # the encoding as the model is told it, e.g. "UTF-16 (little-endian)"
    bad_byte: int | None = None  # where the bytes stop being valid in that encoding (None: they all are)

    def problem(self) -> str:
        """Why these bytes cannot be edited as text, in the middle of a sentence ("" when they can)."""
        if self.bad_byte is None:
            return ""
        if self.codec == "utf-8":
            return f"is not valid UTF-8 (byte {self.bad_byte})"
        return f"starts with a {self.name} byte-order mark, but byte {self.bad_byte} is not {self.name.split()[0]}"


def decode(raw: bytes) -> Decoded | None:
    """The text of a file's bytes, or None for a binary file (a NUL near the start: no text file holds one)."""
    bom = next((mark for mark in MARKED_ENCODINGS if raw.startswith(mark)), b"")
    codec, name = MARKED_ENCODINGS.get(bom, ("utf-8", "UTF-8"))
    if codec == "utf-8" and b"\0" in raw[:BINARY_SNIFF_BYTES]:
        return None
    body = raw[len(bom):]
    try:
        decoded = Decoded(body.decode(codec), bom, codec, name)
    except UnicodeDecodeError as error:
        decoded = Decoded(body.decode(codec, errors="replace"), bom, codec, name, len(bom) + error.start)
    if codec != "utf-8" and "\0" in decoded.text[:BINARY_SNIFF_BYTES]:  # a mark by chance, on a binary file
        return None
    return decoded


def is_text(text: str) -> bool:
    """False for a string holding lone surrogates (bytes that were not UTF-8, or a JSON \\ud800 escape): they are
    no characters, so no file, server or terminal can take them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def split_lines(text: str) -> list[str]:
    """Lines as read_file and edit_file count them: split at CRLF, LF or CR only, with no empty last line
    after a final newline. str.splitlines also splits at form feeds, U+2028 and other separators, which
    would make the line numbers of one tool disagree with another's."""
    lines = LINE_BREAK.split(text)
    return lines[:-1] if lines[-1] == "" else lines


class EditRefused(Exception):
    """The edit cannot be made safely; the message says why and what to send instead."""


@dataclass
class Document:
    """A file loaded for editing: its text with "\n" line endings, and what is needed to write it back."""

    raw: bytes  # the file's bytes as found, for the undo journal
    text: str  # decoded, BOM removed, every line ending turned into "\n"
    bom: bytes  # the byte-order mark it starts with, or b""
    codec: str  # the encoding it is written back in ("utf-8", "utf-16-le", ...)
    endings: list[str]  # the file's own line endings in order ("\r\n", "\n" or "\r"): one per "\n" in text

    def encode(self, text: str) -> bytes:
        """The bytes to write for an edited `text`, in the file's encoding and line endings."""
        styles = set(self.endings)
        if len(styles) <= 1:  # one style throughout, as in nearly every file: use it everywhere
            data = text.replace("\n", styles.pop() if styles else "\n")
        else:
            data = reapply_endings(self.text, self.endings, text)
        return self.bom + data.encode(self.codec)


def decode_for_edit(raw: bytes, path: str) -> Document:
    """The text of a file edit_file may change, or EditRefused: binary, or not valid in its encoding."""
    decoded = decode(raw)
    if decoded is None:
        raise EditRefused(f"{path} is a binary file ({len(raw):,} bytes); edit_file changes text files only.")
    if decoded.problem():
        raise EditRefused(f"{path} {decoded.problem()}; edit_file would corrupt it, so it refuses. Use "
                          "run_command with a tool that knows the encoding.")
    text = decoded.text
    return Document(raw, LINE_BREAK.sub("\n", text), decoded.bom, decoded.codec, LINE_BREAK.findall(text))


def reapply_endings(before: str, endings: list[str], after: str) -> str:
    """`after` with a mixed file's line endings. An edit rewrites one stretch of lines: the lines around it
    keep their own endings, and so does the end of the replaced text (the ending after it is not part of
    it). Within the stretch, a line takes the ending of the line it replaces, in order; lines added take the
    ending of the last line they replace, or, when they replace none, of the line they follow."""
    old_lines, new_lines = before.split("\n"), after.split("\n")
    old_endings = endings + [""]  # the last line ends the file: nothing follows it
    shorter = min(len(old_lines), len(new_lines))
    start = 0  # lines equal at the start, the last line excepted (its ending is only "the end of the file")
    while start < shorter - 1 and old_lines[start] == new_lines[start]:
        start += 1
    end = 0  # lines equal at the end, not overlapping those at the start
    while end < shorter - start and old_lines[-1 - end] == new_lines[-1 - end]:
        end += 1
    replaced = old_endings[start:len(old_lines) - end]
    n_written = len(new_lines) - start - end
    follows = old_endings[start - 1] if start else endings[0]  # the ending of the line before the stretch
    written = []
    for index in range(n_written):
        last = index == n_written - 1
        ending = (replaced[-1] if last else replaced[min(index, len(replaced) - 1)]) if replaced else follows
        written.append(follows if ending == "" and not last else ending)  # a line no longer last needs an ending
    chosen = old_endings[:start] + written + old_endings[len(old_lines) - end:]
    return "".join(line + ending for line, ending in zip(new_lines, chosen))


def keep_final_newline(before: str, after: str) -> str:
    """`after`, ending with a newline exactly when `before` did, unless that newline is all the edit changes.

    Models often add or drop a trailing "\n" on new_str by accident when they edit the last line, so the file's
    own final newline wins. But an edit whose only change is the final newline (old_str "two", new_str
    "two\n") asks for exactly that, a common lint fix: undoing it would leave the bytes as they were and
    report success for nothing, so it is made.
    """
    kept = after
    if before.endswith("\n") and after and not after.endswith("\n"):
        kept = after + "\n"
    elif not before.endswith("\n") and after.endswith("\n"):
        kept = after[:-1]
    return after if kept == before else kept


def repaired(text: str) -> str:
    """`text` with each lone surrogate made U+FFFD, as undecodable bytes are. JSON may carry one ("\\ud800"),
    whole replies and streamed ones alike, and it is no character: it could be neither printed, nor sent back in
    the next request, nor written to the transcript as UTF-8. A pair split by nothing stays the character it is.

    >>> repaired("a\\ud800b"), repaired("\\ud83d\\ude00")
    ('a\ufffdb', '😀')
    """
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
