"""edit_file against a varied set of edits as real models send them: each is applied exactly as meant or
refused with a helpful error, and never a wrong change. Real files, byte-exact, through the tool.

Every matching rule and every byte that must be kept (line endings, BOM, final newline) has rows here; the
tool's other duties (excerpt, permissions, creating, the journal) are tested in test_tools.py."""

import pytest

from edits import EditRefused, decode_for_edit, keep_final_newline, replace_once
from tools import Workspace, run_tool

PY_CLASS = b"class Greeter:\n    def greet(self, name):\n        return 'Helo, ' + name\n"
GO_TABS = b"package main\n\nfunc main() {\n\tif ready {\n\t\tstart()\n\t}\n}\n"

APPLIED = [  # (id, file bytes, old_str, new_str, bytes after, the rule the result must name or "" for any)
    ("exact", b"a = 1\nb = 2\n", "b = 2", "b = 3", b"a = 1\nb = 3\n", ""),
    ("crlf file, lf strings", b"a = 1\r\nb = 2\r\n", "a = 1\nb = 2", "a = 1\nb = 2\nc = 3", b"a = 1\r\nb = 2\r\nc = 3\r\n", ""),
    ("crlf file, crlf strings", b"x\r\ny\r\n", "x\r\ny", "x\r\nz", b"x\r\nz\r\n", ""),
    ("lf file, crlf strings", b"x\ny\n", "x\r\ny", "x\r\nz", b"x\nz\n", ""),
    ("bom and crlf", b"\xef\xbb\xbfname,age\r\nann,3\r\n", "ann,3", "ann,4", b"\xef\xbb\xbfname,age\r\nann,4\r\n", ""),
    ("edit at the very start of a bom file", b"\xef\xbb\xbfhello\n", "hello", "bye", b"\xef\xbb\xbfbye\n", ""),
    ("no final newline kept", b"one\ntwo", "two", "2\n", b"one\n2", ""),
    ("final newline kept", b"one\ntwo\n", "two\n", "2", b"one\n2\n", ""),
    ("model dropped trailing spaces", b"x = 1   \ny = 2\n", "x = 1\ny = 2", "x = 9\ny = 2", b"x = 9\ny = 2\n", ""),
    ("model added trailing spaces", b"x = 1\ny = 2\n", "x = 1  \ny = 2", "x = 9\ny = 2", b"x = 9\ny = 2\n", ""),
    ("model dropped the class indentation", PY_CLASS, "def greet(self, name):\n    return 'Helo, ' + name",
     "def greet(self, name):\n    return 'Hello, ' + name",
     b"class Greeter:\n    def greet(self, name):\n        return 'Hello, ' + name\n", ""),
    ("tabs file, 4-space model", GO_TABS, "    if ready {\n        start()\n    }",
     "    if ready {\n        start()\n        log()\n    }",
     b"package main\n\nfunc main() {\n\tif ready {\n\t\tstart()\n\t\tlog()\n\t}\n}\n", ""),
    ("tabs file, 8-space model", GO_TABS, "        start()", "        begin()",
     b"package main\n\nfunc main() {\n\tif ready {\n\t\tbegin()\n\t}\n}\n", ""),
    ("delete lines", b"keep\ndrop me\nkeep too\n", "drop me\n", "", b"keep\nkeep too\n", ""),
    ("mixed endings: untouched lines keep theirs", b"x\r\ny\nz\r\n", "y", "Y", b"x\r\nY\nz\r\n", ""),
    ("mixed endings: a line added at the end", b"x\r\ny\n", "y\n", "y\nw\n", b"x\r\ny\nw\n", ""),
    ("unicode", "naïve = '☕'\n".encode(), "'☕'", "'🍵'", "naïve = '🍵'\n".encode(), ""),
    ("python edit that still compiles", b"def f():\n    return 1\n", "return 1", "return (1 +\n            2)",
     b"def f():\n    return (1 +\n            2)\n", ""),
    ("crlf file, lf old_str, new lines get crlf", b"a = 1\r\nb = 2\r\nc = 3\r\n", "b = 2\nc = 3", "b = 20\nbb = 21\nc = 3",
     b"a = 1\r\nb = 20\r\nbb = 21\r\nc = 3\r\n", ""),
    ("crlf strings on an lf file, two lines", b"one\ntwo\n", "one\r\ntwo", "one\r\n2", b"one\n2\n", ""),
    ("bom kept", b"\xef\xbb\xbfhello\nworld\n", "world", "there", b"\xef\xbb\xbfhello\nthere\n", ""),
    ("trailing whitespace drift over two lines", b"x = 1   \ny = 2\t\nz = 3\n", "x = 1\ny = 2\n", "x = 10\ny = 20\n",
     b"x = 10\ny = 20\nz = 3\n", "(ignoring trailing whitespace)"),
    ("uniform indentation offset re-indents new_str",
     b"class A:\n    def f(self):\n        if x:\n            return 1\n        return 2\n",
     "if x:\n    return 1\nreturn 2", "if x:\n    return 10\nreturn 20",
     b"class A:\n    def f(self):\n        if x:\n            return 10\n        return 20\n", "(with the indentation shifted)"),
    ("old_str indented deeper than the file", b"def f():\n    return 1\n", "        def f():\n            return 1",
     "        def f():\n            return 2", b"def f():\n    return 2\n", "(with the indentation shifted)"),
    ("tab file, space model, lines added", b"func main() {\n\tif ok {\n\t\tfmt.Println(1)\n\t}\n}\n",
     "    if ok {\n        fmt.Println(1)\n    }", "    if ok {\n        fmt.Println(2)\n        fmt.Println(3)\n    }",
     b"func main() {\n\tif ok {\n\t\tfmt.Println(2)\n\t\tfmt.Println(3)\n\t}\n}\n", "tabs and spaces"),
    ("space file, tab model keeps spaces", b"def f():\n    x = 1\n    return x\n", "def f():\n\tx = 1", "def f():\n\tx = 2",
     b"def f():\n    x = 2\n    return x\n", "tabs and spaces"),
    ("mixed endings: new lines take the ending of the line they replace", b"a\r\nb\nc\r\nd\n", "b\nc", "b2\nb3\nc",
     b"a\r\nb2\nb3\nc\r\nd\n", ""),
    ("old mac endings kept", b"one\rtwo\r", "two", "2\n3", b"one\r2\r3\r", ""),
]


