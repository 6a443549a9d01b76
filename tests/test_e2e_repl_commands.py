"""What the REPL user sees and asks for (#26), end to end at a real terminal (the Screen of test_e2e_terminal.py):
a command's output cut for the model is said on its activity line and shown whole by /show, through the user's
pager when it is taller than the screen; /diff shows the session's writes; leaving says how to resume; and
"a WORDS" approves the commands that start with those words, and no command that chains another."""

import json
import sys

import pytest
from fake_endpoint import FakeEndpoint
from test_e2e_terminal import Screen

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminals as Linux has them")


def run(command: str) -> str:
    return f"tool: run_command({json.dumps({'command': command})})"


def test_show_diff_and_the_resume_line(install, project, tmp_path, monkeypatch):
    paged = tmp_path / "paged.txt"
    pager = tmp_path / "pager.py"
    pager.write_text(f"import sys\nopen({str(paged)!r}, 'w').write(sys.stdin.read())\n")
    monkeypatch.setenv("PAGER", f"{sys.executable} {pager}")  # keeps what it is given, as less would show it
    monkeypatch.setenv("LINES", "24")
    numbers = f"{sys.executable} -c \"print(*range(1, 5001), sep=chr(10))\""
    edit = 'tool: edit_file({"path": "greet.py", "old_str": "Helo", "new_str": "Hello"})'
    with FakeEndpoint([run(numbers), edit, "Counted, and fixed the greeting."]) as endpoint:
        screen = Screen(install, project, endpoint, "--yes")
        screen.prompt()
        screen.type("count to 5000, then fix the greeting\n")
        shown = screen.expect("Counted, and fixed the greeting.")
        assert ("  ok: 1 (+4,999 lines: cut for the model, which saw the first 2,221 and the last 1,999 lines; /show shows "
                "them all)\n") in shown
        screen.prompt()
        screen.type("/show\n")
        screen.expect("The last tool result, whole: 1 line, 26 bytes:\nEdited greet.py at line 2.\n")  # the edit's
        screen.prompt()
        screen.type("/diff\n")
        diff = screen.expect("+    return \"Hello, \" + name\n")
        assert diff.endswith("1 file changed by the agent in this run (+1 -1 lines), each from before the agent's "
                             "first write to it to what it holds now:\n--- a/greet.py\n+++ b/greet.py\n@@ -1,2 +1,2 @@"
                             "\n def greet(name):\n-    return \"Helo, \" + name\n+    return \"Hello, \" + name\n")
        screen.prompt()
        screen.type("\x04")
        assert screen.wait() == 0
    (transcript,) = (tmp_path / "state" / "plainagent" / "sessions").glob("*.jsonl")
    assert screen.text.rstrip("\n").endswith(f"resume with: python {install / 'agent.py'} --resume {transcript}")
    assert not paged.exists()  # nothing was taller than the screen


def test_show_pages_a_cut_output_whole(install, project, tmp_path, monkeypatch):
    paged = tmp_path / "paged.txt"
    pager = tmp_path / "pager.py"
    pager.write_text(f"import sys\nopen({str(paged)!r}, 'w').write(sys.stdin.read())\n")
    monkeypatch.setenv("PAGER", f"{sys.executable} {pager}")
    monkeypatch.setenv("LINES", "24")
    numbers = f"{sys.executable} -c \"print(*range(1, 5001), sep=chr(10)); print(chr(27) + '[2J')\""
    with FakeEndpoint([run(numbers), "Counted."]) as endpoint:
        screen = Screen(install, project, endpoint, "--yes")
        screen.prompt()
        screen.type("count to 5000\n")
        screen.expect("Counted.")
        screen.prompt()
        screen.type("/show\n")
        assert screen.expect("(in the pager: q leaves it):\n").endswith(
            "The last tool result, whole: 5,001 lines, 23,897 bytes (cut for the model, which was given its first "
            "and last 10,000 bytes) (in the pager: q leaves it):\n")
        screen.prompt()
        screen.type("exit\n")
        assert screen.wait() == 0
    assert paged.read_text() == "".join(f"{n}\n" for n in range(1, 5001)) + "\\x1b[2J\n"  # escaped, as the log is
    assert "bytes dropped" in json.dumps(endpoint.received[1].body["messages"][-1])  # the model got head and tail


def test_a_prefix_approves_the_commands_that_start_with_it_and_none_that_chain_another(install, project):
    script = [run("echo one"), run("echo two"), run("echo three; echo four"), "Echoed."]
    with FakeEndpoint(script) as endpoint:
        screen = Screen(install, project, endpoint)
        screen.prompt()
        screen.type("echo some numbers\n")
        screen.expect("Allow this command (echo one)? ")
        screen.type("a echo\n")
        screen.expect("(approving, for the rest of this session, each command whose first words are `echo` and that "
                      "holds none of ; & | < > ( ) $ ` nor a line break)\n")
        screen.expect("Remember `echo` for every session (PLAINAGENT_ALLOW in ")
        screen.type("n\n")  # for this session only (test_allow.py remembers)
        asked = screen.expect("Allow this command (echo three; echo four)? ")
        assert asked.count("Allow this command") == 1 and "→ run_command(command=\"echo two\")\n  ok: two\n" in asked
        screen.type("n\n")
        screen.expect("Echoed.")
        screen.prompt()
        screen.type("exit\n")
        assert screen.wait() == 0
    outputs = [message["content"] for message in endpoint.received[-1].body["messages"][3::2]]
    assert "one" in outputs[0] and "two" in outputs[1] and "The user said no." in outputs[2]
