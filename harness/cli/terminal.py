"""The terminal: how outside text is shown on it, and the question asked before each write or command.

`escape` is the one way text from outside (the model's, a server's, a file's, a path, a configuration value)
reaches the screen: every control and invisible character written as an escape, and the API key blanked wherever
it appears. Everything shown for approval was written by the model, so it is shown as data, never as
instructions to the terminal: a carriage return, an escape sequence or a bidi override in a command could
otherwise redraw the line and show the user something other than what will run. The question is asked on the
terminal itself (/dev/tty), so it is seen even when stderr goes to a log or the task comes down a pipe
(`echo TASK | python agent.py -p -`, as git and ssh ask for a password), and only after discarding what was
typed before it, so a key pressed while the model was still working never answers a question the user has not
seen. With no terminal at all (a script, cron, CI) nothing waits for an answer that cannot come: the action is
refused, and the refusals are kept (`unasked`) so the end of the task can say it was not done as asked.
"""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

from harness.cli import prefixes  # the narrower always: what "a WORDS" approves
from harness.common.redaction import Secret, is_secret_key, redact
from harness.common.words import count
from harness.sandbox.permissions import ACTS_LATER

try:
    import fcntl
    import termios
except ImportError:  # Windows: no terminal control; questions fall back to stdin and stderr
    termios = None

PREVIEW_HEAD = 20  # lines shown from the start of a new file's content
PREVIEW_TAIL = 10  # and from its end; the lines between are counted, not shown
ASKED_EVEN_WITH_YES = " (an edit that acts later: asked even with --yes)"  # how `unasked` marks one
NO_TERMINAL = ("Nobody can be asked to approve it: plainagent is not running at a terminal. "
               "The user can run plainagent with --yes to allow writes and commands.")


# --- showing outside text ---

NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Letters that draw nothing at all, so a line could hide text behind them; everything else that draws nothing
# (controls, format characters such as bidi overrides and zero-width spaces, odd spaces) fails isprintable().
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


# The session's key (config's Secret), blanked from all that is shown: agent.main hands it over (hide_key) once it
# is known. Held here by reference: everything shown passes through this module's escape, from anywhere.
secret = Secret()


def hide_key(key: Secret) -> None:
    """From now on, `escape` and `for_output` blank `key` wherever it appears (if it is long enough to be one)."""
    global secret
    secret = key


def without_key(text: str) -> str:
    """`text` with the API key blanked, spelt plainly or as JSON spells it (a call's arguments are shown as JSON)."""
    if not is_secret_key(secret.value):
        return text
    return redact(secret.redact(text), json.dumps(secret.value)[1:-1])


def escape(text: str, keep: str = "", mark: Callable[[str], str] = str) -> str:
    """The text with the API key blanked and every character that could move the cursor, recolour or hide
    text written as an escape.

    A character stays as it is if Python calls it printable (the plain space included) or it is in `keep`;
    the rest become \\r, \\t, \\x1b, \\u202e and so on, passed through `mark` (e.g. to show them reversed).
    e.g. escape("ls #\\r\\x1b[2K$ pwd") == "ls #\\\\r\\\\x1b[2K$ pwd"
    """
    text = without_key(text)
    if text.isprintable() and not BLANK_LETTERS.intersection(text):  # the common case, at C speed
        return text
    return "".join(char if (char.isprintable() and char not in BLANK_LETTERS) or char in keep
                   else mark(describe_char(char)) for char in text)


def for_output(text: str, stream) -> str:
    """An answer as printed on `stream`: escaped on a terminal; on a pipe exactly as written (a script gets
    the model's bytes), but never the key."""
    return escape(text, keep="\n\t") if stream.isatty() else without_key(text)


