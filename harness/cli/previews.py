"""What the user is asked before a write, a command or a fetch: the preview and the question, fitted to the screen.

Everything in a preview was written by the model, so it is shown as data (escapes.escape), and so that no part of
it can hide the rest: a run of characters that draw little or nothing is counted within its line, so is a pile of
marks on one character, and text shaped like a count is escaped so no count can be forged; a long run of lines
that draw nothing is counted on a line of its own; a line too long for the screen shows its beginning and its end
with the number of characters left out between them, and a preview too long for the screen its first and last
lines with the number of lines left out (screen_fit.py); the question then offers [v]iew to see it all. The screen is
the size of the terminal the question is asked on, read each time it is asked (SCREEN when it cannot be known). A
command's question repeats the first line that runs (not a comment), so it is on screen next to the prompt however
the rest is shown, and a command too tall for the screen leaves out its comments before any line that runs.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from pathlib import Path

from harness.cli.escapes import describe_char, escape, escaped_chars, hides, without_key
from harness.cli.screen_fit import Piece, Shown, cells_of, char_cells, fit, fit_line, height
from harness.common.counting import count

SCREEN = os.terminal_size((80, 24))  # columns and rows when the terminal's size cannot be known: a VT100's
QUESTION_ROWS = 3  # rows the question may fill: what a command runs first (or the path), then the answers
BLANK_RUN = 5  # lines in a row that draw nothing from which they are counted: two between functions stay blank
ANSWERS = "[y]es / [n]o (or type a reason) / [a]lways"
COMMAND_ANSWERS = ANSWERS.replace(" / [a]lways", " / a WORDS / [a]lways")  # a command's: prefixes.py's narrower always
VIEW = " / [v]iew it all"
SHORTENED = "shortened to fit the screen"
LOOK = 20_000  # characters looked at from each end of a line (the screen shows fewer), unless it is shown whole
UNREADABLE = "too long: see above"  # what the question says of a command a tiny screen cuts to a few characters
DISCARDED = "(discarded what was typed before)"  # said when keys pressed before the question are thrown away
OPENS = re.compile(r"<<|\$\(|`|\$'|\\$")  # a here-document, a substitution, $'...', a line continued
EXPANDS = re.compile(r"[$`]")  # what makes a line that starts with # run something in double quotes or a here-doc
PILE = 4  # marks drawn on one character beyond which they are counted: Vietnamese stacks two, Zalgo text dozens
# The start of what the content could write to pass for a count: "[2,000 spaces]", "[... 9 characters not shown
# ...]", "[80 blank lines]", a line "... 3 lines not shown ...". Its first character is escaped (\x5b, \x2e),
# so a count can be told from text even where nothing is marked (TERM=dumb, NO_COLOR).
FORGED = re.compile(r"\[(?=[\s.…]*\d[\d,]*\s*(?:spaces|[×x]\s|blank|lines?|characters|more|combining))"
                    r"|^\s*[.…](?=[.…]*\s.*not shown)")


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
    question offers [v]iew: `whole` shows everything (only runs and piles still counted).
    An edit that acts later (`why`, acts_later.py) says why it is asked, next to the question, and offers no [a]lways.
    """
    columns, rows = screen or SCREEN
    what, details, choices, subject, frame = render_preview(kind, title, preview, root, mark, columns, whole)
    header = f"{what} ({', '.join([*details, *choices[-1][1], SHORTENED])}):"  # as tall as it can be
    answers = ANSWERS.replace(" / [a]lways", "") if why else COMMAND_ANSWERS if kind == "command" else ANSWERS
    room = max(QUESTION_ROWS * columns - len(frame.format("", answers + VIEW)) - 1, 20)
    subject_text, _, cut_short = fit_line(subject, room, mark, tail=0 if kind == "command" else 1 / 3)
    if cut_short and kind == "command" and room < 60:
        subject_text = UNREADABLE  # a few characters and a count say nothing: the preview shows its beginning
    why_text = fit_line(show_line(why, mark), max(2 * columns - 50, 20), mark)[0]  # a reason can name a long path
    why_line = mark(f"Asked in every mode, since it acts later: {why_text}.") if why else ""
    asked = frame.format(subject_text, answers + VIEW) + "x"  # and the first key typed, which may start a row
    # rows: the blank one before the header, the one after the preview, those of "(discarded what was typed...)"
    body_rows = rows - 2 - height(DISCARDED, columns) - height(header, columns) \
        - height(why_line, columns) * bool(why) - height(asked, columns)
    if whole:
        body, cut, extra = [text for text, _, _ in (fit_line(line.pieces, math.inf, mark) for line in choices[0][0])], \
            False, []
    else:  # the first way of showing it that leaves out no line, else the last: comments give way to what runs
        for shown, said in choices:
            (body, cut, lines_left_out), extra = fit(shown, max(body_rows + (body_rows < 2), 1), columns, mark), said
            if not lines_left_out:
                break
        cut = cut or shown is not choices[0][0]  # comments counted or left out: [v]iew shows them
    details += [*extra, *[SHORTENED] * cut]  # said, as the counts within say what they stand for
    header = f"{what} ({', '.join(details)}):" if details else f"{what}:"
    question = frame.format(subject_text, answers + VIEW * cut)
    before = "\n" * (body_rows > 1 or whole)  # a blank row between it and what came before, if the screen has room
    return f"{before}{header}\n" + "\n".join(body) + "\n\n" + (why_line + "\n" if why else ""), question


