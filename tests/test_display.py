"""What the user sees of a streamed reply (display.py): text as it comes, no raw tool calls, reasoning dimmed."""

import io
import os
import random
import shutil
import sys
import threading

import pytest

from harness.cli import display
from harness.cli.display import LiveReply, Spinner, summarize
from harness.cli.terminal import Terminal, can_draw
from harness.commands.shell import run_shell
from harness.common.redaction import Secret
from harness.files.workspace import Workspace
from harness.parser.toolcalls import parse_reply


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
    ("<think>plan it</think>\nThe answer.", "[thinking]\nplan it\n[end of thinking]\nThe answer.\n"),  # reasoning, marked
    ("<thi", "<thi\n"),
    ("a\x1b[2Jb\u202ec\r\n", "a\\x1b[2Jb\\u202ec\\r\n"),  # escape codes are shown, never sent
])
@pytest.mark.parametrize("seed", range(5))
def test_a_reply_split_anywhere_shows_the_same(reply, expected, seed):
    rng = random.Random(seed)
    cuts = sorted(set(rng.sample(range(1, len(reply)), min(len(reply) - 1, rng.randint(1, 8)))))
    pieces = [reply[start:end] for start, end in zip([0, *cuts], [*cuts, len(reply)])]
    assert shown(texts(*pieces), tty=True)[0] == expected


# The parser's names, with dots and dashes as MCP-style tools have them.
NAMES = ["read_file", "edit_file", "list_files", "mcp.fetch-url", "git-log"]
CALL_LINES = [
    'tool: read_file({"path": "a.py"})', 'TOOL: read_file({"path": "a.py"})', "tool: list_files()",
    '**tool:** read_file({"path": "a.py"})', '**tool: read_file**({"path": "a.py"})', '**tool**: read_file({"path": "a"})',
    '- tool: read_file({"path": "a.py"})', '1. tool: read_file({"path": "a.py"})', '12) **tool:** list_files()',
    '  * [x] tool: read_file({"path": "a.py"})', '> tool: read_file({"path": "a.py"})',
    '`tool: read_file({"path": "a.py"})`', 'tool: `read_file`({"path": "a.py"})', '__tool:__ list_files()',
    'tool: mcp.fetch-url({"url": "https://example.com"})', 'tool: git-log({})', '- tool: mcp.fetch-url()',
    'tool: github.create-issue({"title": "x"})',  # a tool that does not exist: answered, so a call
    'tool: bash(ls -la)', 'Tool: read_file(path="a.py")', 'tool: read_file ({"path": "a.py"})',
    'tool: read_file', 'tool: mcp.fetch-url', 'Tool: pytest(\n{"args": "-q"})',
    # lines that start like a call to a known tool and are not one: answered as calls (#17), so held back as calls
    "tool: read_file (3 times)", "tool: read_file with a path argument", "tool: read_file is what I used.",
    'Tool: read_file {"path": "a.py"}', 'tool: read_file {"path": "a.py"}',
]
PROSE_LINES = [
    "Tool: pytest, all green.", 'Tool: read_file {"path": "a.py"} is how it is called.',
    "Tool: pytest(all green)", "Tool: read_file", "Tool: mcp.fetch-url is the one I used.",
    'tools: read_file({"path": "a"})', 'Run `tool: read_file({"path": "a.py"})` to read a file.',
    "- [ ] tool support for Windows", "**Tool:** `pytest` passed.",
    "tool:", "------------------------------", "1. Install the toolchain.", "to do: nothing", "t", "**",
    "Tool: mcp.fetch-url (twice)", "Tool: git-log",
]


def pieces_of(text: str, how: str) -> list[str]:
    if how == "whole":
        return [text]
    if how == "characters":
        return list(text)
    rng = random.Random(how)
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, 6)))
    return [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)])]


@pytest.mark.parametrize("line, calls", [(line, True) for line in CALL_LINES] + [(line, False) for line in PROSE_LINES])
@pytest.mark.parametrize("how", ["whole", "characters", "pieces 1", "pieces 2"])
def test_the_display_hides_exactly_the_lines_the_parser_runs_as_calls(line, calls, how):
    """The display asks the parser (opens_call) instead of keeping a grammar of its own: what is hidden as a
    call is what parse_reply reads as one, however the reply arrives."""
    reply = f"Let me see.\n{line}\nThat is all."
    assert bool(parse_reply(reply, NAMES).calls) is calls
    screen = Screen(False)
    live = LiveReply(screen, tool_names=NAMES)
    live.start()
    for piece in pieces_of(reply, how):
        live.show("text", piece)
    live.finish()
    assert screen.getvalue() == ("Let me see.\n" if calls else reply + "\n")


@pytest.mark.parametrize("line", CALL_LINES)
def test_without_the_names_every_call_is_still_hidden(line):
    """LiveReply.for_terminal() is not told the tool names: then any name may be a tool's, and more is hidden,
    never less (the answer, not shown whole, is printed when it is known)."""
    output, live = shown(texts(f"Let me see.\n{line}\nThat is all."))
    assert output == "Let me see.\n" and live.tool_names is None


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


