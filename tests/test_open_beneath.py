"""What a tool opens is what it checked: walking from the root by descriptors, no link followed, and writes
that never overwrite what they did not read. On real files in tmp_path; the race with a concurrent process
swapping a folder for a link is run for real, and must never once reach outside. The same rules hold by path, as
on Windows (no descriptors there): every link on the way refused; only that race is not closed there."""

import os
import re
import subprocess
import sys

import pytest

from harness.files import open_beneath, search
from harness.files.open_beneath import Changed
from tools import Workspace, run_tool


@pytest.fixture(params=["descriptors", "paths"])
def root(request, tmp_path, monkeypatch):
    """Each test twice: by directory descriptors, and as on Windows, which has none (nor O_NOFOLLOW): by path,
    each step looked at as it is reached."""
    if request.param == "paths":
        monkeypatch.setattr(open_beneath, "DESCRIPTORS", False)
        monkeypatch.setattr(open_beneath, "NO_LINK", open_beneath.NO_LINK & ~os.O_NOFOLLOW)
    root = tmp_path / "project"
    (root / "sub").mkdir(parents=True)
    (root / "sub/a.txt").write_bytes(b"inside\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/a.txt").write_bytes(b"OUTSIDE\n")
    return root


# --- the walk from the root ---


@pytest.mark.parametrize("target", ["../outside", "sub"])  # even a link that stays inside: it was not checked
def test_a_link_on_the_way_is_refused_never_followed(root, target):
    os.symlink(target, root / "via")
    for use in [lambda: open_beneath.read(open_beneath.Root(root), root / "via/a.txt"), lambda: open_beneath.lstat(open_beneath.Root(root), root / "via/a.txt"),
                lambda: open_beneath.listing(open_beneath.Root(root), root / "via"), lambda: open_beneath.create(open_beneath.Root(root), root / "via/new.txt", b"x")]:
        with pytest.raises(Changed) as changed:
            use()
        assert changed.value.how == "link"
    assert sorted(path.name for path in (root.parent / "outside").iterdir()) == ["a.txt"]


def test_a_link_as_the_file_itself_is_not_opened(root):
    os.symlink("../../outside/a.txt", root / "sub/link.txt")
    with pytest.raises(Changed) as changed:
        open_beneath.read(open_beneath.Root(root), root / "sub/link.txt")
    assert changed.value.how == "link"
    assert open_beneath.lstat(open_beneath.Root(root), root / "sub/link.txt").st_size == len("../../outside/a.txt")  # the link itself
    assert open_beneath.listing(open_beneath.Root(root), root / "sub") == [("a.txt", False, False), ("link.txt", False, True)]


def test_what_is_missing_is_none_and_a_file_on_the_way_is_missing_too(root):
    assert open_beneath.lstat(open_beneath.Root(root), root / "sub/nope.txt") is None
    assert open_beneath.lstat(open_beneath.Root(root), root / "sub/a.txt/x") is None
    assert open_beneath.lstat(open_beneath.Root(root), root / "nope/x") is None
    assert open_beneath.read(open_beneath.Root(root), root / "sub/a.txt") == b"inside\n"


def test_a_pipe_is_refused_without_waiting_for_a_writer(root):
    os.mkfifo(root / "sub/pipe")
    with pytest.raises(Changed) as changed:
        open_beneath.read(open_beneath.Root(root), root / "sub/pipe")
    assert changed.value.how == "not a file"


# --- writes ---


def test_a_new_file_never_replaces_anything_not_even_a_dangling_link(root):
    os.symlink("../../outside/new.txt", root / "sub/new.txt")
    with pytest.raises(Changed) as changed:
        open_beneath.create(open_beneath.Root(root), root / "sub/new.txt", b"x")
    assert changed.value.how == "created" and not (root.parent / "outside/new.txt").exists()