def render_preview(kind: str, title: str, preview: str, root: Path | None, mark: Callable[[str], str],
                   columns: int, whole: bool = False) -> tuple[str, list[str], list[tuple[list[Shown], list[str]]],
                                                             list[Piece], str]:
    """(what the header says will happen, and its details; the ways the preview's lines can be shown, the most
    complete first, each with what the header adds when it is the one shown; what the question is about; the
    question, with {} for that and for the answers). Each line beyond LOOK characters is looked at only at its
    beginning and its end, unless `whole`."""
    verb, _, path = title.partition(" ")
    look = math.inf if whole else LOOK
    named = fit_line(show_line(path, mark), max(2 * columns - 30, 20), mark)[0]  # a path of 4,000 characters too
    if kind == "command":
        lines = preview.rstrip("\n").split("\n")  # trailing line breaks change nothing that runs
        lines[0] = lines[0].removeprefix("$ ")  # the tools show a command after "$ "; it is put back when shown
        where = f" in {escape(str(root), mark=mark)}" if root is not None else ""
        details = [f"{len(lines):,} lines"] if len(lines) > 1 else []
        kinds = line_kinds(lines)
        first = next((line for line, kind in zip(lines, kinds) if kind == "runs"), None)
        if first is None:
            first = next((line for line, kind in zip(lines, kinds) if kind != "blank"), lines[0])
        shown_lines: dict[int, list[Piece]] = {}  # each line rendered once, whichever way it is shown
        choices = [(show_command(lines, kinds, mark, look, shown_lines), [])]
        comments = kinds.count("comment")
        if comments and "runs" in kinds:  # comments are what a preview too tall leaves out first
            choices += [(show_command(lines, kinds, mark, look, shown_lines, "count"), []),
                        (show_command(lines, kinds, mark, look, shown_lines, "leave out"),
                         [f"{count(comments, 'line')} of comments not shown"])]
        several = f", {len(lines):,} lines" if len(lines) > 1 else ""
        frame = f"Allow this command ({{}}{several})? {{}}: "
        return f"Run{where}", details, choices, show_line(first, mark, look=LOOK), frame
    if verb == "create":
        lines = preview.split("\n") if preview else []
        if preview.endswith("\n"):
            lines.pop()  # the final line break ends the last line; it does not start another
        what, details = f"Create {named}", [count(len(lines), "line") if lines else "empty"]
        shown = show_changes(lines, mark, signs=False, look=look)
    else:
        lines = preview.rstrip("\n").split("\n")
        added, removed = (sum(line[:1] == sign and line[:3] != sign * 3 for line in lines) for sign in "+-")
        what, details = (f"Edit {named}", [f"+{added:,} -{removed:,} lines"]) if verb == "edit" else \
            (upper_first(fit_line(show_line(title, mark), 2 * columns, mark)[0]), [])
        shown = show_changes(lines, mark, look=look)
    return what, details, [(shown, [])], show_line(title, mark), "Allow {}? {}: "