@pytest.mark.parametrize("pieces, expected", [
    ([("reasoning", "plan"), ("reasoning", " it\nstep 2"), ("text", "Answer.")],
     "[thinking]\nplan it\nstep 2\n[end of thinking]\nAnswer.\n"),
    ([("text", "<think>plan it\n</think>\nAnswer.")], "[thinking]\nplan it\n[end of thinking]\nAnswer.\n"),
    ([("reasoning", "cut while thinking")], "[thinking]\ncut while thinking\n[end of thinking]\n"),
])
def test_without_colour_the_reasoning_is_marked_off_from_the_answer(pieces, expected):
    output, live = shown(pieces, tty=True, colour=False)
    assert output == expected
    assert live.shown == ("Answer." if "Answer." in expected else "")  # the marks are not the reply's


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
    spinner = Spinner(screen, interval=0.01, delay=0.01)
    spinner.start()
    screen.wait_for(lambda text: text.count("\r") >= 2)  # two frames shown
    spinner.stop()
    output = screen.getvalue()
    assert output.startswith("\r- 0 s\r\\ 0 s") and output.endswith("\r" + " " * 7 + "\r")


def test_the_spinner_says_what_it_waits_for_on_one_line(monkeypatch):
    monkeypatch.setattr(shutil, "get_terminal_size", lambda: os.terminal_size((40, 24)))
    screen = WatchedScreen(True)
    spinner = Spinner(screen, interval=0.01, delay=0.01)
    spinner.start()
    reply = LiveReply(screen, spinner)
    reply.show("waiting", "waiting for the first byte from localhost:8080 (up to 120 s)")
    screen.wait_for(lambda text: "waiting" in text)
    reply.show("waiting", "short")
    screen.wait_for(lambda text: "short" in text)
    spinner.stop()
    frames = screen.getvalue().split("\r")[1:-1]
    assert "- 0 s  waiting for the first byte fro" in frames  # cut to the terminal's width, with room for a "^C"
    assert all(len(frame) <= 37 for frame in frames[:-1])
    shorter = next(frame for frame in frames if "short" in frame)
    assert shorter.rstrip().endswith("0 s  short") and len(shorter) == 37  # over the longer line before it
    assert frames[-1] == " " * 39  # and the "^C" a terminal echoes after it


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


@pytest.mark.parametrize("no_color, colour", [(None, True), ("1", False), ("", True)])  # empty: unset (no-color.org)
def test_colour_only_without_no_color(monkeypatch, no_color, colour):
    monkeypatch.setenv("TERM", "xterm")
    if no_color is not None:
        monkeypatch.setenv("NO_COLOR", no_color)
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    assert can_draw(Screen(True), colour=True) is colour and can_draw(Screen(False), colour=True) is False
    assert LiveReply(Screen(True)).colour is colour


@pytest.mark.parametrize("term, no_color, spinner, colour", [
    ("xterm", None, True, True),
    ("xterm", "1", True, False),  # NO_COLOR is about colour: the spinner still turns
    ("dumb", None, False, False),  # escape codes would show as text
    (None, None, False, False),  # no TERM at all: assume the least
])
def test_the_spinner_the_dimmed_reasoning_and_the_marked_escapes_ask_one_function(monkeypatch, term, no_color,
                                                                                   spinner, colour):
    for name, value in [("TERM", term), ("NO_COLOR", no_color)]:
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "stdout", Screen(True))
    monkeypatch.setattr(sys, "stderr", Screen(True))
    monkeypatch.setattr(display, "active", None)  # restored after the test: for_terminal sets it
    live = LiveReply.for_terminal()
    assert (live.spinner is not None) is spinner is can_draw(sys.stderr)
    assert live.colour is colour
    assert (Terminal(None, None, Screen(True)).mark("x") != "x") is colour  # reverse video, or the text as it is


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


# --- the API key, wherever a server put it ---

KEY = "sk-proj-display-0123456789"


@pytest.mark.parametrize("reply, expected", [
    (f"Your header was: Bearer {KEY}.\n", "Your header was: Bearer [REDACTED].\n"),
    (f"{KEY}{KEY} and s", "[REDACTED][REDACTED] and s\n"),  # a lone "s" at the end is no piece of the key
    ("cut at sk-proj-d", "cut at [REDACTED]\n"),  # a piece of it at the end, when the reply stops there
    (f"<think>it is {KEY}</think>\nok", "[thinking]\nit is [REDACTED]\n[end of thinking]\nok\n"),  # reasoning too
])
@pytest.mark.parametrize("seed", range(8))
def test_the_key_is_never_shown_even_split_between_pieces(monkeypatch, reply, expected, seed):
    monkeypatch.setattr("harness.cli.escapes.secret", Secret(KEY))
    rng = random.Random(seed)
    cuts = sorted(set(rng.sample(range(1, len(reply)), min(len(reply) - 1, rng.randint(1, 12)))))
    pieces = [reply[start:end] for start, end in zip([0, *cuts], [*cuts, len(reply)])]
    screen, live = shown(texts(*pieces), tty=True)
    assert screen == expected and KEY[:8] not in screen
    assert live.shown == reply.replace(f"<think>it is {KEY}</think>\n", "")  # what it said: to know it was shown


