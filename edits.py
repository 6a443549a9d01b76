"""How edit_file changes a file without losing a byte: decoding it, matching old_str, writing it back.

Pure text functions, no workspace: `tools.edit_file` reads the bytes, calls these, and writes. A refusal is
an `EditRefused` whose message tells the model what to do instead.

Matching is exact first; only when that fails are a few whitespace-only rules tried, each still needing a
unique match. Similarity never applies an edit (agents that matched by edit distance have corrupted
users' files); it only picks the lines to show in a hint.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BINARY_SNIFF_BYTES = 8192  # a NUL byte in this many leading bytes marks a file as binary
BOM = b"\xef\xbb\xbf"
LINE_BREAK = re.compile(r"\r\n|\r|\n")


class EditRefused(Exception):
    """The edit cannot be made safely; the message says why and what to send instead."""


@dataclass
class Document:
    """A file loaded for editing: its text with "\n" line endings, and what is needed to write it back."""

    raw: bytes  # the file's bytes as found, for the undo journal
    text: str  # decoded, BOM removed, every line ending turned into "\n"
    bom: bool
    endings: list[str]  # the file's own line endings in order ("\r\n", "\n" or "\r"): one per "\n" in text

    def encode(self, text: str) -> bytes:
        """The bytes to write for an edited `text`, in the file's encoding and line endings."""
        styles = set(self.endings)
        if len(styles) <= 1:  # one style throughout, as in nearly every file: use it everywhere
            data = text.replace("\n", styles.pop() if styles else "\n")
        else:
            data = reapply_endings(self.text, self.endings, text)
        return BOM + data.encode("utf-8") if self.bom else data.encode("utf-8")


def decode_for_edit(raw: bytes, path: str) -> Document:
    """The text of a file edit_file may change, or EditRefused: binary or not UTF-8."""
    if b"\0" in raw[:BINARY_SNIFF_BYTES]:
        raise EditRefused(f"{path} is a binary file ({len(raw):,} bytes); edit_file changes text files only.")
    try:
        text = raw.removeprefix(BOM).decode("utf-8")
    except UnicodeDecodeError as error:
        raise EditRefused(f"{path} is not valid UTF-8 (byte {error.start}); edit_file would corrupt it, so it "
                          "refuses. Use run_command with a tool that knows the encoding.") from None
    return Document(raw, LINE_BREAK.sub("\n", text), raw.startswith(BOM), LINE_BREAK.findall(text))


def reapply_endings(before: str, endings: list[str], after: str) -> str:
    """`after` with a mixed file's line endings: lines the edit left alone keep their own ending, and the
    lines it wrote take the ending of the first line they replaced."""
    old_lines, new_lines = before.split("\n"), after.split("\n")
    chosen: list[str] = []  # an ending for each line of `after`
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old_lines, new_lines).get_opcodes():
        if tag == "equal":
            chosen += [endings[min(i, len(endings) - 1)] for i in range(i1, i2)]
        else:
            chosen += [endings[min(i1, len(endings) - 1)]] * (j2 - j1)
    return "".join(line + ending for line, ending in zip(new_lines, chosen[: len(new_lines) - 1] + [""]))


def keep_final_newline(before: str, after: str) -> str:
    """`after`, ending with a newline exactly when `before` did: an edit never adds or drops the last one."""
    if before.endswith("\n") and after and not after.endswith("\n"):
        return after + "\n"
    if not before.endswith("\n") and after.endswith("\n"):
        return after[:-1]
    return after