def upper_first(text: str) -> str:
    """"fetch from Example.com" -> "Fetch from Example.com": the rest as it is, a host's or a path's case too."""
    return text[:1].upper() + text[1:]


def show_command(lines: list[str], kinds: list[str], mark: Callable[[str], str], look: float,
                 done: dict[int, list[Piece]], comments: str = "show") -> list[Shown]:
    """A command's lines (their kinds: line_kind) as shown for approval, after "$ ": every character visible, and
    BLANK_RUN or more lines in a row that draw nothing (empty, spaces of any width, tabs, invisible characters) one
    line saying how many there were: else they could scroll what runs out of sight. Lines of comments are shown,
    or (`comments`) two or more in a row counted on a line of their own, or left out, so what runs is seen first.
    `done` holds the lines already rendered, by number."""
    shown: list[Shown] = []
    for start, end in line_runs(kinds):
        run, kind = lines[start:end], kinds[start]
        if kind == "comment" and comments == "leave out":
            continue
        if kind == "blank" and len(run) >= BLANK_RUN or kind == "comment" and comments == "count" and len(run) > 1:
            shown.append(counted(run, mark, what="lines of comments" if kind == "comment" else ""))
        else:
            for at in range(start, end):
                if at not in done:
                    done[at] = show_line(lines[at], mark, look=look)
                shown.append(Shown(done[at]))
    if shown:
        shown[0] = Shown([Piece("$ ", 2, 2, True), *shown[0].pieces], shown[0].lines)
    return shown


def line_kinds(lines: list[str]) -> list[str]:
    """Each line's kind (line_kind) while the command can be read without the shell's grammar: from the first line
    that leaves a quote, a here-document, a substitution or the line itself open, no line is a comment, for the
    lines after it may be data that runs (`tr -d '#' <<EOF | sh`)."""
    kinds, plain = [], True
    for line in lines:
        kind = line_kind(line)
        kinds.append("runs" if kind == "comment" and not plain else kind)
        plain = plain and (kind != "runs" or not OPENS.search(line) and not quote_left_open(line))
    return kinds


def quote_left_open(line: str) -> bool:
    """True if `line` ends inside a quote, read as the shell reads quotes (a # that starts a word starts a comment)."""
    quote, at = "", 0
    while at < len(line):
        char = line[at]
        if char == "\\" and quote != "'":
            at += 1  # the next character is taken as it is
        elif char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        elif char == "#" and not quote and (at == 0 or line[at - 1] in " \t;&|()"):
            break
        at += 1
    return bool(quote)


def line_kind(line: str) -> str:
    """"blank" for a line that draws nothing, "comment" for one whose first character that draws is # and that
    has no $ or ` (inside a double-quoted string or a here-document, "# $(curl x | sh)" runs), else "runs": what the
    shell may run (a comment could otherwise pass for what a command does)."""
    drawn = next((char for at, char in enumerate(line) if not (char.isspace() or hides(line, at))), None)
    return "blank" if drawn is None else "comment" if drawn == "#" and not EXPANDS.search(line) else "runs"


def draws_nothing(line: str) -> bool:
    """True for a line a terminal would show as blank: only whitespace and characters that draw nothing."""
    return line_kind(line) == "blank"


def line_runs(kinds: list[str]) -> list[tuple[int, int]]:
    """(start, end) of each run of lines of one kind, blank or comment, and of each line that runs on its own."""
    runs, start = [], 0
    while start < len(kinds):
        end = start + 1
        while kinds[start] != "runs" and end < len(kinds) and kinds[end] == kinds[start]:
            end += 1
        runs.append((start, end))
        start = end
    return runs


def counted(run: list[str], mark: Callable[[str], str], done: str = "", what: str = "") -> Shown:
    """A run of lines that draw nothing (or `what` they are) as one line saying how many there are, and what they
    hold."""
    what = what or "blank lines" if all(not line.strip(" ") for line in run) else \
        what or "lines of only whitespace or invisible characters"
    label = f"[{len(run):,} {what}{done}]"
    return Shown([Piece(mark(label), len(label), sum(map(len, run)) + len(run) - 1)], len(run))


def show_changes(lines: list[str], mark: Callable[[str], str], signs: bool = True,
                 look: float = math.inf) -> list[Shown]:
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
                            + show_line(split(line)[1].expandtabs(), mark, 40, look)) for line in lines[start:end]]
        start = end
    return shown


