"""Hard links, the documented limit (docs/trust.md, issue 27 item 8): a file in the workspace hard-linked from
outside is that outside file. Read, it shows the outside file's text; edited, the outside file changes too, and
the question and the result say the file has other names, and it is asked in every mode (acts_later.py); /undo puts both
names back."""

import os

from harness.files.workspace import Workspace
from tools import run_tool


def test_a_file_hard_linked_from_outside_is_the_outside_file(tmp_path):
    outside, root = tmp_path / "home" / ".bashrc", tmp_path / "project"
    outside.parent.mkdir()
    root.mkdir()
    outside.write_text("alias ll='ls -l'\n")
    os.link(outside, root / "bashrc")
    asked = []
    ws = Workspace(root, confirm=lambda kind, title, shown, why: asked.append((title, why)))
    assert run_tool(ws, "read_file", {"path": "bashrc"}).output == "alias ll='ls -l'"
    result = run_tool(ws, "edit_file", {"path": "bashrc", "old_str": "ls -l", "new_str": "ls -la"})
    assert result.output == ("Edited bashrc (a file with 2 names, hard links: the change shows under every name) at "
                             "line 1.")
    assert asked == [("edit bashrc (a file with 2 names, hard links: the change shows under every name)",
                      "it has 2 names (hard links), and an edit changes the file under all of them: one may be a file "
                      "that acts later (a hook, AGENTS.md), which no path can show")]  # asked in every mode
    assert outside.read_text() == "alias ll='ls -la'\n"
    assert ws.undo() == "Undone: bashrc is back as it was before the agent's last edit."
    assert outside.read_text() == "alias ll='ls -l'\n" and outside.stat().st_nlink == 2
