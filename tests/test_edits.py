"""edit_file against a varied set of edits as real models send them: each is applied exactly as meant or
refused with a helpful error, and never a wrong change. Real files, byte-exact, through the tool.

Every matching rule and every byte that must be kept (line endings, BOM, final newline) has rows here, and so
do the refusals. Below the tables: what the model reads after an edit and what the user approves (one line
model, exact about the final newline), and the Python check. The tool's other duties (permissions, the
journal, the sandbox) are tested in test_tools.py."""

import random
import re
import shutil
import subprocess
import sys
import time

import pytest

from harness.common.text_files import EditRefused
from harness.files.edits import check_python_edit, find_unbalanced_bracket, replace_once, unified_diff
from tools import Workspace, run_tool

PY_CLASS = b"class Greeter:\n    def greet(self, name):\n        return 'Helo, ' + name\n"
GO_TABS = b"package main\n\nfunc main() {\n\tif ready {\n\t\tstart()\n\t}\n}\n"

EXACT, TRAILING, SHIFTED, TABS = ("exact match", "ignoring trailing whitespace", "with the indentation shifted",
                                 "with tabs and spaces in the indentation converted")

APPLIED = [  # (id, file bytes, old_str, new_str, bytes after, the rule the result must name)
    ("exact", b"a = 1\nb = 2\n", "b = 2", "b = 3", b"a = 1\nb = 3\n", EXACT),
    ("crlf file, lf strings", b"a = 1\r\nb = 2\r\n", "a = 1\nb = 2", "a = 1\nb = 2\nc = 3", b"a = 1\r\nb = 2\r\nc = 3\r\n", EXACT),
    ("crlf file, crlf strings", b"x\r\ny\r\n", "x\r\ny", "x\r\nz", b"x\r\nz\r\n", EXACT),
    ("lf file, crlf strings", b"x\ny\n", "x\r\ny", "x\r\nz", b"x\nz\n", EXACT),
    ("bom and crlf", b"\xef\xbb\xbfname,age\r\nann,3\r\n", "ann,3", "ann,4", b"\xef\xbb\xbfname,age\r\nann,4\r\n", EXACT),
    ("edit at the very start of a bom file", b"\xef\xbb\xbfhello\n", "hello", "bye", b"\xef\xbb\xbfbye\n", EXACT),
    ("no final newline kept", b"one\ntwo", "two", "2\n", b"one\n2", EXACT),
    ("final newline kept", b"one\ntwo\n", "two\n", "2", b"one\n2\n", EXACT),
    ("model dropped trailing spaces", b"x = 1   \ny = 2\n", "x = 1\ny = 2", "x = 9\ny = 2", b"x = 9\ny = 2\n", TRAILING),
    ("model added trailing spaces", b"x = 1\ny = 2\n", "x = 1  \ny = 2", "x = 9\ny = 2", b"x = 9\ny = 2\n", TRAILING),
    ("model dropped the class indentation", PY_CLASS, "def greet(self, name):\n    return 'Helo, ' + name",
     "def greet(self, name):\n    return 'Hello, ' + name",
     b"class Greeter:\n    def greet(self, name):\n        return 'Hello, ' + name\n", SHIFTED),
    ("tabs file, 4-space model", GO_TABS, "    if ready {\n        start()\n    }",
     "    if ready {\n        start()\n        log()\n    }",
     b"package main\n\nfunc main() {\n\tif ready {\n\t\tstart()\n\t\tlog()\n\t}\n}\n", TABS),
    ("tabs file, 8-space model", GO_TABS, "        start()", "        begin()",
     b"package main\n\nfunc main() {\n\tif ready {\n\t\tbegin()\n\t}\n}\n", TABS),
    ("delete lines", b"keep\ndrop me\nkeep too\n", "drop me\n", "", b"keep\nkeep too\n", EXACT),
    ("mixed endings: untouched lines keep theirs", b"x\r\ny\nz\r\n", "y", "Y", b"x\r\nY\nz\r\n", EXACT),
    ("mixed endings: a line added at the end", b"x\r\ny\n", "y\n", "y\nw\n", b"x\r\ny\nw\n", EXACT),
    ("unicode", "naïve = '☕'\n".encode(), "'☕'", "'🍵'", "naïve = '🍵'\n".encode(), EXACT),
    ("python edit that still compiles", b"def f():\n    return 1\n", "return 1", "return (1 +\n            2)",
     b"def f():\n    return (1 +\n            2)\n", EXACT),
    ("crlf file, lf old_str, new lines get crlf", b"a = 1\r\nb = 2\r\nc = 3\r\n", "b = 2\nc = 3", "b = 20\nbb = 21\nc = 3",
     b"a = 1\r\nb = 20\r\nbb = 21\r\nc = 3\r\n", EXACT),
    ("crlf strings on an lf file, two lines", b"one\ntwo\n", "one\r\ntwo", "one\r\n2", b"one\n2\n", EXACT),
    ("bom kept", b"\xef\xbb\xbfhello\nworld\n", "world", "there", b"\xef\xbb\xbfhello\nthere\n", EXACT),
    ("trailing whitespace drift over two lines", b"x = 1   \ny = 2\t\nz = 3\n", "x = 1\ny = 2\n", "x = 10\ny = 20\n",
     b"x = 10\ny = 20\nz = 3\n", TRAILING),
    ("uniform indentation offset re-indents new_str",
     b"class A:\n    def f(self):\n        if x:\n            return 1\n        return 2\n",
     "if x:\n    return 1\nreturn 2", "if x:\n    return 10\nreturn 20",
     b"class A:\n    def f(self):\n        if x:\n            return 10\n        return 20\n", SHIFTED),
    ("old_str indented deeper than the file", b"def f():\n    return 1\n", "        def f():\n            return 1",
     "        def f():\n            return 2", b"def f():\n    return 2\n", SHIFTED),
    ("tab file, space model, lines added", b"func main() {\n\tif ok {\n\t\tfmt.Println(1)\n\t}\n}\n",
     "    if ok {\n        fmt.Println(1)\n    }", "    if ok {\n        fmt.Println(2)\n        fmt.Println(3)\n    }",
     b"func main() {\n\tif ok {\n\t\tfmt.Println(2)\n\t\tfmt.Println(3)\n\t}\n}\n", TABS),
    ("space file, tab model keeps spaces", b"def f():\n    x = 1\n    return x\n", "def f():\n\tx = 1", "def f():\n\tx = 2",
     b"def f():\n    x = 2\n    return x\n", TABS),
    ("mixed endings: new lines take the ending of the line they replace", b"a\r\nb\nc\r\nd\n", "b\nc", "b2\nb3\nc",
     b"a\r\nb2\nb3\nc\r\nd\n", EXACT),
    ("mixed endings: each replaced line keeps its own, crlf then lf", b"a\r\nb\r\nc\nd\n", "b\nc", "B\nC",
     b"a\r\nB\r\nC\nd\n", EXACT),
    ("mixed endings: each replaced line keeps its own, lf then crlf", b"a\nb\nc\r\nd\r\n", "b\nc", "B\nC",
     b"a\nB\nC\r\nd\r\n", EXACT),
    ("mixed endings: a cr inside the block stays a cr", b"a\nb\r\nc\rd\n", "b\nc", "B\nC", b"a\nB\r\nC\rd\n", EXACT),
    ("mixed endings: the ending after old_str is untouched", b"a\r\nb\nc\r\n", "a\nb", "A", b"A\nc\r\n", EXACT),
    ("mixed endings: a line added at the end of a file without a final newline", b"x\r\ny\nz", "z", "z\nw",
     b"x\r\ny\nz\nw", EXACT),
    ("old mac endings kept", b"one\rtwo\r", "two", "2\n3", b"one\r2\r3\r", EXACT),
    ("a lone cr in new_str is a line break in the file's style", b"a\nb\n", "b", "b\rc", b"a\nb\nc\n", EXACT),
    ("adding only the missing final newline", b"one\ntwo", "two", "two\n", b"one\ntwo\n", EXACT),
    ("adding only the missing final newline, crlf", b"one\r\ntwo", "two", "two\r\n", b"one\r\ntwo\r\n", EXACT),
    ("removing only the final newline", b"one\ntwo\n", "two\n", "two", b"one\ntwo", EXACT),
    ("form feed and u+2028 are not line breaks", "x = 1\n\x0cy = '\u2028'\nz = 3\n".encode(), "z = 3", "z = 4",
     "x = 1\n\x0cy = '\u2028'\nz = 4\n".encode(), EXACT),
    ("a line rule matching lines that overlap its own pattern", b"}  \n}\n", "}\n}  ", "}\n}", b"}\n}\n", TRAILING),
]


