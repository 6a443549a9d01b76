"""The REPL's prompt: tasks typed ahead (lines typed one by one, a block pasted while a task ran), pasted blocks as
one history entry, and the history file that two REPLs running at once both keep."""

import io
import os
import threading
import time
from pathlib import Path

import pytest
from test_terminal import Pty

from harness.cli import task_reader
from harness.cli.task_reader import TaskReader, append_history, read_history, trimmed
from harness.cli.typed_ahead import TypedAhead


@pytest.fixture
def pty(monkeypatch):
    if not hasattr(os, "openpty"):
        pytest.skip("pseudo-terminals")
    terminal = Pty()
    terminal.watchers = []  # a watcher left running would read the next test's terminal, which reuses the fd
    watch = TypedAhead.watch
    monkeypatch.setattr(TypedAhead, "watch", lambda self: (terminal.watchers.append(self), watch(self))[1])
    yield terminal
    for watcher in terminal.watchers:
        watcher.stop()
    terminal.stdin.close()
    os.close(terminal.master)
    os.close(terminal.slave)


def test_lines_typed_while_a_task_ran_are_tasks_of_their_own(pty, monkeypatch):
    monkeypatch.setattr("sys.stdout", open(os.devnull, "w"))  # the prompt
    reader = TaskReader(stdin=pty.stdin, history=Path(os.devnull))
    monkeypatch.setattr("sys.stdin", pty.stdin)
    pty.type_ahead("first typed task\nsecond typed task\n")  # before the prompt shows: typed ahead
    tasks = []
    reading = threading.Thread(target=lambda: tasks.extend([reader.read(), reader.read()]), daemon=True)
    reading.start()
    reading.join(timeout=5)  # merged into one task, the second read would wait for ever
    assert tasks == ["first typed task", "second typed task"]


