"""What the user sees: the session's first lines (the endpoint, the workspace, the mode, what commands may touch),
the model's reply as it streams in, a spinner until its first byte (saying what it waits for), and the activity log.

The text goes where the answer goes when that is a terminal (stdout); when stdout is a pipe, it must carry
exactly the final answer, so the live text goes to stderr instead and logs of unattended runs show progress.
A reply's tool calls are not echoed: from the first line that calls a tool the rest of the reply is held
back, and the activity line (`→ edit_file(path="app.py", ...)`) says what runs. Which line calls one is the
parser's answer (`toolcalls.opens_call`), never a copy of its grammar, so what is hidden is what runs.
Reasoning (a `reasoning_content` stream, or a leading `<think>` block) is shown only on a terminal, dimmed;
without colour (NO_COLOR, TERM=dumb) between `[thinking]` and `[end of thinking]` lines, so the model's
thinking is never taken for its answer. Everything shown was written by the model, so it goes through `escape`
like every other outside text: no escape sequence reaches the screen, and neither does the API key (a server can
echo it back), not even split between two pieces of the stream: a piece's end that could start the key waits for
the next piece.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Collection
from typing import TextIO

from harness.cli import escapes, prefixes
from harness.cli.escapes import escape, for_output, hide_key
from harness.cli.prefixes import Remembered
from harness.cli.terminal import can_draw
from harness.commands.landlock import Boundary
from harness.commands.refusal_notes import REFUSAL_NOTE
from harness.commands.shell import cut_lines, failed, project_venv
from harness.common.counting import count
from harness.common.hosts import shown_url
from harness.common.redaction import Redactor
from harness.modes.permissions import describe_mode
from harness.parser.toolcalls import opens_call

MAX_HELD = 200  # characters of a line held back at most: past them it is decided on what has come
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
DIM, UNDIM = "\x1b[2m", "\x1b[22m"
THINKING, END_OF_THINKING = "[thinking]\n", "[end of thinking]\n"  # reasoning's marks where there is no colour
SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class LiveReply:
    """Shows each reply as it arrives: `start` before the request, `show` for each piece, `finish` after."""

    def __init__(self, output: TextIO, spinner: Spinner | None = None, tool_names: Collection[str] | None = None):
        self.output = output
        # The names the parser is given: whether `Tool: Name(x)` is a call depends on them. None: any name may
        # be a tool's, so such a line is hidden, and the answer, not shown whole, is printed once it is known.
        self.tool_names = tool_names
        self.colour = can_draw(output, colour=True)
        self.reasoning_shown = output.isatty()  # a log keeps the reply, not the model's thinking
        self.spinner = spinner
        self.at_line_start = True  # nothing of ours is left on the line: a log line may follow
        self.in_reasoning = False  # the last thing shown was reasoning (dimmed, or marked)
        self.reset()

    @classmethod
    def for_terminal(cls, tool_names: Collection[str] | None = None) -> LiveReply:
        """The reply on stdout when it is a terminal, else on stderr; the spinner when stderr is a terminal."""
        global active
        output = sys.stdout if sys.stdout.isatty() else sys.stderr
        spinner = Spinner(sys.stderr) if can_draw(sys.stderr) else None
        active = cls(output, spinner, tool_names)
        return active

    def start(self) -> None:
        """Begin a reply: the spinner turns until its first piece."""
        self.reset()
        if self.spinner:
            self.spinner.start()

    def reset(self) -> None:
        self.line = ""  # the current line's text not shown yet, while it may still become a tool line
        self.line_is_text = False  # the current line is known not to be a tool line
        self.hiding = False  # a tool line came: the rest of the reply is not shown
        self.thinking: bool | None = None  # inside a leading <think> block; None until the reply's start is known
        self.after_think = False  # a <think> block just ended: the line breaks after it are not the reply's
        self.shown = ""  # the reply's text shown so far, without reasoning
        self.unseen = Redactor(escapes.secret.value)  # what may be the start of the key, held until the next piece

    def show(self, kind: str, text: str) -> None:
        """One piece of the reply as it arrived: kind "text" or "reasoning"; "restart" when the client asks
        again after a cut stream (what was shown is discarded: the next attempt starts on a line of its own);
        "waiting" with what the request waits for, which the spinner says."""
        if kind == "waiting":
            if self.spinner:
                self.spinner.label = escape(text)  # the host is the user's setting, but a line is a line
            return
        if self.spinner:
            self.spinner.stop()
        if kind == "restart":
            self.end_line()
            self.start()
            return
        if kind == "reasoning":
            if self.reasoning_shown:
                self.write(text, dim=True)
            return
        if self.thinking is not False:
            text = self.take_think(text)
        if self.after_think:  # "</think>" and the "\n" after it may come in two pieces
            text = text.lstrip("\n")
            self.after_think = not text
        self.take_text(text)

    def finish(self) -> None:
        """The reply is over (or was cut, or interrupted): show what was held back, end the line."""
        if self.spinner:
            self.spinner.stop()
        if self.thinking is None and self.line:  # a reply shorter than "<think>"
            self.thinking = False
        if not (self.hiding or self.thinking) and self.line and not self.line_opens_call(complete=True):
            self.emit(self.line)
        self.line = ""
        self.end_line()

    def pause(self) -> None:
        """Make room for a log line: no spinner, and the cursor at the start of a line."""
        if self.spinner:
            self.spinner.stop()
        self.end_line()

    def showed(self, text: str, on: TextIO | None = None) -> bool:
        """True if the last reply showed `text` whole (on `on`, if given), so it need not be shown again."""
        return (on is None or self.output is on) and self.shown.strip() == text.strip()

    # --- inside ---

    def take_think(self, text: str) -> str:
        """Show a leading <think> block dimmed; return the text after it, to be shown as the reply."""
        if self.thinking is None:
            held = (self.line + text).lstrip()
            if THINK_OPEN.startswith(held) and len(self.line) < MAX_HELD:
                self.line += text
                return ""
            self.thinking = held.startswith(THINK_OPEN)
            text, self.line = self.line + text, ""
            if not self.thinking:
                return text
            text = text.lstrip()[len(THINK_OPEN):]
        pending = self.line + text
        if (end := pending.find(THINK_CLOSE)) >= 0:
            if self.reasoning_shown:
                self.write(pending[:end], dim=True)
            self.thinking, self.line, self.after_think = False, "", True
            return pending[end + len(THINK_CLOSE):].lstrip("\n")
        keep = next((n for n in range(len(THINK_CLOSE) - 1, 0, -1) if pending.endswith(THINK_CLOSE[:n])), 0)
        if self.reasoning_shown:
            self.write(pending[:len(pending) - keep], dim=True)
        self.line = pending[len(pending) - keep:]
        return ""

    def take_text(self, text: str) -> None:
        """Show text, line by line, holding back the start of a line until the parser says whether it opens a
        call (`toolcalls.opens_call`); from a line that does, nothing more is shown."""
        while text and not self.hiding:
            head, newline, text = text.partition("\n")
            if self.line_is_text:
                self.emit(head + newline)
            else:
                self.line += head + newline  # may span lines: `tool: x(` and its `{` on the next line
                calls = self.line_opens_call(complete=len(self.line) > MAX_HELD)
                if calls:
                    self.hiding = True
                    return
                if calls is False:
                    self.line_is_text = True
                    self.emit(self.line)
                    self.line = ""
            if newline:
                self.line_is_text = False

    def line_opens_call(self, complete: bool) -> bool | None:
        """The parser's answer for the line held so far: True, False, or None while it is not settled."""
        return opens_call(self.line, self.tool_names, complete=complete)

    def emit(self, text: str) -> None:
        self.shown += text
        self.write(text)

    def write(self, text: str, dim: bool = False) -> None:
        if dim != self.in_reasoning:  # what was held back belongs to the kind of text before
            self.put(self.unseen.flush(), self.in_reasoning)
        self.put(self.unseen.feed(text), dim)

    def put(self, text: str, dim: bool) -> None:
        if not text:
            return
        if self.in_reasoning and not dim:  # from thinking to the reply, on a line of its own
            self.end_reasoning()
        shown = escape(text, keep="\n\t")
        if dim and not self.in_reasoning:
            shown = (DIM if self.colour else ("" if self.at_line_start else "\n") + THINKING) + shown
        self.in_reasoning = dim
        self.output.write(shown)
        self.output.flush()
        self.at_line_start = text.endswith("\n")

    def end_reasoning(self) -> None:
        """Dimming off (or, without colour, the end of the reasoning marked), and the line ended."""
        self.output.write((UNDIM if self.colour else "") + ("" if self.at_line_start else "\n")
                          + ("" if self.colour else END_OF_THINKING))
        self.in_reasoning, self.at_line_start = False, True

    def end_line(self) -> None:
        self.put(self.unseen.flush(), self.in_reasoning)
        if self.in_reasoning:
            self.end_reasoning()
        if not self.at_line_start:
            self.output.write("\n")
            self.at_line_start = True
        self.output.flush()