@pytest.mark.parametrize("before, old, new, after, rule", [c[1:] for c in APPLIED], ids=[c[0] for c in APPLIED])
def test_applied_exactly_as_meant(tmp_path, before, old, new, after, rule):
    name = "f.py" if b"def " in before or b"class " in before else "f.txt"
    (tmp_path / name).write_bytes(before)
    result = run_tool(Workspace(tmp_path), "edit_file", {"path": name, "old_str": old, "new_str": new})
    if rule == EXACT:  # unnamed: the file holds new_str as sent, and the result says only where
        assert re.match(rf"Edited {re.escape(name)}(: | at lines? \d)", result.output), result.output
    else:
        assert result.ok and result.output.startswith(f"Edited {name} ({rule})"), result.output
    assert (tmp_path / name).read_bytes() == after


def test_an_edit_of_a_mixed_file_changes_no_byte_outside_old_str(tmp_path):
    """Random files with mixed line endings, random stretches replaced: every byte before old_str and from the
    ending after it on is kept, and a stretch that keeps its number of lines keeps each line's ending."""
    rng = random.Random(12)
    for trial in range(300):
        endings = [rng.choice(["\n", "\r\n", "\r"]) for _ in range(rng.randint(2, 8))]
        lines = [f"line{n}" for n in range(len(endings))]
        raw = "".join(line + ending for line, ending in zip(lines, endings))
        first = rng.randrange(len(lines))
        last = rng.randrange(first, len(lines))
        old = "\n".join(lines[first:last + 1])
        n_new = rng.choice([last - first + 1, rng.randint(1, 4)])
        new = "\n".join(f"new{n}" for n in range(n_new))
        (tmp_path / "f.txt").write_bytes(raw.encode())
        result = run_tool(Workspace(tmp_path), "edit_file", {"path": "f.txt", "old_str": old, "new_str": new})
        assert result.ok, result.output
        prefix = "".join(line + ending for line, ending in zip(lines[:first], endings))
        suffix = "".join(line + ending for line, ending in zip(lines[last + 1:], endings[last + 1:]))
        middle = (f"new{n}" + endings[first + n] if n < n_new - 1 else f"new{n}" for n in range(n_new))
        if n_new == last - first + 1:  # each line keeps its own ending
            expected = prefix + "".join(middle) + endings[last] + suffix
        else:
            got = (tmp_path / "f.txt").read_bytes().decode()
            assert got.startswith(prefix) and got.endswith(endings[last] + suffix), (trial, raw, old, new, got)
            continue
        assert (tmp_path / "f.txt").read_bytes() == expected.encode(), (trial, raw, old, new)


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
    ("overlapping matches", b"}\n}\n}\n", "f.txt", "}\n}", "}", "old_str matches 2 overlapping places in f.txt (lines 1, 2)"),
    ("overlapping matches on one line", b"aaa\n", "f.txt", "aa", "b", "matches 2 overlapping places in f.txt (line 1)."),
    ("overlapping line-rule matches", b"}  \n}  \n}  \n", "f.txt", "}\n}", "}",
     "matches 2 overlapping places in f.txt when ignoring trailing whitespace (lines 1, 2)"),
    ("changes nothing once trailing whitespace is ignored", b"x = 1\n", "f.txt", "x = 1  ", "x = 1",
     "old_str matched line 1 of f.txt (ignoring trailing whitespace), and new_str is what is already there"),
    ("breaks python indentation", b"def f():\n    return 1\n", "f.py", "    return 1", "return 1",
     "would no longer compile: line 2, column 1: expected an indented block"),
    ("mixes tabs and spaces", b"if x:\n        a = 1\n", "f.py", "        a = 1", "        a = 1\n\tb = 2",
     "would no longer compile: line 3, column 1: inconsistent use of tabs and spaces"),
    ("closes a bracket that is not open", b"x = [1]\n", "f.py", "x = [1]", "x = [1]]", "line 1: unmatched ']'"),
    ("closes the wrong bracket", b"x = [1]\n", "f.py", "x = [1]", "x = [1)",
     "line 1: ')' does not close the '[' opened on line 1"),
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
    monkeypatch.setattr("harness.files.open_beneath.os.replace", lambda *_, **__: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    output = run_tool(Workspace(tmp_path), "edit_file", {"path": "a.txt", "old_str": "old", "new_str": "new"}).output
    assert output == "could not write a.txt: No space left on device. No changes were made."


# --- the text functions on their own ---


def test_replace_once_reports_the_rule_and_the_changed_lines():
    assert replace_once("a\nb\nc\n", "b", "B1\nB2", "f") == ("a\nB1\nB2\nc\n", "exact match", 2, 3)
    assert replace_once("a\n  b  \nc\n", "  b\n", "  B\n", "f") == ("a\n  B\nc\n", "ignoring trailing whitespace", 2, 2)


def test_replace_once_refuses_when_only_whitespace_inside_lines_differs():
    with pytest.raises(EditRefused, match="old_str was not found"):
        replace_once("x = a + b\n", "x = a+b", "x = 0", "f")


def test_replace_once_counts_overlapping_matches_as_separate_places():
    with pytest.raises(EditRefused, match=r"matches 2 overlapping places in f \(lines 2, 3\)"):
        replace_once("{\n}\n}\n}\n", "}\n}", "}", "f")
    with pytest.raises(EditRefused, match=r"matches 3 places in f \(lines 1, 2, 3\)"):  # touching is not overlapping
        replace_once("ab\nab\nab\n", "ab", "x", "f")


def test_replace_once_says_when_new_str_fills_no_line():
    assert replace_once("a\nb\nc\n", "b\n", "", "f") == ("a\nc\n", "exact match", 2, 1)
    assert replace_once("a\n  b  \nc\n", "b\n", "", "f") == ("a\nc\n", "with the indentation shifted", 2, 1)


@pytest.mark.parametrize("old, message", [
    ("a\n" * 4000 + "b", "old_str was not found in f.txt."),  # no window can match: one string search says so
    ("  a\n" * 4000, "old_str was not found exactly in f.txt, and once whitespace is ignored it matches too many "
                     "places to compare."),
    ("a\n" * 4000, "old_str matches at least 2,500 overlapping places in f.txt (lines 1, 2, 3,"),
], ids=["no window matches", "too many windows for the rules", "too many exact matches to count"])
def test_an_edit_of_a_big_repetitive_file_answers_within_a_second(tmp_path, old, message):
    """Every window compared line by line by every whitespace rule took minutes (80,000 lines: over 300 s)."""
    (tmp_path / "f.txt").write_bytes(b"a\n" * 80_000)
    started = time.monotonic()
    output = run_tool(Workspace(tmp_path), "edit_file", {"path": "f.txt", "old_str": old, "new_str": "x"}).output
    assert time.monotonic() - started < 1.5
    assert output.startswith(message), output[:300]
    assert (tmp_path / "f.txt").read_bytes() == b"a\n" * 80_000


def test_the_whitespace_rules_still_find_one_place_in_a_big_file(tmp_path):
    (tmp_path / "f.py").write_bytes(b"".join(b"    x%d = %d\n" % (n, n) for n in range(50_000)))
    old = "".join(f"x{n} = {n}\n" for n in range(20_000, 20_003))
    new = "".join(f"x{n} = 0\n" for n in range(20_000, 20_003))
    output = run_tool(Workspace(tmp_path), "edit_file", {"path": "f.py", "old_str": old, "new_str": new}).output
    assert output.startswith("Edited f.py (with the indentation shifted); lines 20001-20003 now read:\n")
    assert (tmp_path / "f.py").read_bytes().split(b"\n")[19_999:20_004] == [
        b"    x19999 = 19999", b"    x20000 = 0", b"    x20001 = 0", b"    x20002 = 0", b"    x20003 = 20003"]


# --- what the model reads after an edit, and what the user approves ---


def edit(tmp_path, name, before: bytes, old, new, confirm=None):
    (tmp_path / name).write_bytes(before)
    ws = Workspace(tmp_path)
    if confirm:
        ws.confirm = confirm
    return ws, run_tool(ws, "edit_file", {"path": name, "old_str": old, "new_str": new})


@pytest.mark.parametrize("before, old, new, output", [
    (b"one\ntwo\n", "two", "2", "Edited f.txt at line 2."),
    (b"one\ntwo\n", "two", "2\n3\n4", "Edited f.txt at lines 2-4."),
    (b"one\ntwo\nthree\n", "two\n", "", "Edited f.txt: text removed at line 2."),
    (b"one\ntwo\n", "two\n", "", "Edited f.txt: text removed at the end of the file."),
    (b"one\n", "one\n", "", "Edited f.txt: the file is now empty."),
    (b"one\ntwo", "two", "two\n", "Edited f.txt at line 2.\n(The file now ends with a newline.)"),
    (b"one\ntwo\n", "two\n", "two", "Edited f.txt at line 2.\n(The file no longer ends with a newline.)"),
    (b"one\ntwo", "two", "2\n", "Edited f.txt at line 2.\n(The file still has no newline at its end, as before: to "
     "add one, send an edit that changes only that.)"),
    # One of the two newlines is taken for the accidental one; the other ends line 2, and the result says so.
    (b"one\ntwo", "two", "2\n\n", "Edited f.txt at line 2.\n(The file now ends with a newline.)"),
    # A whitespace rule wrote something other than new_str as sent: the lines are shown as they now are.
    (b"a\n    one\n    two\nb\n", "one\ntwo", "1\n2", "Edited f.txt (with the indentation shifted); lines 2-3 now "
     "read:\n     1\ta\n     2\t    1\n     3\t    2\n     4\tb"),
    (b"a\none  \ntwo\nb\n", "one\ntwo\n", "", "Edited f.txt (ignoring trailing whitespace): text removed at line 2; "
     "the lines around it now read:\n     1\ta\n     2\tb"),
])
def test_the_result_says_where_the_edit_went_and_shows_what_a_rule_changed(tmp_path, before, old, new, output):
    """After an exact match the model knows the text (it sent it): the result says where it went, a removal,
    and a final newline it could not see; after a whitespace rule it sees the lines as they now are."""
    assert edit(tmp_path, "f.txt", before, old, new)[1].output == output


def test_the_numbers_agree_with_read_file_when_lines_hold_form_feeds_and_u2028(tmp_path):
    before = "a = 1\n\x0cb = '\u2028'\r\nc = '\x1c\x85'\nd = 4\n".encode()
    asked = []
    ws, result = edit(tmp_path, "f.py", before, "d = 4", "d = 5", lambda *request: asked.append(request))
    assert result.output == "Edited f.py at line 4."
    assert run_tool(ws, "read_file", {"path": "f.py", "offset": 4}).output == "     4\td = 5"
    assert run_tool(ws, "read_file", {"path": "f.py", "offset": 1}).output == (
        "     1\ta = 1\n     2\t\x0cb = '\u2028'\n     3\tc = '\x1c\x85'\n     4\td = 5")
    assert asked[0][2] == ("--- a/f.py\n+++ b/f.py\n@@ -1,4 +1,4 @@\n a = 1\n \x0cb = '\u2028'\n c = '\x1c\x85'\n"
                           "-d = 4\n+d = 5\n")


@pytest.mark.parametrize("before, old, new, diff", [
    (b"one\ntwo", "two", "2", "@@ -1,2 +1,2 @@\n one\n-two\n\\ No newline at end of file\n+2\n"
     "\\ No newline at end of file\n"),
    (b"one\ntwo", "two", "two\n", "@@ -1,2 +1,2 @@\n one\n-two\n\\ No newline at end of file\n+two\n"),
    (b"one\r\ntwo\r\n", "two\n", "two", "@@ -1,2 +1,2 @@\n one\n-two\n+two\n\\ No newline at end of file\n"),
    (b"one\ntwo", "one", "1", "@@ -1,2 +1,2 @@\n-one\n+1\n two\n\\ No newline at end of file\n"),
])
def test_the_diff_to_approve_is_exact_about_the_final_newline(tmp_path, before, old, new, diff):
    asked = []
    edit(tmp_path, "f.txt", before, old, new, lambda *request: asked.append(request))
    assert asked == [("edit", "edit f.txt", "--- a/f.txt\n+++ b/f.txt\n" + diff, "")]


def test_unified_diff_is_what_patch_applies(tmp_path):
    """The approved diff is a real patch: GNU patch turns the old file into the new one, byte for byte."""
    if not shutil.which("patch"):
        pytest.skip("no patch program")
    for before, after in [("one\ntwo", "one\n2"), ("one\ntwo", "one\ntwo\n"), ("a\n\x0cb\n", "a\n\x0cc"), ("x\n", "")]:
        (tmp_path / "f.txt").write_text(before, newline="")
        (tmp_path / "d.patch").write_text(unified_diff(before, after, "f.txt"), newline="")
        subprocess.run(["patch", "-s", "-p1", "-i", "d.patch"], cwd=tmp_path, check=True)
        assert (tmp_path / "f.txt").read_bytes() == after.encode()


def test_an_edit_that_changes_no_byte_is_refused_and_neither_asked_nor_journaled(tmp_path):
    asked = []
    ws, result = edit(tmp_path, "f.txt", b"x = 1\n", "x = 1  ", "x = 1", lambda *request: asked.append(request))
    assert result.output == ("old_str matched line 1 of f.txt (ignoring trailing whitespace), and new_str is what is "
                             "already there: the edit would change nothing. No changes were made.")
    assert not result.ok and asked == [] and ws.journal == [] and (tmp_path / "f.txt").read_bytes() == b"x = 1\n"


def test_creating_a_file_counts_lines_as_read_file_does(tmp_path):
    result = run_tool(Workspace(tmp_path), "edit_file", {"path": "n.txt", "old_str": "", "new_str": "a\x0cb\u2028c\nd"})
    assert result.output == "Created n.txt (2 lines, 9 bytes)."


# --- the Python check: refuse what no Python accepts, warn about what this one does not ---


def test_code_for_a_newer_python_is_applied_with_a_warning_that_names_the_problem(tmp_path):
    _, result = edit(tmp_path, "f.py", b"d = {}\nx = 1\n", "x = 1", 'x = f"{d["a"]}"')
    assert result.ok and (tmp_path / "f.py").read_bytes() == b'd = {}\nx = f"{d["a"]}"\n'
    if sys.version_info < (3, 12):
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        assert result.output.endswith(f"\nWarning: Python {version}, which plainagent runs on, cannot compile f.py "
                                      "after this edit: line 2: f-string: unmatched '['. If the project targets a "
                                      "newer Python this may be fine; if not, fix it."), result.output
    else:
        assert "Warning" not in result.output


def test_an_error_that_is_not_structural_is_a_warning_even_if_no_python_accepts_it():
    """The rule is kept simple on purpose: only indentation and brackets are judged certain."""
    warning = check_python_edit("x = 1\n", "x = = 1\n", "f.py")
    assert warning.startswith("\nWarning: Python ") and "line 1: invalid syntax" in warning


def test_a_file_that_did_not_compile_before_is_not_judged():
    assert check_python_edit("def f(:\n", "def f(:\nreturn\n", "f.py") == ""


@pytest.mark.parametrize("source, found", [
    ("x = (1,\n     2)\n", None),
    ("def f():\n    return (1\n", (2, "'(' is never closed")),
    ("x = [\n  {1: 2}\n", (1, "'[' is never closed")),
    ("x = 1)\n", (1, "unmatched ')'")),
    ("x = {1: [2}\n", (1, "'}' does not close the '[' opened on line 1")),
    ("s = '(['  # ) ]\n", None),  # brackets in strings and comments do not count
    ('s = """\n(\n"""\n', None),
    ('x = f"{d["}"]}"\n', None),  # 3.12: a valid f-string; 3.11 reads a stray "}": not sure, so no verdict
    ('x = t"{d["}"]}"\n', None),  # 3.14 template string, likewise
    ('x = f"{\n  a\n}"\n', None),  # 3.12 multi-line field: 3.11 loses track of the string
    ('x = f"{a}" + (1\n', None),  # on an f-string's line even a real error is left to the compiler's warning
    ("x = f'{a}'\ny = (1\n", (2, "'(' is never closed")),
])
def test_find_unbalanced_bracket(source, found):
    assert find_unbalanced_bracket(source) == found
