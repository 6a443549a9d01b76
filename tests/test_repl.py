"""The REPL's commands that show the user what happened (#26): /show, the last tool result whole (a command's
output too, where the model was given only its head and tail), and /diff, this run's changes as one unified
diff, from before the agent's first write to each file to what it holds now. Both are escaped like the activity
log, and a text taller than the terminal goes through the user's pager."""

import os
import sys

import pytest

from agent import build_session
from harness.cli import repl
from harness.cli.config import Config
from harness.cli.repl import run_slash_command
from harness.common.programs import distrust
from harness.common.seam_types import ToolCall
from harness.files.workspace import Workspace


@pytest.fixture
def session(tmp_path):
    """A session that asks nothing, in a workspace of its own, whose tools are called here as the loop calls them."""
    (tmp_path / "ws").mkdir()
    return build_session(Config(model="m"), None, Workspace(tmp_path / "ws"))


def call(session, name, **args):
    return session.tools.run(ToolCall(name, args))


# --- /diff ---


def test_diff_shows_each_file_the_agent_wrote_from_before_its_first_write_to_now(session):
    root = session.tools.workspace.root
    (root / "app.py").write_bytes(b"def main():\n    print('helo')\n\n\nmain()\n")
    call(session, "edit_file", path="app.py", old_str="helo", new_str="hello")
    call(session, "edit_file", path="app.py", old_str="main()\n", new_str="if __name__ == '__main__':\n    main()\n")
    call(session, "edit_file", path="notes/todo.md", old_str="", new_str="- ship it\n")
    call(session, "edit_file", path="gone.txt", old_str="", new_str="x")
    assert run_slash_command(session, "/undo").startswith("Undone: removed gone.txt")  # /undo's journal: gone
    assert run_slash_command(session, "/diff") == (
        "2 files changed by the agent in this run (+4 -2 lines), each from before the agent's first write to it to "
        "what it holds now:\n"
        "--- a/app.py\n+++ b/app.py\n@@ -1,5 +1,6 @@\n def main():\n-    print('helo')\n+    print('hello')\n \n \n"
        "-main()\n+if __name__ == '__main__':\n+    main()\n"
        "--- /dev/null\n+++ b/notes/todo.md\n@@ -0,0 +1 @@\n+- ship it")


def test_diff_shows_what_the_user_did_since_and_a_file_removed(session):
    root = session.tools.workspace.root
    call(session, "edit_file", path="a.txt", old_str="", new_str="one\n")
    (root / "a.txt").write_text("one\ntwo\n")  # the user's own edit, after the agent's
    call(session, "edit_file", path="b.txt", old_str="", new_str="bee\n")
    (root / "b.txt").unlink()
    assert run_slash_command(session, "/diff").split("\n", 1)[1] == (
        "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,2 @@\n+one\n+two")  # b.txt: created, then removed: no change


def test_diff_before_any_write_says_what_it_would_show(session):
    assert run_slash_command(session, "/diff") == ("No changes: no write of the agent's is left in this run (none "
                                                   "was made, or /undo took it back; /diff shows the writes /undo "
                                                   "knows: this run's).")


# --- /show ---


def test_show_gives_a_cut_commands_output_whole(session):
    """From issue 26: `seq 1 5000` reached the model as its head and tail; the user can see all of it."""
    command = f"{sys.executable} -c \"print(*range(1, 5001), sep=chr(10))\""
    result = call(session, "run_command", command=command)
    assert "bytes dropped: about 780 of the 5,000 lines" in result.output
    shown = run_slash_command(session, "/show")
    assert shown == ("The last tool result, whole: 5,000 lines, 23,892 bytes (cut for the model, which was given its "
                     "first and last 10,000 bytes):\n" + "\n".join(map(str, range(1, 5001))))


def test_show_gives_the_last_result_as_the_model_got_it_when_it_was_not_cut(session):
    assert run_slash_command(session, "/show") == "No tool result yet in this run."
    (session.tools.workspace.root / "a.txt").write_text("one\ntwo\n")
    call(session, "read_file", path="a.txt")
    assert run_slash_command(session, "/show") == "The last tool result, whole: 2 lines, 7 bytes:\none\ntwo"


