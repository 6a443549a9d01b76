"""The terminal, and the question asked on it before each write, command or fetch (the preview and the question's
words are previews.py's; every outside text is shown through escapes.py). The question is asked on the
terminal itself (/dev/tty), so it is seen even when stderr goes to a log or the task comes down a pipe
(`echo TASK | python agent.py -p -`, as git and ssh ask for a password), and only after discarding what was
typed before it, so a key pressed while the model was still working never answers a question the user has not
seen. With no terminal at all (a script, cron, CI) nothing waits for an answer that cannot come: the action is
refused, and the refusals are kept (`unasked`) so the end of the task can say it was not done as asked.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from harness.cli import prefixes, previews  # the narrower always: what "a WORDS" approves; what a question shows
from harness.cli.escapes import escape
from harness.modes.permissions import ACTS_LATER

try:
    import fcntl
    import termios
except ImportError:  # Windows: no terminal control; questions fall back to stdin and stderr
    termios = None

ASKED_EVEN_WITH_YES = " (an edit that acts later: asked even with --yes)"  # how `unasked` marks one
NO_TERMINAL = ("Nobody can be asked to approve it: plainagent is not running at a terminal. "
               "The user can run plainagent with --yes to allow writes and commands.")


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
    # The refusal word is taken off only where it stands alone: "no", "no, because ...", "n: wrong file", "nope
    # later". In "no new files please" it is part of the reason, which is kept whole.
    said_no = re.match(r"(?i)(?:(?:nope|nah|no|n)\s*(?:[,:;.!\u2014-]+\s*|$)|(?:nope|nah|n)\s+)", text)
    reason = text[said_no.end():] if said_no else text
    return "no", f"The user said no{': ' + reason if reason else ''}."


class TerminalConfirm:
    """Asks the user before each write or command: yes, no (with a reason), or always for this session (for a
    command, always or only for the commands that start with the words given: prefixes.prefix_allows)."""

    def __init__(self, root: Path | None = None, remembered: prefixes.Remembered | None = None, *, stdin=None,
                 terminal: str = "/dev/tty"):
        self.root = root  # the workspace, where commands run
        self.remembered = remembered or prefixes.Remembered()  # PLAINAGENT_ALLOW: approved in every session
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
        if command is not None and (prefixes.approved(self.always, command) or self.remembered.allows(command)):
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
                terminal.write(previews.DISCARDED + "\n")
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
                if self.remembered.can_remember(refusal):  # and for every session, if the user says so
                    file = self.remembered.env_file
                    terminal.write(escape(prefixes.REMEMBER_QUESTION.format(prefix=refusal, variable=prefixes.VARIABLE,
                                                                            file=file)))
                    if parse_answer(terminal.read_answer() or "")[0] == "yes":
                        terminal.write(escape(self.remembered.remember(refusal), keep="\n"))
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
        self.settings = termios.tcgetattr(self.fd) if self.fd is not None else None
        if self.settings and not self.settings[3] & termios.ECHO:  # off while a task runs (typed_ahead.py): on
            # for the question's whole time, so that the answer (and a Ctrl-C's ^C) is seen as it is typed
            echoing = self.settings[:3] + [self.settings[3] | termios.ECHO] + self.settings[4:]
            termios.tcsetattr(self.fd, termios.TCSANOW, echoing)
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is KeyboardInterrupt:  # Ctrl-C ends the task: "Interrupted." goes on a line of its own
            self.write("\n")
        if self.settings:
            termios.tcsetattr(self.fd, termios.TCSANOW, self.settings)
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