def test_the_key_in_streamed_reasoning_is_never_shown(monkeypatch):
    monkeypatch.setattr("harness.cli.escapes.secret", Secret(KEY))
    screen, _ = shown([("reasoning", "the key is sk-proj-dis"), ("reasoning", "play-0123456789, so"), ("text", "Done.")],
                      tty=True)
    assert screen == "[thinking]\nthe key is [REDACTED], so\n[end of thinking]\nDone.\n"


def test_a_log_line_never_shows_the_key(monkeypatch, capsys):
    monkeypatch.setattr("harness.cli.escapes.secret", Secret(KEY))
    display.log(f'→ run_command(command="echo {KEY}") and {KEY!r} as JSON: "{KEY}\\u0000"')
    assert KEY not in capsys.readouterr().err


def test_the_line_break_after_a_think_block_is_dropped_when_it_comes_in_a_piece_of_its_own():
    assert shown(texts("<think>plan it</think>", "\n", "\nThe answer."), tty=True)[0] == (
        "[thinking]\nplan it\n[end of thinking]\nThe answer.\n")


def test_a_calls_arguments_are_one_short_line_however_many_invisible_characters_they_hold():
    line = display.describe_args({"command": "ls" + "\u200b" * 3000 + "; touch x"})
    assert line == 'command="ls' + "\\u200b" * 14 + '\\u...' and len(line) == 100


def test_a_key_split_between_the_reasoning_and_the_text_is_never_shown(monkeypatch):
    monkeypatch.setattr("harness.cli.escapes.secret", Secret(KEY))
    screen, _ = shown([("reasoning", "thinking of sk-proj-disp"), ("text", "lay-0123456789 now")], tty=True)
    assert screen == "[thinking]\nthinking of [REDACTED]\n[end of thinking]\n[REDACTED] now\n"


def test_what_the_kernel_sandbox_refused_is_shown_under_the_line():
    output = ("exit code 2:\n/bin/sh: 1: cannot create /h/.bashrc: Permission denied\n(plainagent: the kernel sandbox "
              "refused writing /h/.bashrc: commands may write only inside the workspace and $TMPDIR. Another shape "
              "of the command is refused the same way; only the user can allow it.)")
    assert summarize(output) == ("exit code 2: (+2 lines)\n  | /bin/sh: 1: cannot create /h/.bashrc: Permission denied\n"
                                 "  plainagent: the kernel sandbox refused writing /h/.bashrc (/sandbox: what commands "
                                 "may do)")


def test_a_failed_commands_last_lines_are_shown_under_its_line():
    """From issue 26: `failed: exit code 1: (+13 lines)` hid the error the model was reading."""
    output = "exit code 1:\n" + "".join(f"collected line {n}\n" for n in range(10)) + "E   AssertionError: 2 != 3\n1 failed"
    assert summarize(output) == ("exit code 1: (+12 lines)\n  | collected line 9\n  | E   AssertionError: 2 != 3\n"
                                 "  | 1 failed")
    assert summarize("hello\nworld") == "hello (+1 line)"  # a success: its first line only


def test_an_errors_line_is_never_cut_and_a_long_glimpse_says_it_is_cut():
    """From issue 26: "The user can allow this host by addi" was what the user saw of a refused fetch."""
    advice = ("web_fetch refused http://127.0.0.1:8765/: the address is on this machine. The user can allow this host "
              "by adding it to PLAINAGENT_FETCH_ALLOW, e.g. PLAINAGENT_FETCH_ALLOW=127.0.0.1")
    assert summarize(advice, whole=True) == advice
    assert summarize("x" * 400) == "x" * 150 + "…"


def test_a_commands_line_says_when_its_output_was_cut_for_the_model(tmp_path):
    """From issue 26: `seq 1 5000` showed `ok: 1 (+4,222 lines)`, the model's count, as if that were all."""
    output = run_shell(Workspace(tmp_path), "seq 1 5000", timeout=10)
    assert summarize(output) == ("1 (+4,999 lines: cut for the model, which saw the first 2,221 and the last 1,999 lines; "
                                 "/show shows them all)")
    failed = run_shell(Workspace(tmp_path), "seq 1 5000; exit 1", timeout=10)
    assert summarize(failed).startswith("exit code 1: (+4,999 lines: cut for the model, which saw the first 2,221 "
                                        "and the last 1,999 lines; /show shows them all)\n  | 4998\n  | 4999\n  | 5000")
    assert summarize("1\n2\n3") == "1 (+2 lines)"  # not cut: nothing said