active: LiveReply | None = None  # the one made for this terminal, if any: log lines make room through it


def make_room() -> None:
    """Before a log line: stop the spinner and finish a line the reply left open, so the log line stands alone."""
    if active is not None:
        active.pause()


class Spinner:
    """A spinner with the seconds waited, on its own line of stderr, until the reply's first byte, and what it
    waits for: `⠋ 3 s  waiting for the first byte from localhost:8080 (up to 120 s)`."""

    def __init__(self, output: TextIO, interval: float = 0.1, delay: float = 0.3):
        self.output = output
        self.interval = interval
        self.delay = delay  # before the first frame: no flicker for a quick answer
        self.label = ""  # what is waited for, as the client says it; read at each frame
        self.thread: threading.Thread | None = None
        self.stopped = threading.Event()
        encoding = (getattr(output, "encoding", None) or "").lower().replace("-", "")
        self.frames = SPINNER_FRAMES if encoding == "utf8" else "-\\|/"

    def start(self) -> None:
        self.stop()
        self.label = ""
        self.stopped.clear()
        self.thread = threading.Thread(target=self.spin, daemon=True)
        self.thread.start()

    def spin(self) -> None:
        started, n_frames, width = time.monotonic(), 0, 0
        while not self.stopped.wait(self.interval if n_frames else self.delay):
            frame = self.frames[n_frames % len(self.frames)]
            line = f"{frame} {time.monotonic() - started:.0f} s  {self.label}".rstrip()
            # One line, never wrapped, with room for the "^C" a terminal echoes after it: a "\r" returns to the start
            # of the last row only, and a wrapped line would stay on the screen.
            line = line[:shutil.get_terminal_size().columns - 3]
            self.output.write("\r" + line.ljust(width))  # over a longer line before it, if the label changed
            self.output.flush()
            n_frames, width = n_frames + 1, max(width, len(line))
        if n_frames:  # the line, and a "^C" the terminal may have echoed after it
            self.output.write("\r" + " " * (width + 2) + "\r")
            self.output.flush()

    def stop(self) -> None:
        if self.thread is not None:
            self.stopped.set()
            self.thread.join()
            self.thread = None


