"""What the user is asked before a write, a command or a fetch: the preview and the question, fitted to the screen.

Everything in a preview was written by the model, so it is shown as data (escapes.escape), and so that no part of
it can hide the rest: a run of one character that draws nothing is counted within its line, a long run of lines
that draw nothing is counted on a line of its own, a line too long for the screen shows its beginning and its end
with the number of characters left out between them, and a preview too long for the screen its first and last
lines with the number of lines left out; the question then offers [v]iew to see it all. The screen is the size of
the terminal the question is asked on, read each time it is asked (SCREEN when it cannot be known). A command's
question repeats what runs first, so it is on screen next to the prompt however the rest is shown.
"""

from __future__ import annotations

import functools
import math
import os
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from harness.cli.escapes import EMOJI_STYLES, describe_char, escape, escaped_chars, hides, shows_as_is, without_key
from harness.common.words import count

SCREEN = os.terminal_size((80, 24))  # columns and rows when the terminal's size cannot be known: a VT100's
LINE_ROWS = 8  # rows one line of a preview may fill before its middle is left out
QUESTION_ROWS = 3  # rows the question may fill: what a command runs first (or the path), then the answers
BLANK_RUN = 5  # lines in a row that draw nothing from which they are counted: two between functions stay blank
ANSWERS = "[y]es / [n]o (or type a reason) / [a]lways"
VIEW = " / [v]iew it all"
SHORTENED = "shortened to fit the screen"
WORD = 16  # a cut within a line moves back this far at most to fall at a space


class Piece(NamedTuple):
    """A piece of a shown line: a character with the marks drawn on it, an escape or a count, which a cut never
    splits; or `plain` text that shows as it is, which a cut may split between any two characters it draws."""
    text: str  # as shown (an escape perhaps marked)
    cells: int  # the columns it takes on the screen
    chars: int  # the characters it stands for
    plain: bool = False


class Shown(NamedTuple):
    """One line of a preview as shown, and how many lines of the original it stands for (a count of blank ones)."""
    pieces: list[Piece]
    lines: int = 1


def screen_size(terminal) -> os.terminal_size:
    """The size of `terminal` (a file descriptor or a stream), or SCREEN when it cannot be known: not a terminal,
    or one that says 0 (a pseudo-terminal nobody gave a size)."""
    try:
        size = os.get_terminal_size(terminal if isinstance(terminal, int) else terminal.fileno())
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both of the first two
        return SCREEN
    return size if size.columns > 0 and size.lines > 0 else SCREEN


def render_question(kind: str, title: str, preview: str, root: Path | None = None,
                    mark: Callable[[str], str] = str, whole: bool = False, why: str = "",
                    screen: os.terminal_size | None = None) -> tuple[str, str]:
    """(the header saying what will happen and the preview, the question), together no taller than `screen`.

    `kind`, `title` and `preview` are what the tools pass to their confirm callback: ("edit", "edit app.py",
    unified diff), ("edit", "create notes.md", the new content), ("command", "run this command", "$ ls") or
    ("fetch", "fetch from HOST", the URL). What does not fit is left out from the middle and counted, and the
    question offers [v]iew: `whole` shows everything (only runs of blank lines still counted).
    An edit that acts later (`why`, later.py) says why it is asked, next to the question, and offers no [a]lways.
    """
    columns, rows = screen or SCREEN
    what, details, shown, subject, frame = render_preview(kind, title, preview, root, mark, columns)
    header = f"{what} ({', '.join([*details, SHORTENED])}):"  # as tall as it can be
    answers = ANSWERS.replace(" / [a]lways", "") if why else ANSWERS
    room = max(QUESTION_ROWS * columns - len(frame.format("", answers + VIEW)) - 1, 20)
    subject_text, _, _ = fit_line(subject, room, mark, tail=0 if kind == "command" else 1 / 3)
    why_text = fit_line(show_line(why, mark), max(2 * columns - 50, 20), mark)[0]  # a reason can name a long path
    why_line = mark(f"Asked in every mode, since this edit acts later: {why_text}.") if why else ""
    asked = frame.format(subject_text, answers + VIEW)
    # rows: the blank one before the header, the one after the preview, one for "(discarded what was typed...)"
    body_rows = rows - 3 - height(header, columns) - height(why_line, columns) * bool(why) - height(asked, columns)
    body, cut = ([text for text, _, _ in (fit_line(line.pieces, math.inf, mark) for line in shown)], False) \
        if whole else fit(shown, max(body_rows, 3), columns, mark)
    details += [SHORTENED] * cut  # said, as the counts within say what they stand for
    header = f"{what} ({', '.join(details)}):" if details else f"{what}:"
    question = frame.format(subject_text, answers + VIEW * cut)
    return f"\n{header}\n" + "\n".join(body) + "\n\n" + (why_line + "\n" if why else ""), question


