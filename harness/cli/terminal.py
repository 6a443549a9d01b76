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
from harness.sandbox.permissions import ACTS_LATER

try:
    import fcntl
    import termios
except ImportError:  # Windows: no terminal control; questions fall back to stdin and stderr
    termios = None

ASKED_EVEN_WITH_YES = " (an edit that acts later: asked even with --yes)"  # how `unasked` marks one
NO_TERMINAL = ("Nobody can be asked to approve it: plainagent is not running at a terminal. "
               "The user can run plainagent with --yes to allow writes and commands.")


# --- showing outside text ---

NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Letters that draw nothing at all, so a line could hide text behind them; everything else that draws nothing
# (controls, format characters such as bidi overrides and zero-width spaces, odd spaces) fails isprintable(),
# but for the marks that draw nothing, which Python calls printable: the combining grapheme joiner, variation
# selectors (Unicode's default-ignorable marks, and a filler), where text can be smuggled a byte a mark.
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
INVISIBLE_MARKS = re.compile("[\u034f\u17b4\u17b5\u180b-\u180d\u180f\ufe00-\ufe0f\U00016fe4\U000e0100-\U000e01ef]")
EMOJI_STYLES = "\ufe0e\ufe0f"  # text and emoji style: the variation selectors a README's emoji carry (❤️, 1️⃣)


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
    return text if shows_as_is(text) else "".join(escaped_chars(text, keep, mark))


def shows_as_is(text: str) -> bool:
    """True if `escape` would leave every character of `text` as it is: the common case, at C speed."""
    return text.isprintable() and not BLANK_LETTERS.intersection(text) and not INVISIBLE_MARKS.search(text)


def escaped_chars(text: str, keep: str = "", mark: Callable[[str], str] = str) -> list[str]:
    """Each character of `text` as `escape` shows it (without blanking the key): itself, or its escape."""
    return [char if char in keep or not hides(text, at) else mark(describe_char(char)) for at, char in enumerate(text)]


def hides(text: str, at: int) -> bool:
    """True if text[at] would not show as itself: a control, a format character, an odd space, a letter or a mark
    that draws nothing. The one exception is an emoji's style (U+FE0E, U+FE0F) right after a digit, # or * (a
    keycap) or a character beyond ASCII that draws itself: it changes how that one character is drawn, and one
    per character cannot hide a text."""
    char = text[at]
    if not char.isprintable() or char in BLANK_LETTERS:
        return True
    if not INVISIBLE_MARKS.match(char):
        return False
    base = text[at - 1] if at else " "
    return not (char in EMOJI_STYLES and (base in "0123456789#*" or ord(base) > 0x7f) and base.isprintable()
                and base not in BLANK_LETTERS and unicodedata.category(base)[0] != "M")


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


# --- what the user is asked (the previews and the question are rendered in previews.py) ---


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
        return previews.render_question(kind, title, preview, screen=previews.screen_size(sys.stderr))[0].strip("\n")

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
            screen = previews.screen_size(terminal.fd if terminal.fd is not None else terminal.output)
            preview_text, question = previews.render_question(kind, title, preview, self.root, terminal.mark, why=why,
                                                              screen=screen)
            terminal.write(preview_text)
            if terminal.discard_typed_ahead():  # once the preview is shown, and before the question is
                terminal.write("(discarded what was typed before this question)\n")
            terminal.write(question)
            answer = terminal.read_answer() or ""
            while True:  # until an answer that decides: "v" and "?" show more, words that start no command
                if answer.strip().lower() in ("v", "view") and question.endswith("[v]iew it all: "):
                    preview_text, question = previews.render_question(kind, title, preview, self.root, terminal.mark,
                                                                      whole=True, why=why, screen=screen)
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


# Last, as it builds on this module's escape: the previews and the question asked before each write or command.
from harness.cli import previews  # noqa: E402
