"""The REPL's prompt: tasks typed ahead, pasted blocks as one history entry, and the history file that two
REPLs running at once both keep."""

import io
import os
import threading
from pathlib import Path

import pytest
from test_terminal import Pty

from harness.cli import task_reader
from harness.cli.task_reader import TaskReader, append_history, read_history


@pytest.fixture
def pty():
    if not hasattr(os, "openpty"):
        pytest.skip("pseudo-terminals")
    terminal = Pty()
    yield terminal
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


def test_a_pasted_block_is_one_history_entry():
    class History:
        def __init__(self):
            self.items = ["older", "Traceback (most recent call last):", "  File \"a.py\", line 1", "ZeroDivisionError"]

        def get_current_history_length(self):
            return len(self.items)

        def remove_history_item(self, index):
            del self.items[index]

        def add_history(self, line):
            self.items.append(line)

        def get_history_item(self, index):
            return self.items[index - 1]

    reader = TaskReader(stdin=io.StringIO(""), history=Path(os.devnull))
    reader.readline = History()
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

    def __init__(self):
        self.items: list[str] = []

    def get_current_history_length(self):
        return len(self.items)

    def remove_history_item(self, index):
        del self.items[index]

    def add_history(self, line):
        self.items.append(line)

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