def render_preview(kind: str, title: str, preview: str, root: Path | None, mark: Callable[[str], str],
                   columns: int) -> tuple[str, list[str], list[Shown], list[Piece], str]:
    """(what the header says will happen, and its details; the preview's lines; what the question is about; the
    question, with {} for that and for the answers)."""
    verb, _, path = title.partition(" ")
    named = fit_line(show_line(path, mark), max(2 * columns - 30, 20), mark)[0]  # a path of 4,000 characters too
    if kind == "command":
        lines = preview.rstrip("\n").split("\n")  # trailing line breaks change nothing that runs
        where = f" in {escape(str(root), mark=mark)}" if root is not None else ""
        details = [f"{len(lines):,} lines"] if len(lines) > 1 else []
        bare = [lines[0].removeprefix("$ "), *lines[1:]]  # the tools show a command after "$ "
        first = next((line for line in bare if not draws_nothing(line)), bare[0])
        several = f", {len(lines):,} lines" if len(lines) > 1 else ""
        return f"Run{where}", details, show_command(lines, mark), show_line(first, mark), \
            f"Allow this command ({{}}{several})? {{}}: "
    if verb == "create":
        lines = preview.split("\n") if preview else []
        if preview.endswith("\n"):
            lines.pop()  # the final line break ends the last line; it does not start another
        what, details = f"Create {named}", [count(len(lines), "line") if lines else "empty"]
        shown = show_changes(lines, mark, signs=False)
    else:
        lines = preview.rstrip("\n").split("\n")
        added, removed = (sum(line[:1] == sign and line[:3] != sign * 3 for line in lines) for sign in "+-")
        what, details = (f"Edit {named}", [f"+{added:,} -{removed:,} lines"]) if verb == "edit" else \
            (upper_first(fit_line(show_line(title, mark), 2 * columns, mark)[0]), [])
        shown = show_changes(lines, mark)
    return what, details, shown, show_line(title, mark), "Allow {}? {}: "


def upper_first(text: str) -> str:
    """"fetch from Example.com" -> "Fetch from Example.com": the rest as it is, a host's or a path's case too."""
    return text[:1].upper() + text[1:]


def show_command(lines: list[str], mark: Callable[[str], str]) -> list[Shown]:
    """A command's lines as shown for approval: every character visible, and BLANK_RUN or more lines in a row
    that draw nothing (empty, spaces of any width, tabs, invisible characters) one line saying how many there
    were: else they could scroll what runs out of sight."""
    shown: list[Shown] = []
    for start, end in line_runs(lines):
        shown += [Shown(show_line(line, mark)) for line in lines[start:end]] if end - start < BLANK_RUN \
            else [counted(lines[start:end], mark)]
    return shown


