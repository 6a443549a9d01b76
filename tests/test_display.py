"""What the user sees of a streamed reply (display.py): text as it comes, no raw tool calls, reasoning dimmed."""

import io
import random
import sys
import threading

import pytest

from harness.cli import display
from harness.cli.display import LiveReply, Spinner


class Screen(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def shown(pieces: list[tuple[str, str]], tty: bool = False, colour: bool = False) -> tuple[str, LiveReply]:
    screen = Screen(tty)
    live = LiveReply(screen)
    live.colour = colour
    live.start()
    for kind, text in pieces:
        live.show(kind, text)
    live.finish()
    return screen.getvalue(), live


def texts(*pieces: str) -> list[tuple[str, str]]:
    return [("text", piece) for piece in pieces]


CALL = 'tool: edit_file({"path": "app.py", "old_str": "a", "new_str": "b"})'


@pytest.mark.parametrize("reply, expected", [
    ("Hello, world.", "Hello, world.\n"),
    ("Two\nlines\n", "Two\nlines\n"),
    (f"I will fix it.\n{CALL}\n", "I will fix it.\n"),
    (f"Fixing:\n- **tool:** {CALL[6:]}\nmore text", "Fixing:\n"),  # from the first call on, nothing
    ("tools are handy\nTool: pytest, all green.", "tools are handy\nTool: pytest, all green.\n"),  # not calls
    ("<think>plan it</think>\nThe answer.", "plan it\nThe answer.\n"),  # reasoning, dimmed on a colour terminal
    ("<thi", "<thi\n"),
    ("a\x1b[2Jb\u202ec\r\n", "a\\x1b[2Jb\\u202ec\\r\n"),  # escape codes are shown, never sent
])
@pytest.mark.parametrize("seed", range(5))
def test_a_reply_split_anywhere_shows_the_same(reply, expected, seed):
    rng = random.Random(seed)
    cuts = sorted(set(rng.sample(range(1, len(reply)), min(len(reply) - 1, rng.randint(1, 8)))))
    pieces = [reply[start:end] for start, end in zip([0, *cuts], [*cuts, len(reply)])]
    assert shown(texts(*pieces), tty=True)[0] == expected


def test_text_is_shown_as_it_arrives_except_the_start_of_a_maybe_tool_line():
    screen = Screen(False)
    live = LiveReply(screen)
    live.start()
    seen = []
    for piece in ["Look", "ing now.\n", "to", "ol", ": read_file(", '{"path": "a"})']:
        live.show("text", piece)
        seen.append(screen.getvalue())
    assert seen == ["Look", "Looking now.\n", "Looking now.\n", "Looking now.\n", "Looking now.\n", "Looking now.\n"]


def test_reasoning_is_dimmed_on_a_colour_terminal_and_the_answer_on_its_own_line():
    output, live = shown([("reasoning", "think"), ("reasoning", "ing"), ("text", "Answer.")], tty=True, colour=True)
    assert output == "\x1b[2mthinking\x1b[22m\nAnswer.\n"
    assert live.showed("Answer.") and not live.showed("Answer.", sys.stdout)  # not on stdout: printed there


def test_reasoning_is_not_written_to_a_log():
    output, _ = shown([("reasoning", "secret plan"), ("text", "<think>more</think>Answer.")], tty=False)
    assert output == "Answer.\n"


def test_an_interrupted_reply_ends_its_line():
    screen = Screen(False)
    live = LiveReply(screen)
    live.start()
    live.show("text", "Half a sen")
    live.finish()  # what call_model does on the way out of a Ctrl-C
    assert screen.getvalue() == "Half a sen\n"


def test_a_log_line_gets_a_line_of_its_own():
    screen = Screen(False)
    live = LiveReply(screen)
    live.start()
    live.show("text", "Half")
    live.pause()
    live.show("text", " more")
    assert screen.getvalue() == "Half\n more"


class WatchedScreen(Screen):
    """A screen the test can wait on: `wait_for(condition)` returns once what was written meets it."""

    def __init__(self, tty: bool):
        super().__init__(tty)
        self.written = threading.Condition()

    def write(self, text: str) -> int:
        with self.written:
            self.written.notify_all()
            return super().write(text)

    def wait_for(self, condition, timeout: float = 10) -> None:
        with self.written:
            assert self.written.wait_for(lambda: condition(self.getvalue()), timeout), self.getvalue()


def test_the_spinner_counts_seconds_and_clears_its_line():
    screen = WatchedScreen(True)
    spinner = Spinner(screen, interval=0.01)
    spinner.start()
    screen.wait_for(lambda text: text.count("\r") >= 2)  # two frames shown (the first after display's 0.3 s)
    spinner.stop()
    output = screen.getvalue()
    assert output.startswith("\r- 0 s\r\\ 0 s") and output.endswith("\r" + " " * 12 + "\r")


def test_a_quick_reply_shows_no_spinner():
    screen = Screen(True)
    spinner = Spinner(screen, interval=0.01)
    spinner.start()
    spinner.stop()
    assert screen.getvalue() == ""


@pytest.mark.parametrize("stdout_tty, stderr_tty, term, live_on, spinner", [
    (True, True, "xterm", "stdout", True),
    (False, True, "xterm", "stderr", True),  # -p with stdout a pipe: the answer alone goes there
    (False, False, "xterm", "stderr", False),  # a log: no spinner
    (True, True, "dumb", "stdout", False),
])
def test_where_the_live_text_and_the_spinner_go(monkeypatch, stdout_tty, stderr_tty, term, live_on, spinner):
    streams = {"stdout": Screen(stdout_tty), "stderr": Screen(stderr_tty)}
    monkeypatch.setattr(sys, "stdout", streams["stdout"])
    monkeypatch.setattr(sys, "stderr", streams["stderr"])
    monkeypatch.setenv("TERM", term)
    monkeypatch.setattr(display, "active", None)  # restored after the test: for_terminal sets it
    live = LiveReply.for_terminal()
    assert live.output is streams[live_on] and (live.spinner is not None) == spinner and display.active is live


@pytest.mark.parametrize("no_color, colour", [(None, True), ("1", False)])
def test_colour_only_without_no_color(monkeypatch, no_color, colour):
    monkeypatch.setenv("TERM", "xterm")
    if no_color:
        monkeypatch.setenv("NO_COLOR", no_color)
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    assert display.uses_colour(Screen(True)) is colour and display.uses_colour(Screen(False)) is False


def test_a_restart_discards_the_state_of_the_cut_attempt():
    screen = Screen(False)
    live = LiveReply(screen)
    live.start()
    for kind, text in [("text", "Half.\ntool: read_file("), ("restart", ""), ("text", "Whole answer.")]:
        live.show(kind, text)
    live.finish()
    assert screen.getvalue() == "Half.\nWhole answer.\n" and live.showed("Whole answer.")


def test_a_long_line_of_marks_is_not_held_back_for_ever():
    screen = Screen(False)
    live = LiveReply(screen)
    live.start()
    for _ in range(1000):
        live.show("text", "- ")
    assert len(screen.getvalue()) > 1900
