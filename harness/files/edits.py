"""How edit_file finds the one place old_str names, and what it tells the model and the user about the change.

Pure text functions, no workspace: `files.change_file` (edit_file's steps) reads the bytes, decodes them
(`text_files.py`), calls these, and writes. A refusal is an `EditRefused` whose message tells the model what
to do instead.

The failure this prevents is an edit applied in the wrong place. Matching is exact first; only when that
fails are a few whitespace-only rules tried, each still needing a unique match. Similarity never applies an
edit (agents that matched by edit distance have corrupted users' files); it only picks the lines to show in
a hint. A Python edit that would break a file which compiled before is refused (`check_python_edit`).

Line numbers in results, excerpts and diffs use the one line model of `documents.split_lines`, the same as
read_file's, so the numbers always agree.
"""

from __future__ import annotations

import difflib
import io
import itertools
import re
import sys
import tokenize
import warnings
from collections.abc import Iterator

from harness.common.text_files import EditRefused, split_lines

LINE_RULES_MAX_WORK = 1_000_000  # lines the whitespace rules may compare per edit (well under a second)
EXACT_MAX_WORK = 20_000_000  # characters compared finding exact matches of old_str, past the first 21


def replace_once(text: str, old: str, new: str, path: str) -> tuple[str, str, int, int]:
    """Replace the one place `old` matches; returns (new text, rule used, first and last line new_str fills,
    the last being first - 1 when it fills none).

    Rules, in order, each needing a unique match: exact; ignoring trailing whitespace; a uniform
    indentation offset; tabs versus spaces. Similarity never applies an edit, it only builds the hint.
    """
    # Overlapping ones too: "}\n}" in "}\n}\n}" is two places. Each costs up to len(old) to find: past a bound,
    # "at least" that many is answer enough, and a file of 400,000 equal lines takes no minute to refuse.
    most = max(21, EXACT_MAX_WORK // len(old))
    starts = list(itertools.islice(find_all(text, old), most))
    if len(starts) == 1:
        start = starts[0]
        first = text.count("\n", 0, start) + 1
        # The last line new_str now fills (a "\n" ending new_str ends that line, it does not fill the next);
        # first - 1 when new_str is empty: nothing fills a line, the text was removed.
        last = first + new.count("\n") - (1 if new.endswith("\n") or not new else 0)
        return text[:start] + new + text[start + len(old):], "exact match", first, last
    if starts:
        lines = [text.count("\n", 0, start) + 1 for start in starts[:20]]
        count = f"at least {len(starts):,}" if len(starts) == most else f"{len(starts)}"
        raise ambiguous(path, count, lines, overlaps(starts, len(old)), "")
    lines = text.split("\n")
    old_lines = old.removesuffix("\n").split("\n")
    new_body = new.removesuffix("\n") if old.endswith("\n") or new.endswith("\n") else new
    new_lines = new_body.split("\n") if new_body else []
    if any(line.strip() for line in old_lines):
        candidates = whitespace_candidates(lines, old_lines)
        if candidates is None:
            raise EditRefused(f"old_str was not found exactly in {path}, and once whitespace is ignored it matches "
                              "too many places to compare. Copy old_str exactly from read_file output (without the "
                              "line numbers), with enough lines around the change to match one place.")
        for rule_name, rule in LINE_RULES:
            found = [(i, adapt) for i in candidates if (adapt := rule(lines[i:i + len(old_lines)], old_lines))]
            if len(found) > 1:
                starts = [i for i, _ in found]
                raise ambiguous(path, len(starts), [i + 1 for i in starts[:20]],
                                overlaps(starts, len(old_lines)), f" when {rule_name}")
            if found:
                i, adapt = found[0]
                replacement = [adapt(line) for line in new_lines]
                text = "\n".join(lines[:i] + replacement + lines[i + len(old_lines):])
                return text, rule_name, i + 1, i + len(replacement)
    raise EditRefused(not_found_message(text, old, new, path))


def replace_every(text: str, old: str, new: str, path: str) -> tuple[str, list[int]]:
    """edit_file with replace_all: every exact place `old` matches, without overlaps as str.replace finds them,
    replaced (a whitespace rule that guessed once would guess at every place); the new text, and the line each
    replacement starts on in it."""
    if old not in text:
        raise EditRefused(not_found_message(text, old, new, path))
    pieces = text.split(old)
    lines, line = [], 1
    for piece in pieces[:-1]:  # each replacement starts where its piece ends, in the new text's lines
        lines.append(line := line + piece.count("\n"))
        line += new.count("\n")
    return new.join(pieces), lines


def whitespace_candidates(lines: list[str], old_lines: list[str]) -> list[int] | None:
    """Where the whitespace rules may match: the first lines of the windows whose lines equal old_str's once
    stripped (every rule keeps each line's text), found by one string search instead of comparing every
    window line by line, which took minutes on a big file. None when the rules would compare more than
    LINE_RULES_MAX_WORK lines: an edit is refused, never slow."""
    stripped = [line.strip() for line in lines]
    line_at = {}  # offset of the "\n" before a line in `haystack` -> that line's index
    offset = 0
    for index, line in enumerate(stripped):
        line_at[offset] = index
        offset += len(line) + 1
    haystack = "\n" + "\n".join(stripped) + "\n"
    needle = "\n" + "\n".join(line.strip() for line in old_lines) + "\n"
    max_candidates = LINE_RULES_MAX_WORK // (len(old_lines) * len(LINE_RULES))
    candidates = []
    for start in find_all(haystack, needle):
        if len(candidates) == max_candidates:
            return None
        candidates.append(line_at[start])
    return candidates


def find_all(text: str, part: str) -> Iterator[int]:
    """Every index where `part` starts in `text`, overlapping matches included (str.count skips those)."""
    start = text.find(part)
    while start != -1:
        yield start
        start = text.find(part, start + 1)


def overlaps(starts: list[int], length: int) -> bool:
    """Whether any two matches of this length, starting at these sorted places, share a character (or line)."""
    return any(later < earlier + length for earlier, later in zip(starts, starts[1:]))


def ambiguous(path: str, count: int | str, line_numbers: list[int], overlapping: bool, how: str) -> EditRefused:
    lines = sorted(set(line_numbers))  # two overlapping matches may start on the same line
    where = ("line " if len(lines) == 1 else "lines ") + ", ".join(map(str, lines))
    kind = "overlapping places" if overlapping else "places"
    return EditRefused(f"old_str matches {count} {kind} in {path}{how} ({where}). Include more "
                       "surrounding lines in old_str so that it matches one place only, or set replace_all to "
                       "change every place.")


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
    lines = split_lines(text)
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
    """A line as read_file shows it in a range: the number right-aligned in 6 columns, a tab, the line (`cat -n`)."""
    return f"{number:>6}\t{line}"


def numbered_excerpt(text: str, first: int, last: int, context: int = 3) -> str:
    """Lines first..last of text (1-based), with `context` lines either side, numbered like read_file."""
    lines = split_lines(text)
    start, end = max(1, first - context), min(len(lines), last + context)
    return "\n".join(numbered(n, lines[n - 1]) for n in range(start, end + 1))


def describe_change(before: str, asked: str, after: str, first: int, last: int, rule: str) -> str:
    """What an applied edit left, for the model, to follow "Edited PATH": where new_str went (`last` < `first`
    when it filled no line), and what happened to the final newline, which no excerpt can show. `asked` is
    the text as new_str made it, before keep_final_newline.

    After an exact match the file holds new_str where old_str was, which the model wrote itself: the line
    numbers are all it lacks. After a whitespace rule it does not hold new_str as written (re-indented, say),
    so the lines are shown, numbered like read_file."""
    n_lines = len(split_lines(after))
    if n_lines == 0:
        return ": the file is now empty."
    exact = rule == "exact match"
    if last < first:
        where = f"at line {first}" if first <= n_lines else "at the end of the file"
        first = last = min(first, n_lines)
        report = [f": text removed {where}." if exact else f" ({rule}): text removed {where}; the lines "
                  "around it now read:"]
    else:  # a final newline dropped by keep_final_newline may leave `last` one past the end
        first, last = min(first, n_lines), min(last, n_lines)
        lines = f"line {first}" if first == last else f"lines {first}-{last}"
        report = [f" at {lines}." if exact else f" ({rule}); {lines} now read:"]
    return "\n".join(report + ([numbered_excerpt(after, first, last)] if not exact else []) +
                     final_newline(before, asked, after))


def describe_every(before: str, asked: str, after: str, lines: list[int]) -> str:
    """What a replace_all edit left, to follow "Edited PATH": the lines its places start on now."""
    numbers = sorted(set(lines))  # "aa" twice in "aaaa" is two places on one line
    shown = ", ".join(map(str, numbers[:20])) + (f" and {len(numbers) - 20:,} more" if len(numbers) > 20 else "")
    where = f"line {shown}" if len(numbers) == 1 else f"lines {shown}"
    report = [f" at {where}." if len(lines) == 1 else f" at {len(lines):,} places, {where}."]
    return "\n".join(report + final_newline(before, asked, after))


def final_newline(before: str, asked: str, after: str) -> list[str]:
    """What an edit did to the file's final newline, which no excerpt can show."""
    if before.endswith("\n") != after.endswith("\n"):
        return ["(The file now ends with a newline.)" if after.endswith("\n") else "(The file no longer ends with a "
                "newline.)"]
    if asked != after and not after.endswith("\n"):
        return ["(The file still has no newline at its end, as before: to add one, send an edit that changes only "
                "that.)"]
    return []


def unified_diff(before: str, after: str, path: str) -> str:
    """The change as `diff -u` prints it, for the user to approve: lines as split_lines counts them, and a
    last line without a newline marked the standard way, so that what is approved is exactly what is written
    (line endings aside: those the file keeps)."""
    return "".join(difflib.unified_diff(diff_lines(before), diff_lines(after), f"a/{path}", f"b/{path}"))


def diff_lines(text: str) -> list[str]:
    lines = [line + "\n" for line in split_lines(text)]
    if lines and not text.endswith(("\n", "\r")):
        lines[-1] += "\\ No newline at end of file\n"  # a different line from the same text with its newline
    return lines


def check_python_edit(before: str, after: str, path: str) -> str:
    """Refuse a Python edit that breaks a file which compiled before it, in a way no Python accepts; return
    a warning for the result ("" if none) when only the Python running plainagent cannot compile it.

    That Python may be older than the project's: a 3.12 f-string such as f"{d["key"]}" is a SyntaxError on
    3.11, so refusing every SyntaxError would refuse valid code, and the model could never make the edit.
    Broken indentation (IndentationError, TabError) and brackets that do not balance outside strings are
    errors in every Python 3, so those are refused; any other error is applied and named, with the version
    that found it, for the model to judge.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings from the user's code are not ours to print
        try:
            compile(before, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, MemoryError, RecursionError):  # the last two: nesting too deep to parse
            return ""  # already broken here: the edit may be the fix
        try:
            compile(after, path, "exec", dont_inherit=True)
            return ""
        except ValueError as error:  # a NUL byte (3.11): no Python reads that
            raise EditRefused(f"Edit not applied: {path} would no longer compile: {error}. Fix new_str and "
                              "resend.") from None
        except SyntaxError as error:
            found = error
    if isinstance(found, IndentationError):  # TabError is an IndentationError too
        raise EditRefused(f"Edit not applied: {path} would no longer compile: line {found.lineno}, column "
                          f"{found.offset}: {found.msg}. Fix new_str and resend.")
    bracket = find_unbalanced_bracket(after)
    if bracket:
        line, problem = bracket
        raise EditRefused(f"Edit not applied: {path} would no longer compile: line {line}: {problem}. Fix "
                          "new_str and resend.")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return (f"\nWarning: Python {version}, which plainagent runs on, cannot compile {path} after this edit: "
            f"line {found.lineno}: {found.msg}. If the project targets a newer Python this may be fine; "
            "if not, fix it.")


CLOSING = {")": "(", "]": "[", "}": "{"}  # closing bracket -> its opening one


def find_unbalanced_bracket(text: str) -> tuple[int, str] | None:
    """(line, problem) for a bracket outside strings and comments that is never closed or closed by the wrong
    one; None when they balance, or when this Python's tokenizer cannot be sure."""
    tokens = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            tokens.append(token)
    except tokenize.TokenError as error:
        if "EOF in multi-line statement" not in str(error.args[0]):
            return None  # an unterminated string, say: not a bracket this check can name
    except SyntaxError:  # the tokenizer's own errors (bad indentation; any error on 3.12+)
        return None
    if any(token.type == tokenize.ERRORTOKEN for token in tokens):
        return None  # this tokenizer lost track of the strings (a 3.12 multi-line f-string read by 3.11)
    unsure = template_lines(tokens)
    open_brackets: list[tuple[str, int]] = []  # (bracket, line), innermost last
    for token in tokens:
        line = token.start[0]
        if token.type != tokenize.OP:
            continue
        if token.string in "([{":
            open_brackets.append((token.string, line))
            continue
        if token.string not in CLOSING:
            continue
        if open_brackets and open_brackets[-1][0] == CLOSING[token.string]:
            open_brackets.pop()
            continue
        if line in unsure or (open_brackets and open_brackets[-1][1] in unsure):
            return None
        if not open_brackets:
            return line, f"unmatched '{token.string}'"
        bracket, opened = open_brackets[-1]
        return line, f"'{token.string}' does not close the '{bracket}' opened on line {opened}"
    if open_brackets and open_brackets[-1][1] not in unsure:
        bracket, opened = open_brackets[-1]
        return opened, f"'{bracket}' is never closed"
    return None


def template_lines(tokens: list[tokenize.TokenInfo]) -> set[int]:
    """Lines holding an f-string or another prefixed string (t"..." in 3.14): newer Pythons allow quotes
    and brackets inside their {fields} that an older tokenizer takes for the string's end."""
    lines: set[int] = set()
    for previous, token in zip([None, *tokens], tokens):
        if tokenize.tok_name[token.type] not in ("STRING", "FSTRING_START", "TSTRING_START"):
            continue
        prefix = re.match(r"[A-Za-z]*", token.string).group().lower()
        glued = previous is not None and previous.type == tokenize.NAME and previous.end == token.start
        if "f" in prefix or "t" in prefix or glued:
            lines.update(range(token.start[0], token.end[0] + 1))
    return lines