# --- the activity log: what runs, on stderr, one line each ---


class ActivityLog:
    """The activity log of the tools' calls (tools.py's Toolbox tells it): a line as each call starts, and one for
    how it ended; a call refused before it ran, one line with the reason."""

    def __init__(self, log: Callable[[str], None]):
        self.log = log

    def started(self, call) -> None:
        self.log(f"→ {call.name}({describe_args(call.args)})")

    def ended(self, result, ran: bool) -> None:
        if ran:
            self.log(f"  {outcome(result.name, result.ok, result.output)}: "
                     f"{summarize(result.output, whole=not result.ok)}")
            return
        first = result.output.splitlines()[0]  # an argument's problem names the tool already: say it once
        named = first.startswith(result.name) or result.name == "?"  # "?": a call whose tool could not be read
        self.log(f"✗ {first}" if named else f"✗ {result.name}: {first}")


def describe_args(args: dict) -> str:
    """A call's arguments on one short line, for the activity log: cut once escaped, so that a run of invisible
    characters (each shown as six, `\\u200b`) cannot make it a screenful."""
    text = escape(", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in args.items()))
    return text if len(text) <= 100 else text[:97] + "..."


def outcome(name: str, ok: bool, output: str) -> str:
    """'ok', 'error', or 'failed' for a command that ran and exited non-zero (a result, but not a success)."""
    if not ok:
        return "error"
    return "failed" if name == "run_command" and failed(output) else "ok"


# --- the session's first lines ---


def describe_start(config, commands: str = "") -> str:
    """The session's first lines, on stderr before anything else (the REPL's banner starts with them, and so
    does -p): the model, the endpoint and where it came from, the workspace and the mode; `commands`, what the
    kernel lets commands do (describe_boundary's); then what became of a project's .env."""
    url_from = config.sources.get("OPENAI_BASE_URL")
    key_from = config.sources.get("OPENAI_API_KEY") if config.api_key else None
    where = f"from {url_from}" if url_from else "the default"
    where += "; no key" if not config.api_key else "" if key_from == url_from else f"; the key from {key_from}"
    # Each shown setting names where it came from: a model exported while the URL comes from the .env would
    # otherwise read as the .env's, and a user editing that line would see no change.
    model_from = config.sources.get("OPENAI_MODEL")
    where += f"; the model from {model_from}" if model_from and model_from != url_from else ""
    # A line break in a name (a project's .env may give the model's) would start a forged line: quoted instead.
    model, workspace = (text if text.isprintable() else json.dumps(text) for text in (config.model,
                                                                                    str(config.workspace)))
    # The mode too, when a setting gave it (a project's .env may have, once allowed): a flag is the user's own.
    mode_from = config.sources.get("PLAINAGENT_MODE")
    mode_from = f"PLAINAGENT_MODE from {mode_from}; " if mode_from and not mode_from.startswith("-") else ""
    allowed = Remembered(list(config.allow), None, config.sources.get(prefixes.VARIABLE, "")).describe()
    allowed = f"; {allowed}" if allowed and config.mode in ("ask", "edits") else ""  # the modes that ask commands
    return "\n".join([f"plainagent: {model} at {shown_url(config.base_url)} ({where}), workspace {workspace}, "
                      f"mode {config.mode} ({mode_from}{describe_mode(config.mode)}{allowed})",
                      *([commands] if commands else []), *config.notes])


def describe_boundary(boundary: Boundary | None, config) -> str:
    """One line on what commands can touch: the kernel boundary's, or that there is none, and who turned it off;
    and, when the workspace has a venv of its own, that commands run with it."""
    venv = project_venv(config.workspace, os.environ)
    venv = f"\ncommands run with the workspace's {venv.name} (its python first on PATH)" if venv else ""
    if boundary is None:
        where = config.sources.get("PLAINAGENT_SANDBOX", "the settings")
        return f"commands: no kernel sandbox (PLAINAGENT_SANDBOX is off in {where}); the guard rail only" + venv
    return boundary.summary() + boundary.afterwards(short=True) + venv


def show_start(config, boundary: Boundary | None) -> None:
    """Hand the key to the terminal, so that from here on nothing shown holds it, then show the session's first
    lines (describe_start's)."""
    hide_key(config.api_key)
    log(describe_start(config, describe_boundary(boundary, config)))


def summarize(output: str, whole: bool = False) -> str:
    """A result's first line, and how many more there are, for the activity log (and, when a command's output was
    cut for the model, which lines it saw); under it, a failed command's last lines, and what the kernel sandbox
    refused, if it did (the note the model reads ends the result: the user sees why too). A first line longer
    than GLIMPSE is cut, and says so, unless `whole`: an error's line ends with the advice, never cut. The result
    is kept as the last one shown, for /show."""
    global last_result
    last_result = output
    lines = output.splitlines() or [""]
    more = f" (+{count(len(lines) - 1, 'line')})" if len(lines) > 1 else ""
    if cut := cut_lines(output):  # the lines the model did not see are the user's to know of
        n_lines, n_first, n_last = cut
        more = (f" (+{count(n_lines - 1, 'line')}: cut for the model, which saw the first {n_first:,} and the last "
                f"{n_last:,} lines; /show shows them all)")
    refused = next((line for line in lines[1:] if line.startswith(REFUSAL_NOTE)), "")
    refused = f"\n  {refused[1:].split(': commands ')[0]} (/sandbox: what commands may do)" if refused else ""
    first = lines[0] if whole or len(lines[0]) <= GLIMPSE else lines[0][:GLIMPSE] + "…"
    # A failed command: its last lines are what the model reads first (the error), so the user sees them too.
    body = [line for line in lines[1:] if not line.startswith(REFUSAL_NOTE)]
    tail = "".join(f"\n  | {line[:GLIMPSE]}" for line in body[-FAILED_TAIL:]) if failed(output) else ""
    return first + more + tail + refused


GLIMPSE = 150  # characters of a result's first line in the activity log: what it is, not all of it
FAILED_TAIL = 3  # last lines of a failed command's output shown under its line
last_result: str | None = None  # the last tool result the activity log summarized (a sub-agent's too): /show's


def show_answer(answer: str, display: LiveReply | None) -> None:
    """The task's answer on stdout, unless it was seen there as it streamed: escaped on a terminal; a pipe gets
    it exact, but without the key."""
    if not (display and display.showed(answer, sys.stdout)):
        print(for_output(answer, sys.stdout), flush=True)


def log(line: str) -> None:
    """Activity goes to stderr, so stdout carries only the answer (`-p` output can be piped).

    What is logged holds the model's and the files' text: escape codes in it could rewrite the screen or
    the clipboard, so they are shown, not sent.
    """
    make_room()  # the spinner, or a streamed line not yet ended, must not run into the log line
    print(escape(line, keep="\n\t"), file=sys.stderr, flush=True)
    for listener in listeners:
        listener(line)


listeners: list[Callable[[str], None]] = []  # told each line logged: -p --json's end says the last (events.py)


def indented(log: Callable[[str], None]) -> Callable[[str], None]:
    """A log whose lines stand under the parent's: a sub-agent's activity, under its delegate call."""
    return lambda line: log("\n".join("    " + part for part in line.split("\n")))


def describe_tokens(model) -> str:
    """'(1,200 prompt + 300 completion tokens so far)' for a SessionModel, saying which are estimates."""
    tokens, n_estimated = model.tokens, model.n_estimated
    which = "" if not n_estimated else ", estimated" if n_estimated == model.n_requests else ", partly estimated"
    return f"({tokens['prompt_tokens']:,} prompt + {tokens['completion_tokens']:,} completion tokens so far{which})"