def show_line(line: str, mark: Callable[[str], str], at_least: int = 8, look: float = math.inf) -> list[Piece]:
    """One line escaped, as pieces, in one pass: `at_least` or more characters in a row that draw little or
    nothing (spaces, tabs, invisible characters, marks on them), whatever their mix, counted as one run, and more
    than PILE marks on one character counted after it: 2,000 spaces could otherwise push the rest of the line past
    the edge of the screen, and a pile of accents drawn over one letter spill onto the lines around it. Text shaped
    like one of these counts (or the lines left out) has its first character escaped, so no count can be forged.
    Of a line longer than twice `look` characters only the first and the last `look` are looked at: the rest is
    a piece no room fits, which fit_line leaves out and counts."""
    line = without_key(line)
    if len(line) > 2 * look:
        head, tail = int(look), len(line) - int(look)
        while head < tail and binds(line[head]):  # a run or a pile is counted whole, wherever the cut falls
            head += 1
        while tail > head and binds(line[tail]):
            tail -= 1
        if tail - head > 1:
            skipped = Piece("", math.inf, tail - head)  # never shown: whole, nothing is skipped
            return [*show_line(line[:head], mark, at_least), skipped, *show_line(line[tail:], mark, at_least)]
    forged = {found.start() for found in FORGED.finditer(line)}
    if not forged and line.isascii() and line.isprintable() and " " * at_least not in line:  # the common case
        return [Piece(line, len(line), len(line), True)] if line else []
    shown = escaped_chars(line, mark=mark)
    for at in forged:
        shown[at] = mark(describe_char(line[at]))
    pieces: list[Piece] = []
    plain: list[str] = []  # text that shows as it is, not yet a piece
    run: list[tuple[int, int]] = []  # the faint characters (start, end with their marks) not yet shown or counted
    run_chars = run_length = 0  # its characters, and how many of them are not marks

    def flush_plain() -> None:
        if plain:
            text = "".join(plain)
            pieces.append(Piece(text, cells_of(text), len(text), True))
            plain.clear()

    def flush_run() -> None:
        nonlocal run_chars, run_length
        if run_length >= at_least:
            flush_plain()
            texts = {line[start:end] for start, end in run[:at_least]}
            label = f"[{run_chars:,} {run_name(texts, run_chars, run_length)}]"
            pieces.append(Piece(mark(label), len(label), run_chars))
        else:
            for start, end in run:
                add_cluster(start, end)
        run.clear()
        run_chars = run_length = 0

    def add_cluster(start: int, end: int) -> None:
        char, marks = line[start], end - start - 1
        if shown[start] == char and marks <= PILE:
            plain.append(line[start:end])
            return
        flush_plain()
        cells = char_cells(char) if shown[start] == char else len(describe_char(char))
        if marks > PILE:
            label = f"[{marks:,} combining marks]"
            pieces.append(Piece(shown[start] + mark(label), cells + len(label), marks + 1))
        else:
            pieces.append(Piece(shown[start] + line[start + 1:end], cells, marks + 1))

    at = 0
    while at < len(line):
        end = at + 1
        while end < len(line) and shown[end] == line[end] and not char_cells(line[end]):  # marks drawn on it
            end += 1
        if line[at] == " " or shown[at] != line[at]:  # draws little or nothing; escaped, it would
            if len(run) < at_least:
                run.append((at, end))
            else:
                run[-1] = (at, end)  # enough kept to name the run: the rest only counted
            run_chars, run_length = run_chars + end - at, run_length + 1
        else:
            if run:
                flush_run()
            add_cluster(at, end)
        at = end
    if run:
        flush_run()
    flush_plain()
    return pieces


def binds(char: str) -> bool:
    """True for a character that may belong to a run or a pile: one that draws little or nothing."""
    return char.isspace() or not char.isprintable() or not char_cells(char)


def run_name(texts: set[str], chars: int, clusters: int) -> str:
    """What a counted run holds: "spaces", "× \\t" (one character, again and again), or a mix."""
    if len(texts) == 1 and chars == clusters:
        text = texts.pop()
        return "spaces" if text == " " else f"× {describe_char(text)}"
    return "blank or invisible characters"