def test_a_long_text_goes_through_the_pager_at_a_terminal(session, tmp_path, monkeypatch):
    """Taller than the screen at a terminal: the header first, then the text in $PAGER (here a script that keeps
    what it is given), escaped as the activity log escapes it."""
    kept = tmp_path / "paged.txt"
    pager = tmp_path / "pager.py"
    pager.write_text(f"import sys\nopen({str(kept)!r}, 'w').write(sys.stdin.read())\n")
    monkeypatch.setenv("PAGER", f"{sys.executable} {pager}")
    monkeypatch.setenv("LINES", "10")
    monkeypatch.setattr(repl, "at_terminal", lambda: True)
    logged = []
    monkeypatch.setattr(repl, "log", logged.append)
    (session.tools.workspace.root / "a.txt").write_text("".join(f"line {n}\x1b[2J\n" for n in range(20)))
    call(session, "read_file", path="a.txt")
    assert run_slash_command(session, "/show") == ""
    assert logged == ["The last tool result, whole: 20 lines, 229 bytes (in the pager: q leaves it):"]
    assert kept.read_text() == "".join(f"line {n}\\x1b[2J\n" for n in range(20))


def test_in_a_resumed_session_undo_and_diff_say_why_they_find_nothing(session):
    session.config.resume = ""  # --resume
    assert run_slash_command(session, "/undo") == (
        "Nothing to undo. (This run resumed the session: the writes of the runs before are not in /undo's journal; "
        "git diff shows them.)")
    assert run_slash_command(session, "/diff").endswith("this run's). (This run resumed the session: the writes of "
                                                        "the runs before are not in /undo's journal; git diff shows "
                                                        "them.)")


def test_a_pager_that_cannot_run_leaves_the_text_in_the_log(session, monkeypatch):
    monkeypatch.setenv("PAGER", "no-such-pager-here")
    monkeypatch.setenv("LINES", "5")
    monkeypatch.setattr(repl, "at_terminal", lambda: True)
    monkeypatch.setattr(repl, "log", lambda line: None)
    (session.tools.workspace.root / "a.txt").write_text("".join(f"{n}\n" for n in range(10)))
    call(session, "read_file", path="a.txt")
    assert run_slash_command(session, "/show") == ("(the pager 'no-such-pager-here' was not run: no such program on "
                                                   "PATH.)\nThe last tool result, whole: 10 lines, 19 bytes:\n"
                                                   + "\n".join(map(str, range(10))))


# A pager a command could have written, which would run as the user, outside the walls: each leaves a marker if run.
PLANTED = "#!/bin/sh\necho ran >> {marker}\ncat > /dev/null\n"


@pytest.mark.skipif(os.name != "posix", reason="the planted pager is a POSIX script")
@pytest.mark.parametrize("where", ["named", "on PATH"])
def test_a_pager_inside_the_workspace_is_not_run_and_the_text_is_shown(session, tmp_path, monkeypatch, where):
    """PAGER naming a program in the workspace, or `less` found only there (.venv/bin first on PATH): one line
    says why it was not run, then the header and the text, as without a terminal."""
    root, marker = session.tools.workspace.root, tmp_path / "ran"
    less = root / ".venv/bin/less"
    less.parent.mkdir(parents=True)
    less.write_text(PLANTED.format(marker=marker))
    less.chmod(0o755)
    distrust([root])  # as main() does
    if where == "named":
        monkeypatch.setenv("PAGER", f"{less} -R")
    else:
        monkeypatch.setenv("PAGER", "less")
        monkeypatch.setenv("PATH", str(less.parent))
    monkeypatch.setenv("LINES", "5")
    monkeypatch.setattr(repl, "at_terminal", lambda: True)
    logged = []
    monkeypatch.setattr(repl, "log", logged.append)
    (root / "a.txt").write_text("".join(f"{n}\n" for n in range(10)))
    call(session, "read_file", path="a.txt")
    shown = run_slash_command(session, "/show")
    pager = f"{less} -R" if where == "named" else "less"
    assert shown == (f"(the pager {pager!r} was not run: {less} lies in a folder commands may write, and plainagent "
                     "runs no program from there.)\nThe last tool result, whole: 10 lines, 19 bytes:\n"
                     + "\n".join(map(str, range(10))))
    assert logged == [] and not marker.exists()