def describe_char(char: str) -> str:
    """How an escaped character is written: like a Python string literal, so it is recognisable."""
    code = ord(char)
    if char in NAMED_ESCAPES:
        return NAMED_ESCAPES[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


# --- what the user is asked ---


def render_question(kind: str, title: str, preview: str, root: Path | None = None,
                    mark: Callable[[str], str] = str, whole: bool = False, why: str = "") -> tuple[str, str]:
    """(the header saying what will happen and the preview with every control character escaped, the question).

    Tabs in a diff or a file's content are indentation, so they are shown as the spaces they stand for: a
    terminal stops a run of tabs at the right margin, where later text would overwrite itself unseen.
    `kind`, `title` and `preview` are what the tools pass to their confirm callback: ("edit", "edit app.py",
    unified diff), ("edit", "create notes.md", the new content) or ("command", "run this command", "$ ls").
    A long new file shows its head and tail unless `whole`; the question then offers [v]iew to see it all.
    A command's question repeats its start, so no run of blanks can scroll what runs out of sight.
    An edit that acts later (`why`, later.py) says why it is asked, next to the question, and offers no [a]lways.
    """
    header, question = render_preview(kind, title, preview, root, mark, whole)
    if why:
        header += mark(f"Asked in every mode, since this edit acts later: {escape(why, mark=mark)}.") + "\n"
        question = question.replace(" / [a]lways", "")
    return header, question


def render_preview(kind: str, title: str, preview: str, root: Path | None, mark: Callable[[str], str],
                   whole: bool) -> tuple[str, str]:
    verb, _, path = title.partition(" ")
    if kind == "command":
        lines = preview.rstrip("\n").split("\n")  # trailing line breaks change nothing that runs
        where = f" in {escape(str(root), mark=mark)}" if root is not None else ""
        header = f"Run{where}{f' ({len(lines):,} lines)' if len(lines) > 1 else ''}:"
        bare = [lines[0].removeprefix("$ "), *lines[1:]]  # the tools show a command after "$ "
        first = next((line for line in bare if not draws_nothing(line)), bare[0])
        gist = show_line(first, mark) + (f", {len(lines):,} lines" if len(lines) > 1 else "")
        question = f"Allow this command ({gist})? [y]es / [n]o (or type a reason) / [a]lways: "
        return f"\n{header}\n{show_command(lines, mark)}\n\n", question
    elif verb == "create":
        lines = preview.split("\n") if preview else []
        if preview.endswith("\n"):
            lines.pop()  # the final line break ends the last line; it does not start another
        header = f"Create {escape(path, mark=mark)} ({count(len(lines), 'line') if lines else 'empty'}):"
        shown = show_changes(lines, mark, signs=False)  # runs of blank lines counted: nothing scrolls out of sight
        shown = shown if whole else elide(shown, str, mark)
        body = "\n".join(shown)
        if len(shown) < len(lines):
            return (f"\n{header}\n{body}\n\n", f"Allow {escape(title, mark=mark)}? [y]es / [n]o (or type a "
                    "reason) / [a]lways / [v]iew it all: ")
    else:
        lines = preview.rstrip("\n").split("\n")
        added, removed = (sum(line[:1] == sign and line[:3] != sign * 3 for line in lines) for sign in "+-")
        changed = f" (+{added:,} -{removed:,} lines)" if verb == "edit" else ""
        header = f"Edit {escape(path, mark=mark)}{changed}:" if verb == "edit" else \
            f"{escape(title, mark=mark).capitalize()}:"
        body = "\n".join(show_changes(lines, mark))
    return f"\n{header}\n{body}\n\n", f"Allow {escape(title, mark=mark)}? [y]es / [n]o (or type a reason) / [a]lways: "


def show_command(lines: list[str], mark: Callable[[str], str]) -> str:
    """A command's lines as shown for approval: every character visible, and what draws nothing counted, not
    shown. Two or more lines in a row that draw nothing (empty, spaces of any width, tabs, invisible
    characters) become one line saying how many there were; otherwise they could scroll what runs out of sight."""
    shown: list[str] = []
    for start, end in line_runs(lines):
        run = lines[start:end]
        if end - start < 2 or not draws_nothing(run[0]):
            shown += [show_line(line, mark) for line in run]
        elif all(not line.strip(" ") for line in run):
            shown.append(mark(f"[{end - start:,} blank lines]"))
        else:
            shown.append(mark(f"[{end - start:,} lines of only whitespace or invisible characters]"))
    return "\n".join(shown)


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
    return all(char.isspace() or not char.isprintable() or char in BLANK_LETTERS for char in line)


def show_changes(lines: list[str], mark: Callable[[str], str], signs: bool = True) -> list[str]:
    """A diff's lines (`signs`: each after its +, - or space) or a new file's, as shown for approval: escaped,
    tabs as the indentation they stand for, a run of 40 blanks or more within a line counted, and two or more
    lines in a row that add, remove or keep nothing visible shown as one line saying how many: else an edit
    could push what it really adds out of sight, as a command could (show_command)."""
    def split(line: str) -> tuple[str, str]:
        return (line[:1], line[1:]) if signs and line[:1] in ("+", "-", " ") else ("", line)

    shown, start = [], 0
    while start < len(lines):
        sign, rest = split(lines[start])
        end = start + 1
        while draws_nothing(rest) and end < len(lines) and split(lines[end])[0] == sign \
                and draws_nothing(split(lines[end])[1]):
            end += 1
        shown.append(sign + (mark(f"[{end - start:,} blank lines]") if end - start > 1
                             else show_line(rest.expandtabs(), mark, 40)))
        start = end
    return shown


def show_line(line: str, mark: Callable[[str], str], at_least: int = 8) -> str:
    """One line escaped, with each long run of a space, of a character that draws nothing or of a combining
    mark counted: 2,000 spaces or tabs could otherwise push the rest of the line past the edge of the screen,
    and a pile of accents drawn over one letter spill onto the lines around it."""
    shown, done = [], 0
    for run in re.finditer(rf"(?s)(.)\1{{{at_least - 1},}}", line):
        char = run.group(1)
        if char != " " and escape(char) == char and not unicodedata.combining(char):  # "========" draws itself
            continue
        what = "spaces" if char == " " else f"× {describe_char(char)}"
        shown += [escape(line[done:run.start()], mark=mark), mark(f"[{len(run.group()):,} {what}]")]
        done = run.end()
    return "".join(shown) + escape(line[done:], mark=mark)


def elide(lines: list[str], show: Callable[[str], str], mark: Callable[[str], str]) -> list[str]:
    """A long file's head and tail as `show` renders them, with the number of lines left out between them."""
    if len(lines) <= PREVIEW_HEAD + PREVIEW_TAIL + 5:  # leaving out a handful of lines saves nothing
        return [show(line) for line in lines]
    left_out = count(len(lines) - PREVIEW_HEAD - PREVIEW_TAIL, "line")
    return ([show(line) for line in lines[:PREVIEW_HEAD]] + [mark(f"... {left_out} not shown ...")]
            + [show(line) for line in lines[-PREVIEW_TAIL:]])


YES_WORDS = {"y", "yes", "yeah", "yep", "yup", "ok", "okay", "sure", "fine", "lgtm", "go", "do"}
POLITE_WORDS = YES_WORDS | {"ahead", "it", "for", "please", "thanks", "thank", "you"}
NO_WORDS = {"n", "no", "nope", "nah"}


def parse_answer(answer: str, command: str | None = None) -> tuple[str, str]:
    """("yes" | "always" | "prefix" | "no", what the model is told when it is no, or the prefix).

    A plain yes in common words ("yes.", "Yes please", "ok", "sure", "go ahead") approves; "a" or "always"
    approves the rest of the session; to a `command`'s question, "a WORDS" (or "always WORDS") whose words are
    the command's first approves it and, for the session, the commands prefix_allows; anything else refuses, and
    the user's words become the reason.
    """
    words = [word.strip(".,;:!?'\"") for word in answer.lower().split()]
    words = [word for word in words if word]
    if words and all(word in POLITE_WORDS for word in words) and YES_WORDS.intersection(words):
        return "yes", ""
    if words in (["a"], ["always"]):
        return "always", ""
    prefix = prefixes.given(answer)
    if command is not None and prefix and prefixes.prefix_allows(prefix, command):  # what it will approve later
        return "prefix", prefix
    text = answer.strip()
    if words and words[0] in YES_WORDS:  # "yes, but use pathlib": a condition is not an approval
        return "no", f"The user did not approve it as it is, and said: {text}"
    said_no = re.match(r"(?i)(nope|nah|no|n)\b[\s,:;.!-]*", text)  # "n", "no, because ..." or just a reason
    reason = text[said_no.end():] if said_no else text
    return "no", f"The user said no{': ' + reason if reason else ''}."


class TerminalConfirm:
    """Asks the user before each write or command: yes, no (with a reason), or always for this session (for a
    command, always or only for the commands that start with the words given: prefixes.prefix_allows)."""

    def __init__(self, root: Path | None = None, *, stdin=None, terminal: str = "/dev/tty"):
        self.root = root  # the workspace, where commands run
        self.stdin = stdin  # None: sys.stdin at the time of asking
        self.terminal = terminal  # where to ask when stdin is a terminal
        # Kinds ("edit", "command"), hosts ("fetch from HOST") and commands' first words ("command starting with
        # python -m pytest") always approved; one set, which a /mode switch forgets (permissions.py).
        self.always: set[str] = set()
        self.unasked: list[str] = []  # what was refused because nobody could be asked ("create a.py", "run ls")

    def preview(self, kind: str, title: str, preview: str) -> str:
        """What the question would show before asking: for an edit applied without asking (mode edits)."""
        return render_question(kind, title, preview)[0].strip("\n")

    def __call__(self, kind: str, title: str, preview: str, why: str = "") -> str | None:
        scope = title if kind == "fetch" else kind  # a fetch's "always" is for its host only
        if scope in self.always and not why:  # an edit that acts later is asked each time
            return None
        command = preview.removeprefix("$ ") if kind == "command" else None  # the tools show a command after "$ "
        if command is not None and prefixes.approved(self.always, command):
            return None
        terminal = Terminal.open(self.stdin or sys.stdin, self.terminal)
        if terminal is None:
            first = preview.split("\n")[0].removeprefix("$ ")
            self.unasked.append(f"run {first[:60]}{'…' * (len(first) > 60)}" if kind == "command" else
                                title + ASKED_EVEN_WITH_YES * bool(why))
            return ACTS_LATER.format(why=why) if why else NO_TERMINAL
        with terminal:
            preview_text, question = render_question(kind, title, preview, self.root, terminal.mark, why=why)
            terminal.write(preview_text)
            if terminal.discard_typed_ahead():  # once the preview is shown, and before the question is
                terminal.write("(discarded what was typed before this question)\n")
            terminal.write(question)
            answer = terminal.read_answer() or ""
            while True:  # until an answer that decides: "v" and "?" show more, words that start no command
                if answer.strip().lower() in ("v", "view") and question.endswith("[v]iew it all: "):
                    preview_text, question = render_question(kind, title, preview, self.root, terminal.mark,
                                                             whole=True, why=why)
                    terminal.write(preview_text)
                elif answer.strip() == "?":
                    terminal.write(prefixes.ANSWERS_HELP)
                elif command is not None and (prefix := prefixes.given(answer)) and \
                        not prefixes.prefix_allows(prefix, command):  # no reason, no approval: ask again
                    terminal.write(escape(prefixes.not_approved(prefix, command), keep="\n"))
                else:
                    break
                terminal.write(question)
                answer = terminal.read_answer() or ""
            verdict, refusal = parse_answer(answer, command)
            if verdict == "always" and why:
                terminal.write("(approved this once: an edit that acts later is asked each time)\n")
            elif verdict == "always":
                self.always.add(scope)
                narrower = f"; {prefixes.narrower(command)}" if command is not None else ""
                terminal.write(escape(f"(approving every {scope} for the rest of this session{narrower})\n", keep="\n"))
            elif verdict == "prefix":
                self.always.add(prefixes.PREFIXED + refusal)
                terminal.write(escape(prefixes.approving(refusal), keep="\n"))
            elif refusal.startswith("The user did not approve"):
                terminal.write("(not approved: only a plain yes approves; your words go to the model)\n")
        return None if verdict in ("yes", "always", "prefix") else refusal


def ask_user(text: str, question: str, stdin=None, terminal: str = "/dev/tty") -> str | None:
    """Show `text` (escaped) and ask `question` on the terminal, once what was typed before it is discarded;
    the answer, or None when nobody can be asked (no terminal). Ctrl-D answers ""."""
    screen = Terminal.open(stdin or sys.stdin, terminal)
    if screen is None:
        return None
    with screen:
        screen.write(escape(text, keep="\n", mark=screen.mark))
        screen.discard_typed_ahead()
        screen.write(question)
        return screen.read_answer() or ""


# --- the terminal ---


def can_draw(stream, colour: bool = False) -> bool:
    """A terminal that redraws a line (a spinner) and, with `colour`, shows colour unless NO_COLOR is set to
    something (no-color.org: an empty NO_COLOR is as good as none); TERM=dumb (Emacs' shell, some CI consoles)
    draws nothing: escape codes would show as text. The one place these are read."""
    return stream.isatty() and os.environ.get("TERM", "dumb") != "dumb" and not (colour and os.environ.get("NO_COLOR"))


class Terminal:
    """Where a question is asked and answered: the user's terminal, even when stdout and stderr are redirected."""

    def __init__(self, fd: int | None, stdin, output):
        self.fd = fd  # the terminal's file descriptor, or None when only stdin and stderr could be used
        self.stdin = stdin
        self.output = output
        reverse = can_draw(output, colour=True)  # the escapes in what is shown stand out in reverse video
        self.mark = (lambda text: f"\x1b[7m{text}\x1b[27m") if reverse else str

    @classmethod
    def open(cls, stdin, path: str) -> Terminal | None:
        """/dev/tty, else the terminal stdin is; else (or without termios) stdin and stderr themselves; None when
        nobody can be asked. /dev/tty is asked on when stdin is a terminal, or when the user watches stdout or
        stderr at one (a task piped in); not for a process whose output all goes to files and pipes, which may
        run in the background, where reading the terminal would stop it."""
        watched = stdin.isatty() or sys.stdout.isatty() or sys.stderr.isatty()
        for name in (path, "stdin") if termios is not None and watched else ():
            try:
                if name == "stdin":
                    name = os.ttyname(stdin.fileno())
                fd = os.open(name, os.O_RDWR | os.O_NOCTTY)
            except (OSError, ValueError):  # no controlling terminal, or a stdin without a file descriptor
                continue
            # In the terminal's own encoding: UTF-8 sent to a Latin-1 terminal can hold C1 controls (0x9b).
            output = open(fd, "w", encoding=getattr(stdin, "encoding", None) or "utf-8",
                          errors="backslashreplace", closefd=False)
            return cls(fd, None, output)
        return cls(None, stdin, sys.stderr) if stdin.isatty() else None

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is KeyboardInterrupt:  # Ctrl-C ends the task: "Interrupted." goes on a line of its own
            self.write("\n")
        if self.fd is not None:
            self.output.close()
            os.close(self.fd)
            self.fd = None

    def write(self, text: str) -> None:
        self.output.write(text)
        self.output.flush()

    def discard_typed_ahead(self) -> bool:
        """Throw away what was typed so far, before the question was shown; True if there were whole lines."""
        if self.fd is None or termios is None:
            return False
        termios.tcdrain(self.fd)  # wait until the preview has reached the screen
        pending = int.from_bytes(fcntl.ioctl(self.fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)
        termios.tcflush(self.fd, termios.TCIFLUSH)
        return pending > 0

    def read_answer(self) -> str | None:
        """One line typed by the user, or None for Ctrl-D (Ctrl-C raises KeyboardInterrupt: it ends the task)."""
        line = self.read_line()
        if not line.endswith("\n"):  # Ctrl-D: the terminal did not move to the next line, so we do
            self.write("\n")
        return line.rstrip("\r\n") if line else None

    def read_line(self) -> str:
        if self.fd is None:
            return self.stdin.readline()
        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(self.fd, 4096)  # the terminal hands over one line at a time
            if not chunk:  # Ctrl-D on an empty line (after text, Ctrl-D only hands the text over)
                break
            data += chunk
        return data.decode("utf-8", errors="replace")