def write_atomically(full: Path, data: bytes, mode: int) -> None:
    """Write via a temporary file in the same directory and os.replace: the old file or the new, never half."""
    fd, temporary = tempfile.mkstemp(dir=full.parent, prefix=f".{full.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, full)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def replace_once(text: str, old: str, new: str, path: str) -> tuple[str, str, int, int]:
    """Replace the one place `old` matches; returns (new text, rule used, first line, last line changed).

    Rules, in order, each needing a unique match: exact; ignoring trailing whitespace; a uniform
    indentation offset; tabs versus spaces. Similarity never applies an edit, it only builds the hint.
    """
    count = text.count(old)
    if count == 1:
        start = text.index(old)
        first = text.count("\n", 0, start) + 1
        last = first + new.rstrip("\n").count("\n")
        return text[:start] + new + text[start + len(old):], "exact match", first, max(first, last)
    if count > 1:
        raise ambiguous(path, [text.count("\n", 0, i) + 1 for i in find_all(text, old)], "")
    lines = text.split("\n")
    old_lines = old.removesuffix("\n").split("\n")
    new_body = new.removesuffix("\n") if old.endswith("\n") or new.endswith("\n") else new
    new_lines = new_body.split("\n") if new_body else []
    if any(line.strip() for line in old_lines):
        for rule_name, rule in LINE_RULES:
            found = [(i, adapt) for i in range(len(lines) - len(old_lines) + 1)
                     if (adapt := rule(lines[i:i + len(old_lines)], old_lines))]
            if len(found) > 1:
                raise ambiguous(path, [i + 1 for i, _ in found], f" when {rule_name}")
            if found:
                i, adapt = found[0]
                replacement = [adapt(line) for line in new_lines]
                text = "\n".join(lines[:i] + replacement + lines[i + len(old_lines):])
                return text, rule_name, i + 1, max(i + 1, i + len(replacement))
    raise EditRefused(not_found_message(text, old, new, path))


def find_all(text: str, part: str) -> Iterator[int]:
    start = text.find(part)
    while start != -1:
        yield start
        start = text.find(part, start + 1)


def ambiguous(path: str, line_numbers: list[int], how: str) -> EditRefused:
    where = ", ".join(map(str, line_numbers[:20]))
    return EditRefused(f"old_str matches {len(line_numbers)} places in {path}{how} (lines {where}). Include more "
                     "surrounding lines in old_str so that it matches one place only.")


def leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def same_ignoring_trailing(window: list[str], old_lines: list[str]):
    """Rule: lines equal once trailing whitespace is dropped. new_str is written as given."""
    if all(a.rstrip() == b.rstrip() for a, b in zip(window, old_lines)):
        return lambda line: line
    return None


def same_with_indent_offset(window: list[str], old_lines: list[str]):
    """Rule: every non-blank line differs by the same extra (or missing) indentation; re-indent new_str."""
    offsets = set()
    for have, want in zip(window, old_lines):
        if not want.strip():
            if have.strip():
                return None
            continue
        if have.strip() != want.strip():
            return None
        have_lead, want_lead = leading(have), leading(want)
        if have_lead.endswith(want_lead):
            offsets.add(("add", have_lead[: len(have_lead) - len(want_lead)]))
        elif want_lead.endswith(have_lead):
            offsets.add(("remove", want_lead[: len(want_lead) - len(have_lead)]))
        else:
            return None
    if len(offsets) != 1:
        return None
    direction, pad = offsets.pop()
    if not pad:
        return None
    if direction == "add":
        return lambda line: pad + line if line.strip() else line
    return lambda line: line.removeprefix(pad) if line.startswith(pad) else line.lstrip(" \t")


def same_with_other_tabs(window: list[str], old_lines: list[str]):
    """Rule: leading indentation matches once tabs are expanded; new_str is re-indented in the file's style."""
    for size in (4, 8, 2):
        if all(expand_indent(a, size) == expand_indent(b, size) for a, b in zip(window, old_lines)):
            file_uses_tabs = any("\t" in leading(line) for line in window)
            return lambda line: restyle_indent(line, size, file_uses_tabs)
    return None


def expand_indent(line: str, size: int) -> str:
    line = line.rstrip()
    lead = leading(line)
    return " " * len(lead.expandtabs(size)) + line[len(lead):]


def restyle_indent(line: str, size: int, tabs: bool) -> str:
    lead = leading(line)
    width = len(lead.expandtabs(size))
    return ("\t" * (width // size) + " " * (width % size) if tabs else " " * width) + line[len(lead):]


LINE_RULES = [
    ("ignoring trailing whitespace", same_ignoring_trailing),
    ("with the indentation shifted", same_with_indent_offset),
    ("with tabs and spaces in the indentation converted", same_with_other_tabs),
]


def not_found_message(text: str, old: str, new: str, path: str) -> str:
    """Why old_str did not match: the closest lines in the file, numbered, and a diagnosis when one applies."""
    lines = text.split("\n")
    old_lines = old.removesuffix("\n").split("\n")
    message = [f"old_str was not found in {path}."]
    if new.strip() and new in text:
        line = text.count("\n", 0, text.index(new)) + 1
        message.append(f"new_str is already present (line {line}): the edit may already be applied.")
    if all(re.match(r"\s*\d+\t", line) for line in old_lines if line.strip()):
        message.append("old_str starts its lines with line numbers from read_file; they are not part of the file.")
    file_tabs = any(leading(line).startswith("\t") for line in lines)
    old_tabs = any(leading(line).startswith("\t") for line in old_lines)
    file_spaces = any(leading(line).startswith(" ") for line in lines)
    if old_tabs != file_tabs and (file_tabs or file_spaces):
        style = "tabs" if file_tabs else "spaces"
        message.append(f"The file indents with {style}, old_str does not.")
    anchor = next((line.strip() for line in old_lines if line.strip()), "")
    best, best_score = None, 0.0
    for number, line in enumerate(lines):
        matcher = difflib.SequenceMatcher(None, line.strip(), anchor, autojunk=False)
        if matcher.real_quick_ratio() > best_score and matcher.quick_ratio() > best_score:
            score = matcher.ratio()
            if score > best_score:
                best, best_score = number, score
    if best is not None and best_score >= 0.5:
        window = lines[best:best + len(old_lines)]
        if any(a.rstrip() != a for a in window) and [a.rstrip() for a in window] != old_lines:
            message.append("Some of these lines end with spaces or tabs.")
        message.append("The closest lines in the file are:\n" + numbered_excerpt(text, best + 1,
                                                                                   best + len(old_lines), 0))
    message.append("Copy old_str exactly from read_file output (without the line numbers).")
    return "\n".join(message)


def numbered(number: int, line: str) -> str:
    """A line as read_file shows it: the number right-aligned in 6 columns, a tab, the line."""
    return f"{number:>6}\t{line}"


def numbered_excerpt(text: str, first: int, last: int, context: int = 3) -> str:
    """Lines first..last of text (1-based), with `context` lines either side, numbered like read_file."""
    lines = text.split("\n")
    start, end = max(1, first - context), min(len(lines), last + context)
    return "\n".join(numbered(n, lines[n - 1]) for n in range(start, end + 1))


def unified_diff(before: str, after: str, path: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{path}", f"b/{path}"))


def check_still_compiles(before: str, after: str, path: str) -> None:
    """Refuse a Python edit that breaks a file which compiled before it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings from the user's code are not ours to print
        try:
            compile(before, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return  # already broken: the edit may be the fix
        try:
            compile(after, path, "exec", dont_inherit=True)
        except SyntaxError as error:
            raise EditRefused(f"Edit not applied: {path} would no longer compile: line {error.lineno}, column "
                            f"{error.offset}: {error.msg}. Fix new_str and resend.") from None