def test_a_failed_creation_leaves_neither_the_file_nor_the_folders_it_made(root, monkeypatch):
    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(open_beneath.os, "fsync", full_disk)
    with pytest.raises(OSError):
        open_beneath.create(open_beneath.Root(root), root / "new/deeper/b.txt", b"data")
    assert not (root / "new").exists()


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temporary(root, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(open_beneath.os, "replace", full_disk)
    with pytest.raises(OSError):
        open_beneath.replace(open_beneath.Root(root), root / "sub/a.txt", b"new\n", expected=b"inside\n")
    assert (root / "sub/a.txt").read_bytes() == b"inside\n" and os.listdir(root / "sub") == ["a.txt"]


def test_a_write_over_other_bytes_than_expected_writes_nothing(root):
    with pytest.raises(Changed) as changed:
        open_beneath.replace(open_beneath.Root(root), root / "sub/a.txt", b"new\n", expected=b"what the edit was made from\n")
    assert changed.value.how == "changed" and (root / "sub/a.txt").read_bytes() == b"inside\n"


def test_a_file_with_other_names_is_written_in_place(root):
    os.link(root / "sub/a.txt", root.parent / "outside/b.txt")
    inode = (root / "sub/a.txt").stat().st_ino
    open_beneath.replace(open_beneath.Root(root), root / "sub/a.txt", b"new\n", expected=b"inside\n")
    assert (root.parent / "outside/b.txt").read_bytes() == b"new\n" and (root / "sub/a.txt").stat().st_ino == inode


def test_an_in_place_write_that_fails_halfway_puts_the_old_bytes_back(root, monkeypatch):
    os.link(root / "sub/a.txt", root / "sub/b.txt")

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(open_beneath.os, "fsync", full_disk)
    with pytest.raises(OSError):
        open_beneath.replace(open_beneath.Root(root), root / "sub/a.txt", b"a much longer text than before\n", expected=b"inside\n")
    assert (root / "sub/b.txt").read_bytes() == b"inside\n"


def test_removing_folders_stops_at_one_that_holds_something_and_follows_no_link(root, tmp_path):
    (tmp_path / "outside/empty").mkdir()
    os.symlink("../outside/empty", root / "gone")
    (root / "a/b").mkdir(parents=True)
    (root / "a/mine.txt").write_bytes(b"")
    open_beneath.remove_folders(open_beneath.Root(root), [root / "gone", root / "a/b", root / "a"])
    open_beneath.remove_folders(open_beneath.Root(root), [root / "a/b", root / "a"])
    assert (tmp_path / "outside/empty").is_dir() and sorted(os.listdir(root / "a")) == ["mine.txt"]


# --- the race, for real: a process swaps sub/ for a link to outside/ as fast as it can ---

SWAPPER = """
import os, sys
root, outside = sys.argv[1], sys.argv[2]
print("ready", flush=True)
n = 0
while True:
    for name in ("sub", "work"):
        folder, aside = os.path.join(root, name), os.path.join(root, "." + name + "-aside")
        try:
            os.rename(folder, aside)  # the real folder out of the way...
            os.symlink(outside, folder)  # ...and a link to outside/ in its place
        except OSError:
            pass
        try:
            os.unlink(folder)
        except OSError:
            pass
        try:
            os.rename(aside, folder)
        except OSError:  # a tool made a new folder while it was missing: put that aside, inside the workspace
            n += 1
            try:
                os.rename(folder, os.path.join(root, ".made-" + str(n)))
            except OSError:
                pass
"""
OUTSIDE_SEEN = re.compile(r"1: OUTSIDE|\tOUTSIDE|only-outside")  # outside/'s bytes in a read or search, or its name


@pytest.fixture
def tries(request) -> int:
    """Tries of each tool: --race-tries N (tests/conftest.py), 300 in a plain run of the suite."""
    return request.config.getoption("race_tries")


@pytest.fixture
def swapper(tmp_path, monkeypatch, tries):
    """A workspace whose sub/ and work/ a concurrent process keeps swapping for links to outside/, which holds the
    same names: other bytes where a read could tell them apart, the same where an edit must match."""
    monkeypatch.setenv("PATH", "")  # no git to ask at each listing: 2,000 of them would take most of the time
    # Each miss (sub/ gone for a moment) suggests names: from the ten files at the root, not from 1,000 in work/.
    monkeypatch.setattr(search, "SUGGEST_MAX_ENTRIES", 10)
    root, outside = tmp_path / "project", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    for i in range(10):
        (root / f"notes-{i}.txt").write_bytes(b"")
    outside.mkdir()
    (root / "sub/file.txt").write_bytes(b"inside\n")
    (outside / "file.txt").write_bytes(b"OUTSIDE\n")
    (outside / "only-outside.txt").write_bytes(b"OUTSIDE\n")
    (root / "work").mkdir()
    for i in range(tries):
        for folder in (root / "work", outside):
            (folder / f"e{i}.txt").write_bytes(f"edit me {i}\n".encode())
    process = subprocess.Popen([sys.executable, "-c", SWAPPER, str(root), str(outside)], stdout=subprocess.PIPE)
    assert process.stdout.readline() == b"ready\n"
    yield Workspace(root), outside
    process.kill()
    process.wait()
    process.stdout.close()


def try_each_tool(ws: Workspace, tries: int, edits_in: str) -> dict[str, list[str]]:
    """What each tool returned, `tries` times: a read, a listing and a search of sub/, an edit of an existing file
    and a creation in `edits_in`/."""
    calls = {"read": lambda i: ("read_file", {"path": "sub/file.txt"}),
             "list": lambda i: ("list_files", {"path": "sub"}),
             "search": lambda i: ("search_files", {"pattern": "OUTSIDE|inside", "path": "sub", "glob": "file.txt"}),
             "edit": lambda i: ("edit_file", {"path": f"{edits_in}/e{i}.txt", "old_str": "edit me", "new_str": "edited"}),
             "create": lambda i: ("edit_file", {"path": f"{edits_in}/new-{i}.txt", "old_str": "", "new_str": "new\n"})}
    return {kind: [run_tool(ws, *call(i)).output for i in range(tries)] for kind, call in calls.items()}


def test_a_concurrent_swapper_never_gets_a_tool_outside(swapper, tries):
    """On the code that checked a name and then opened it (81552a0^), 1,000 tries of each got 5 to 24 reads,
    2 to 8 searches and 21 to 49 writes (creations, and edits' temporaries) outside, in three runs: the suite's
    300 would see about 16 escapes, and none at all less than once in 4,000 runs even at the lowest of those
    rates. `python -m pytest tests/test_open_beneath.py --race-tries 5000` tries harder."""
    ws, outside = swapper
    outputs = try_each_tool(ws, tries, "work")
    escapes = {kind: sum(bool(OUTSIDE_SEEN.search(output)) for output in found) for kind, found in outputs.items()}
    escapes["edit"] = sum((outside / f"e{i}.txt").read_bytes() != f"edit me {i}\n".encode() for i in range(tries))
    escapes["create"] = sum(name.startswith(("new-", ".")) for name in os.listdir(outside))  # files, temporaries
    assert escapes == {"read": 0, "list": 0, "search": 0, "edit": 0, "create": 0}
    assert sorted(os.listdir(outside)) == sorted(["file.txt", "only-outside.txt"] + [f"e{i}.txt" for i in range(tries)])


# --- the root itself swapped for a link: whoever may write in its parent can exchange the two in 100 µs ---

ROOT_SWAPPER = """
import ctypes, os, sys
root, aside = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
print("ready", flush=True)
while True:  # the workspace and a link to outside/ trade places, as fast as the kernel allows
    libc.renameat2(AT_FDCWD, root.encode(), AT_FDCWD, aside.encode(), RENAME_EXCHANGE)
"""


@pytest.mark.skipif(not open_beneath.DESCRIPTORS or not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
def test_the_root_swapped_for_a_link_never_gets_a_tool_outside(tmp_path, monkeypatch, tries):
    """On the code that opened the root by name at each use (issue 27 item 6), 300 tries got 68 reads, 44
    creations and 5 edits outside. Opened once, the root is the folder the session started in, wherever it is."""
    monkeypatch.setenv("PATH", "")  # no git to ask at each listing
    root, outside = tmp_path / "project", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    (outside / "sub").mkdir(parents=True)
    (root / "sub/file.txt").write_bytes(b"inside\n")
    (outside / "sub/file.txt").write_bytes(b"OUTSIDE\n")
    (outside / "sub/only-outside.txt").write_bytes(b"OUTSIDE\n")
    for i in range(tries):
        for folder in (root, outside):
            (folder / f"sub/e{i}.txt").write_bytes(f"edit me {i}\n".encode())
    os.symlink(outside, tmp_path / "aside")
    ws = Workspace(root)  # the session starts in the real folder; the swapping begins after
    process = subprocess.Popen([sys.executable, "-c", ROOT_SWAPPER, str(root), str(tmp_path / "aside")],
                               stdout=subprocess.PIPE)
    try:
        assert process.stdout.readline() == b"ready\n"
        outputs = try_each_tool(ws, tries, "sub")
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
    escapes = {kind: sum(bool(OUTSIDE_SEEN.search(output)) for output in found) for kind, found in outputs.items()}
    escapes["edit"] = sum((outside / f"sub/e{i}.txt").read_bytes() != f"edit me {i}\n".encode() for i in range(tries))
    escapes["create"] = sum(name.startswith(("new-", ".")) for name in os.listdir(outside / "sub"))
    assert escapes == {"read": 0, "list": 0, "search": 0, "edit": 0, "create": 0}
    real_root = root if root.is_dir() and not root.is_symlink() else tmp_path / "aside"
    assert (real_root / "sub/file.txt").read_bytes() == b"inside\n"
    assert sum(output.startswith("Edited") for output in outputs["edit"]) > 0  # the swap did not stop all work


def test_a_root_moved_away_is_said_as_such_not_as_a_path_outside(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "ws/a.txt").write_bytes(b"in\n")
    (tmp_path / "out/a.txt").write_bytes(b"OUT\n")
    ws = Workspace(tmp_path / "ws")
    os.rename(tmp_path / "ws", tmp_path / "ws-aside")
    os.symlink(tmp_path / "out", tmp_path / "ws")
    moved = (f"The workspace folder {tmp_path / 'ws'} was moved or replaced (by a link, say) since the session "
             "started, so no path through it is used. Tell the user.")
    assert run_tool(ws, "read_file", {"path": "a.txt"}).output == moved
    assert run_tool(ws, "edit_file", {"path": "b.txt", "old_str": "", "new_str": "x"}).output == moved + " No changes were made."
    assert sorted(os.listdir(tmp_path / "out")) == ["a.txt"]


def test_a_root_moved_away_is_said_before_any_search_or_listing(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "out").mkdir()
    ws = Workspace(tmp_path / "ws")
    os.rename(tmp_path / "ws", tmp_path / "ws-aside")
    os.symlink(tmp_path / "out", tmp_path / "ws")
    for call in [("search_files", {"pattern": "x"}), ("list_files", {}), ("list_files", {"path": "."})]:
        assert run_tool(ws, *call).output.startswith(f"The workspace folder {tmp_path / 'ws'} was moved or replaced")