@pytest.mark.parametrize("before, old, new, after, rule", [c[1:] for c in APPLIED], ids=[c[0] for c in APPLIED])
def test_applied_exactly_as_meant(tmp_path, before, old, new, after, rule):
    name = "f.py" if b"def " in before or b"class " in before else "f.txt"
    (tmp_path / name).write_bytes(before)
    result = run_tool(Workspace(tmp_path), "edit_file", {"path": name, "old_str": old, "new_str": new})
    assert result.ok and rule in result.output, result.output
    assert (tmp_path / name).read_bytes() == after


REFUSED = [  # (id, file bytes, path, old_str, new_str, fragment of the error)
    ("ambiguous", b"x = 1\nx = 1\n", "f.txt", "x = 1", "x = 2", "matches 2 places in f.txt (lines 1, 2)"),
    ("already applied", b"x = 2\n", "f.txt", "x = 1", "x = 2", "the edit may already be applied"),
    ("typo in old_str", b"total = price * qty\n", "f.txt", "total = prize * qty", "total = 0", "1\ttotal = price * qty"),
    ("line numbers copied", b"a\nb\n", "f.txt", "     1\ta\n     2\tb", "c", "line numbers from read_file"),
    ("escapes the workspace", b"", "../f.txt", "a", "b", "outside the workspace"),
    ("not utf-8", "é\n".encode("latin-1"), "f.txt", "x", "y", "not valid UTF-8"),
    ("binary", b"PK\x03\x04\0\0", "f.txt", "PK", "ZIP", "binary file"),
    ("create over an existing file", b"keep\n", "f.txt", "", "new", "already exists"),
    ("breaks python", b"def f():\n    return 1\n", "f.py", "return 1", "return (1", "would no longer compile: line 2"),
    ("identical", b"a\n", "f.txt", "a", "a", "identical"),
]


@pytest.mark.parametrize("before, path, old, new, fragment", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_refused_with_a_helpful_error_and_nothing_changed(tmp_path, before, path, old, new, fragment):
    (tmp_path / "project").mkdir()
    target = tmp_path / "project" / path
    target.write_bytes(before)
    result = run_tool(Workspace(tmp_path / "project"), "edit_file", {"path": path, "old_str": old, "new_str": new})
    assert not result.ok and fragment in result.output and result.output.endswith("No changes were made.")
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(["project", target.name])


def test_every_refusal_ends_with_no_changes_were_made(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / ".env").write_text("KEY=1\n")
    ws = Workspace(tmp_path)
    for args in [{"path": "dir", "old_str": "a", "new_str": "b"}, {"path": ".env", "old_str": "KEY", "new_str": "K"},
                 {"path": "missing.txt", "old_str": "a", "new_str": "b"}, {"path": "", "old_str": "", "new_str": "x"}]:
        output = run_tool(ws, "edit_file", args).output
        assert output.endswith("No changes were made."), output


def test_a_write_that_fails_says_no_changes_were_made(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_bytes(b"old\n")
    monkeypatch.setattr("edits.os.replace", lambda *_: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    output = run_tool(Workspace(tmp_path), "edit_file", {"path": "a.txt", "old_str": "old", "new_str": "new"}).output
    assert output == "could not write a.txt: No space left on device. No changes were made."


# --- the text functions on their own ---


def test_replace_once_reports_the_rule_and_the_changed_lines():
    assert replace_once("a\nb\nc\n", "b", "B1\nB2", "f") == ("a\nB1\nB2\nc\n", "exact match", 2, 3)
    assert replace_once("a\n  b  \nc\n", "  b\n", "  B\n", "f") == ("a\n  B\nc\n", "ignoring trailing whitespace", 2, 2)


def test_replace_once_refuses_when_only_whitespace_inside_lines_differs():
    with pytest.raises(EditRefused, match="old_str was not found"):
        replace_once("x = a + b\n", "x = a+b", "x = 0", "f")


@pytest.mark.parametrize("before, after, kept", [("a\n", "b", "b\n"), ("a", "b\n", "b"), ("a\n", "", ""), ("a", "b", "b")])
def test_keep_final_newline(before, after, kept):
    assert keep_final_newline(before, after) == kept


def test_decode_for_edit_round_trips_bytes():
    for raw in [b"a\r\nb\r\n", b"\xef\xbb\xbfa\nb", b"", "ü\n".encode(), b"a\r\nb\nc\rd", b"\r\n\n\r"]:
        document = decode_for_edit(raw, "f")
        assert document.encode(document.text) == raw