def wait_until(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "it never happened"
        time.sleep(0.001)


def reader_during_a_task(pty, monkeypatch, together: float | None = None) -> TaskReader:
    """A REPL's reader just after it handed out a task: what the user types now is typed ahead."""
    monkeypatch.setattr("sys.stdout", open(os.devnull, "w"))  # the prompt
    monkeypatch.setattr("sys.stdin", pty.stdin)
    reader = TaskReader(stdin=pty.stdin, history=Path(os.devnull))
    if together is not None:
        reader.typed_ahead.together = together
    reader.typed_ahead.watch()
    return reader


def waiting(reader) -> list[int] | None:
    """The sizes of the bursts typed ahead, once the reader has looked and seen nothing more come."""
    return [burst.size for burst in reader.typed_ahead.bursts] if not reader.typed_ahead.grew else None


PASTE = "    def area(r):\n        return 3.14 * r * r\n\n    print(area(2))\n"


def test_a_block_pasted_while_a_task_ran_is_one_task_its_indentation_kept(pty, monkeypatch):
    reader = reader_during_a_task(pty, monkeypatch)
    pty.type(PASTE)  # one paste: the terminal hands it over at once
    wait_until(lambda: sum(waiting(reader) or ()) == len(PASTE))
    assert reader.read() == PASTE.rstrip("\n")  # one task, as pasted: the first line's indentation too


def test_a_paste_larger_than_the_terminal_holds_is_one_task_every_line_kept(pty, monkeypatch):
    """The terminal holds about 4 KB: past that the paste stalls until someone reads, and what came after the stall
    used to be lines typed later, a task each, their indentation stripped."""
    reader = reader_during_a_task(pty, monkeypatch)
    block = "".join(f"    line {i}: some text here\n" for i in range(600))  # 17,290 bytes
    threading.Thread(target=lambda: os.write(pty.master, block.encode()), daemon=True).start()  # blocks when full
    # (and no echo to read meanwhile: nothing typed while a task runs is echoed)
    wait_until(lambda: sum(waiting(reader) or ()) == len(block))
    assert reader.read() == block.rstrip("\n") and reader.typed_ahead.take() is None


def test_lines_typed_one_by_one_while_a_task_ran_are_a_task_each(pty, monkeypatch):
    reader = reader_during_a_task(pty, monkeypatch, together=0)  # any two looks apart are typed apart
    pty.type("run the tests\n")
    wait_until(lambda: waiting(reader) == [14])
    pty.type("  then commit\n")
    wait_until(lambda: waiting(reader) == [14, 14])
    assert [reader.read(), reader.read()] == ["run the tests", "then commit"]


def test_a_pasted_block_whose_last_line_was_finished_later_is_one_task(pty, monkeypatch):
    reader = reader_during_a_task(pty, monkeypatch, together=0)
    pty.type("Traceback (most recent call last):\n  File \"a.py\", line 1\nZeroDivisionError")  # no line break
    wait_until(lambda: sum(waiting(reader) or ()) == 74)  # the unfinished last line is counted with the paste
    pty.type("\n")  # Enter, a moment later
    wait_until(lambda: len(waiting(reader) or ()) == 2)
    pty.type("next task\n")
    wait_until(lambda: len(waiting(reader) or ()) == 3)
    assert [reader.read(), reader.read()] == [
        'Traceback (most recent call last):\n  File "a.py", line 1\nZeroDivisionError', "next task"]


def test_a_paste_among_typed_lines_keeps_its_place(pty, monkeypatch):
    reader = reader_during_a_task(pty, monkeypatch, together=0)
    for keys, n in (("before\n", 1), (PASTE, 2), ("after\n", 3)):
        pty.type(keys)
        wait_until(lambda n=n: len(waiting(reader) or ()) == n)
    assert [reader.read(), reader.read(), reader.read()] == ["before", PASTE.rstrip("\n"), "after"]


def test_a_ctrl_d_typed_while_a_task_ran_leaves_after_what_came_before_it(pty, monkeypatch):
    reader = reader_during_a_task(pty, monkeypatch, together=0)
    pty.type("last task\n")
    wait_until(lambda: len(waiting(reader) or ()) == 1)
    pty.type("\x04")  # if it has not reached the terminal yet when the prompt comes, the prompt reads it
    assert [reader.read(), reader.read()] == ["last task", None]


def test_nothing_typed_while_a_task_runs_is_echoed_into_its_output_and_the_prompt_echoes_again(pty, monkeypatch):
    import termios
    echoing = termios.tcgetattr(pty.slave)[3] & termios.ECHO
    assert echoing
    reader = reader_during_a_task(pty, monkeypatch)
    assert not termios.tcgetattr(pty.slave)[3] & termios.ECHO  # the reply is drawn alone
    pty.type("next\n")
    wait_until(lambda: len(waiting(reader) or ()) == 1)
    assert reader.read() == "next"  # shown at the prompt, as the task it is (task_reader.py)
    assert not termios.tcgetattr(pty.slave)[3] & termios.ECHO  # which now runs
    reader.close()
    assert termios.tcgetattr(pty.slave)[3] & termios.ECHO == echoing  # given back as it was found


@pytest.mark.parametrize("text, task", [
    ("  fix it  ", "fix it"), ("\n\n    x = 1\n    y = 2\n\n", "    x = 1\n    y = 2"), ("  \n \n", ""),
    ("a\n\n  b", "a\n\n  b"),
])
def test_a_line_is_sent_without_the_blanks_around_it_and_a_block_as_it_came(text, task):
    assert trimmed(text) == task


def test_a_pasted_block_is_one_history_entry():
    reader = TaskReader(stdin=io.StringIO(""), history=Path(os.devnull))
    reader.readline = FakeReadline(["older", "Traceback (most recent call last):", "  File \"a.py\", line 1",
                                    "ZeroDivisionError"])
    reader.remember(["Traceback (most recent call last):", "  File \"a.py\", line 1", "", "ZeroDivisionError"])
    block = "Traceback (most recent call last):\n  File \"a.py\", line 1\n\nZeroDivisionError"
    assert reader.readline.items == ["older", block]


def test_a_pasted_block_comes_back_whole_in_the_next_run(tmp_path):
    readline = pytest.importorskip("readline")
    history = tmp_path / "history"
    readline.clear_history()
    reader = TaskReader(stdin=io.StringIO(""), history=history)
    reader.readline = readline
    readline.add_history("older")  # as input() adds a typed line
    reader.remember(["older"])
    readline.add_history("line one")
    readline.add_history("line two")
    reader.remember(["line one", "line two"])
    readline.clear_history()
    reader.load_history()
    assert [readline.get_history_item(i) for i in (1, 2)] == ["older", "line one\nline two"]
    assert oct(history.stat().st_mode & 0o777) == "0o600"
    assert history.read_text() == '"older"\n"line one\\nline two"\n'
    readline.clear_history()


class FakeReadline:
    """readline's history calls, for a REPL of its own (the real module has one history per process)."""

    def __init__(self, items: list[str] = ()):
        self.items = list(items)

    def get_current_history_length(self):
        return len(self.items)

    def remove_history_item(self, index):
        del self.items[index]

    def add_history(self, line):
        self.items.append(line)

    def get_history_item(self, index):
        return self.items[index - 1]

    def set_history_length(self, length):
        pass


def repl_reading(history: Path) -> TaskReader:
    reader = TaskReader(stdin=io.StringIO(""), history=history)
    reader.readline = FakeReadline()
    reader.load_history()
    return reader


def test_two_repls_at_once_both_keep_their_tasks(tmp_path):
    history = tmp_path / "history"
    append_history(history, "from yesterday")
    first, second = repl_reading(history), repl_reading(history)
    for reader, task in ((first, "first: fix the tests"), (second, "second: write docs"), (first, "first: commit")):
        reader.readline.add_history(task)
        reader.remember([task])
    assert read_history(history) == ["from yesterday", "first: fix the tests", "second: write docs", "first: commit"]
    assert repl_reading(history).readline.items == read_history(history)  # the next REPL starts with all of them


def test_appends_from_many_writers_at_once_are_all_kept(tmp_path):
    history = tmp_path / "history"
    writers = [threading.Thread(target=lambda n=n: [append_history(history, f"{n}-{i}") for i in range(100)])
               for n in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    entries = read_history(history)
    assert sorted(entries) == sorted(f"{n}-{i}" for n in range(4) for i in range(100))
    assert [entry for entry in entries if entry.startswith("2-")] == [f"2-{i}" for i in range(100)]  # in order


def test_the_history_file_is_cut_back_to_the_latest_tasks(tmp_path, monkeypatch):
    monkeypatch.setattr(task_reader, "HISTORY_LENGTH", 5)
    history = tmp_path / "history"
    for n in range(10):
        append_history(history, f"task {n}")
    assert len(read_history(history)) == 10  # twice the length is allowed to build up
    append_history(history, "task 10")
    assert read_history(history) == [f"task {n}" for n in range(6, 11)]


def test_an_older_history_file_and_a_torn_line_are_read(tmp_path):
    history = tmp_path / "history"
    history.write_bytes(b'plain old line\n"json \\u00e9"\n\n42\n"torn')
    assert read_history(history) == ["plain old line", "json \u00e9", '"torn']
    assert read_history(tmp_path / "missing") == []


def test_a_history_that_cannot_be_written_is_no_failure(tmp_path):
    (tmp_path / "file").write_text("x")
    append_history(tmp_path / "file" / "history", "task")  # its folder is a file