def line_runs(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each run of lines that all draw nothing, and of each other line on its own."""
    runs, start = [], 0
    while start < len(lines):
        end = start + 1
        while draws_nothing(lines[start]) and end < len(lines) and draws_nothing(lines[end]):
            end += 1
        runs.append((start, end))
        start = end
    return runs


def draws_nothing(line: str) -> bool:
    """True for a line a terminal would show as blank: only whitespace and characters that draw nothing."""
    return all(char.isspace() or hides(line, at) for at, char in enumerate(line))


def counted(run: list[str], mark: Callable[[str], str], done: str = "") -> Shown:
    """A run of lines that draw nothing as one line saying how many there are, and what they hold."""
    what = "blank lines" if all(not line.strip(" ") for line in run) else \
        "lines of only whitespace or invisible characters"
    label = f"[{len(run):,} {what}{done}]"
    return Shown([Piece(mark(label), len(label), sum(map(len, run)) + len(run) - 1)], len(run))


def show_changes(lines: list[str], mark: Callable[[str], str], signs: bool = True) -> list[Shown]:
    """A diff's lines (`signs`: each after its +, - or space) or a new file's, as shown for approval: escaped,
    tabs as the indentation they stand for, a run of 40 blanks or more within a line counted, and BLANK_RUN or more
    lines in a row that add, remove or keep nothing visible counted on a line of their own, without a sign, so it
    is not taken for text the edit writes: else an edit could push what it really adds out of sight."""
    def split(line: str) -> tuple[str, str]:
        return (line[:1], line[1:]) if signs and line[:1] in ("+", "-", " ") else ("", line)

    shown, start = [], 0
    while start < len(lines):
        sign, rest = split(lines[start])
        end = start + 1
        while draws_nothing(rest) and end < len(lines) and split(lines[end])[0] == sign \
                and draws_nothing(split(lines[end])[1]):
            end += 1
        if end - start >= BLANK_RUN:
            done = {"+": " added", "-": " removed", " ": " unchanged"}.get(sign, "")
            shown.append(counted([split(line)[1] for line in lines[start:end]], mark, done))
        else:
            shown += [Shown([Piece(sign, len(sign), len(sign), True)] * bool(sign)
                            + show_line(split(line)[1].expandtabs(), mark, 40)) for line in lines[start:end]]
        start = end
    return shown


def show_line(line: str, mark: Callable[[str], str], at_least: int = 8) -> list[Piece]:
    """One line escaped, with each long run of a space, of a character that draws nothing or of a combining
    mark counted: 2,000 spaces or tabs could otherwise push the rest of the line past the edge of the screen,
    and a pile of accents drawn over one letter spill onto the lines around it."""
    line = without_key(line)
    pieces, done = [], 0
    for run in re.finditer(rf"(?s)(.)\1{{{at_least - 1},}}", line):
        char = run.group(1)
        if char != " " and escape(char) == char and not unicodedata.combining(char):  # "========" draws itself
            continue
        label = f"[{len(run.group()):,} {'spaces' if char == ' ' else f'× {describe_char(char)}'}]"
        pieces += char_pieces(line[done:run.start()], mark) + [Piece(mark(label), len(label), len(run.group()))]
        done = run.end()
    return pieces + char_pieces(line[done:], mark)


def char_pieces(text: str, mark: Callable[[str], str]) -> list[Piece]:
    """`text` escaped, as pieces: text that shows as it is in one piece, else a piece a character."""
    if shows_as_is(text):  # the common case: one piece, which a cut may split
        return [Piece(text, cells_of(text), len(text), True)] if text else []
    pieces: list[Piece] = []
    for char, shown in zip(text, escaped_chars(text, mark=mark)):
        if shown != char:
            pieces.append(Piece(shown, len(describe_char(char)), 1))
        elif pieces and not char_cells(char):  # a mark, drawn on the character before it
            pieces[-1] = Piece(pieces[-1].text + char, pieces[-1].cells, pieces[-1].chars + 1)
        else:
            pieces.append(Piece(char, char_cells(char), 1))
    return pieces


def cells_of(text: str) -> int:
    """The columns `text` takes on the screen."""
    return len(text) if text.isascii() else sum(map(char_cells, text))


@functools.lru_cache(maxsize=4096)
def char_cells(char: str) -> int:
    """The columns a character that shows as itself takes: none for a mark drawn on the one before, two for a
    wide one (CJK, most emoji), else one."""
    if unicodedata.category(char) in ("Mn", "Me") or char in EMOJI_STYLES:
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


# --- fitting what is shown to the screen ---


def fit(shown: list[Shown], rows: int, columns: int, mark: Callable[[str], str]) -> tuple[list[str], bool]:
    """The lines, each cut to at most LINE_ROWS rows, and their first and last ones if they are taller than
    `rows` together, with how many lines were left out between them; and whether anything was left out.
    e.g. 2,000 lines on 34 rows: the first 22, "... 1,966 lines not shown ...", the last 12."""
    width = columns * max(1, min(LINE_ROWS, rows // 2))
    fitted = [fit_line(line.pieces, width, mark) for line in shown]
    heights = [rows_of(text, cells, columns) for text, cells, _ in fitted]
    if sum(heights) <= rows:
        return [text for text, _, _ in fitted], any(cut for _, _, cut in fitted)
    head_rows = (rows - 1) * 2 // 3  # more of the beginning: what an edit does first, what runs first
    head = first_lines(shown, fitted, heights, head_rows, columns, mark)
    start = len(head)  # the last lines, from those not in the head, the first of them perhaps cut
    tail = first_lines(shown[start:][::-1], fitted[start:][::-1], heights[start:][::-1], rows - 1 - head_rows,
                       columns, mark)[::-1]
    left_out = sum(line.lines for line in shown[len(head):len(shown) - len(tail)])
    return head + [mark(f"... {count(left_out, 'line')} not shown ...")] * bool(left_out) + tail, True


def first_lines(shown: list[Shown], fitted: list[tuple[str, int, bool]], heights: list[int], rows: int, columns: int,
                mark: Callable[[str], str]) -> list[str]:
    """The first lines that fit in `rows`, and the next one cut to the rows left: so the beginning is always
    there, however tall the line it is in."""
    texts, used = [], 0
    for line, (text, _, _), line_height in zip(shown, fitted, heights):
        if used + line_height > rows:
            if rows > used:
                texts.append(fit_line(line.pieces, (rows - used) * (columns - 1), mark)[0])
            break
        texts.append(text)
        used += line_height
    return texts


def fit_line(pieces: list[Piece], room: float, mark: Callable[[str], str],
             tail: float = 1 / 3) -> tuple[str, int, bool]:
    """(the pieces as shown, the columns they take, whether some were left out): whole if they fit in `room`
    columns, else as many from the beginning and (`tail`, a share of the room) from the end as fit, with the
    number of characters left out between them said."""
    cells = sum(piece.cells for piece in pieces)
    if cells <= room:
        return "".join(piece.text for piece in pieces), cells, False
    total = sum(piece.chars for piece in pieces)
    label = "[... {:,} characters not shown ...]" if tail else "[... {:,} more characters]"
    room = max(int(room) - len(label.format(total)), 2)  # the count is never longer than the total's
    ending = take(pieces[::-1], int(room * tail), backwards=True)[::-1]
    beginning = take(pieces, room - sum(piece.cells for piece in ending))
    left_out = total - sum(piece.chars for piece in beginning + ending)
    label = label.format(left_out)
    shown = beginning + [Piece(mark(label), len(label), left_out)] + ending
    return "".join(piece.text for piece in shown), sum(piece.cells for piece in shown), True


def take(pieces: list[Piece], room: int, backwards: bool = False) -> list[Piece]:
    """The first pieces that fit in `room` columns, a plain one cut to fit (its end, `backwards`)."""
    taken, used = [], 0
    for piece in pieces:
        if used + piece.cells > room:
            if piece.plain and room > used:
                part = cut(piece.text, room - used, backwards)
                taken.append(Piece(part, cells_of(part), len(part), True))
            break
        taken.append(piece)
        used += piece.cells
    return taken


def cut(text: str, room: int, backwards: bool) -> str:
    """The start of `text` that fits in `room` columns (its end, `backwards`), never a mark without its character,
    and at a space if one is near: `tests/test_b.py [... 9,797 more characters]`, not `tests/te[...`."""
    if text.isascii():
        part = text[len(text) - room:] if backwards else text[:room]
    else:
        used = n_chars = 0
        for char in reversed(text) if backwards else text:
            if used + char_cells(char) > room:
                break
            used, n_chars = used + char_cells(char), n_chars + 1
        part = text[len(text) - n_chars:] if backwards else text[:n_chars]  # a mark after the last one: taken
        while backwards and part and not char_cells(part[0]):  # marks whose character was left out
            part = part[1:]
    space = part.find(" ", 0, WORD) if backwards else part.rfind(" ", max(len(part) - WORD, 0))
    return part if space < 0 else part[space:] if backwards else part[:space + 1]


def height(text: str, columns: int) -> int:
    """The rows `text` takes on a screen `columns` wide (escape codes, if marked, counted as if they showed)."""
    return sum(rows_of(line, cells_of(line), columns) for line in text.split("\n"))


def rows_of(line: str, cells: int, columns: int) -> int:
    """The rows a line of `cells` columns takes: a wide character that would straddle the right edge goes to the
    next row, so beyond ASCII a row is counted one column short, never too few rows."""
    return max(1, math.ceil(cells / (columns - (not line.isascii()))))
