"""Fitting what a question shows to the screen: a preview's lines are pieces (Piece) that a cut never splits, or
plain text it may; a line too long for its room shows its beginning and end with the number of characters left out
between them, and a preview too tall its first and last lines with the number of lines left out (fit). Counting
columns and rows is here too, as a terminal does: wide characters take two columns, marks none.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Callable
from typing import NamedTuple

from harness.cli.escapes import EMOJI_STYLES
from harness.common.counting import count

LINE_ROWS = 8  # rows one line of a preview may fill before its middle is left out
TAIL_ROWS = 6  # rows from which a preview too tall shows its last lines too, not only its first
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


def cells_of(text: str) -> int:
    """The columns `text` takes on the screen."""
    return len(text) if text.isascii() else sum(map(char_cells, text))


@functools.lru_cache(maxsize=4096)
def char_cells(char: str) -> int:
    """The columns a character that shows as itself takes: none for a mark drawn on the one before, two for a
    wide one (CJK, most emoji), and two for any other beyond Latin-1 that Python's table calls narrow: terminals
    disagree with it (the hexagram symbols, U+4DC0-4DFF, are drawn two wide), and counting a column too many
    only shows a little less, while one too few scrolls the header and what runs first off the screen."""
    if unicodedata.category(char) in ("Mn", "Me") or char in EMOJI_STYLES:
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" or ord(char) > 0x2FF else 1


def fit(shown: list[Shown], rows: int, columns: int, mark: Callable[[str], str]) -> tuple[list[str], bool, bool]:
    """The lines, each cut to at most LINE_ROWS rows, and their first and last ones if they are taller than
    `rows` together, with how many lines were left out between them; whether anything was left out, and whether
    lines were. e.g. 2,000 lines on 34 rows: the first 22, "... 1,966 lines not shown ...", the last 12. On a
    screen too small for both (rows under TAIL_ROWS), the first lines only: what runs first, what an edit does first.
    """
    width = columns * max(1, min(LINE_ROWS, rows // 2 if len(shown) > 1 else rows))
    fitted = [fit_line(line.pieces, width, mark, tail_for(width)) for line in shown]
    heights = [rows_of(text, cells, columns) for text, cells, _ in fitted]
    if sum(heights) <= rows:
        return [text for text, _, _ in fitted], any(cut for _, _, cut in fitted), False
    head_rows = (rows - 1) * 2 // 3 if rows >= TAIL_ROWS else max(rows - 1, 1)  # more of the beginning
    head = first_lines(shown, fitted, heights, head_rows, columns, mark)
    start = len(head)  # the last lines, from those not in the head, the first of them perhaps cut
    tail = first_lines(shown[start:][::-1], fitted[start:][::-1], heights[start:][::-1], rows - 1 - head_rows,
                       columns, mark)[::-1]
    left_out = sum(line.lines for line in shown[len(head):len(shown) - len(tail)])
    said = bool(left_out) and rows > 1  # on one row, the header's "shortened" says it
    return head + [mark(f"... {count(left_out, 'line')} not shown ...")] * said + tail, True, True


def tail_for(room: float) -> float:
    """The share of a cut line's room its end is given: none where the room is too small to show both ends
    readably (a few columns of each and a count say nothing), so its beginning has it all."""
    return 1 / 3 if room >= 150 else 0


def first_lines(shown: list[Shown], fitted: list[tuple[str, int, bool]], heights: list[int], rows: int, columns: int,
                mark: Callable[[str], str]) -> list[str]:
    """The first lines that fit in `rows`, and the next one cut to the rows left: so the beginning is always
    there, however tall the line it is in."""
    texts, used = [], 0
    for line, (text, _, _), line_height in zip(shown, fitted, heights):
        if used + line_height > rows:
            if rows > used:
                room = (rows - used) * (columns - 1)
                texts.append(fit_line(line.pieces, room, mark, tail_for(room))[0])
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
    near = min(WORD, len(part) // 4)  # on a small screen a few characters: a word is not worth half of them
    space = part.find(" ", 0, near) if backwards else part.rfind(" ", len(part) - near)
    return part if space < 0 else part[space:] if backwards else part[:space + 1]


def height(text: str, columns: int) -> int:
    """The rows `text` takes on a screen `columns` wide (escape codes, if marked, counted as if they showed)."""
    return sum(rows_of(line, cells_of(line), columns) for line in text.split("\n"))


def rows_of(line: str, cells: int, columns: int) -> int:
    """The rows a line of `cells` columns takes: a wide character that would straddle the right edge goes to the
    next row, so beyond ASCII a row is counted one column short, never too few rows."""
    return max(1, math.ceil(cells / (columns - (not line.isascii()))))
