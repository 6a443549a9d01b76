"""edit_file with replace_all: a rename in one call per file, as `sed s/old/new/g` does it, where one call per place
cost a model twelve calls for a rename across six files (bench/sessions.py's "rename"). Through the tools, on real
files in tmp_path, with byte-exact assertions."""

import pytest
import test_tools

from harness.files.edits import replace_every
from prompt import render_system_prompt
from tools import TOOLS, check_args

ws, run = test_tools.ws, test_tools.run  # the workspace fixture, and a call made as the loop makes it


def write(ws, path, data: bytes):
    (ws.root / path).write_bytes(data)
    return ws.root / path


def test_every_place_is_replaced_and_the_result_names_their_lines(ws):
    full = write(ws, "api.py", b"from users import fetch_user\n\nuser = fetch_user(1)\nauthor = fetch_user(2)\n")
    result = run(ws, "edit_file", path="api.py", old_str="fetch_user", new_str="load_user", replace_all=True)
    assert result.ok and result.output == "Edited api.py at 3 places, lines 1, 3, 4."
    assert full.read_bytes() == b"from users import load_user\n\nuser = load_user(1)\nauthor = load_user(2)\n"


def test_one_place_reads_as_an_ordinary_edit(ws):
    full = write(ws, "a.py", b"x = fetch_user()\n")
    result = run(ws, "edit_file", path="a.py", old_str="fetch_user", new_str="load_user", replace_all=True)
    assert result.output == "Edited a.py at line 1." and full.read_bytes() == b"x = load_user()\n"


def test_crlf_lines_and_a_missing_final_newline_are_kept(ws):
    full = write(ws, "w.txt", b"a-b\r\nb\r\nb-a")
    result = run(ws, "edit_file", path="w.txt", old_str="b", new_str="c\nd", replace_all=True)
    assert result.output == "Edited w.txt at 3 places, lines 1, 3, 5."  # lines in the file as it is now
    assert full.read_bytes() == b"a-c\r\nd\r\nc\r\nd\r\nc\r\nd-a"


def test_places_are_counted_without_overlap_as_sed_does(ws):
    assert replace_every("aaaa", "aa", "b", "f") == ("bb", [1, 1])
    write(ws, "aa.txt", b"aaaa\n")
    assert run(ws, "edit_file", path="aa.txt", old_str="aa", new_str="b", replace_all=True).output == (
        "Edited aa.txt at 2 places, line 1.")


def test_many_places_are_listed_up_to_twenty(ws):
    write(ws, "n.txt", b"x\n" * 25)
    output = run(ws, "edit_file", path="n.txt", old_str="x", new_str="y", replace_all=True).output
    assert output == f"Edited n.txt at 25 places, lines {', '.join(map(str, range(1, 21)))} and 5 more."


@pytest.mark.parametrize("old, new, fragment", [
    ("fetch_usr", "load_user", "old_str was not found in a.py."),
    ("", "load_user", "replace_all needs the text to replace as old_str"),
])
def test_refused_with_nothing_changed(ws, old, new, fragment):
    full = write(ws, "a.py", b"x = fetch_user()\n")
    result = run(ws, "edit_file", path="a.py", old_str=old, new_str=new, replace_all=True)
    assert not result.ok and fragment in result.output and result.output.endswith("No changes were made.")
    assert full.read_bytes() == b"x = fetch_user()\n"


def test_an_ambiguous_edit_points_to_replace_all(ws):
    write(ws, "a.py", b"f()\nf()\n")
    output = run(ws, "edit_file", path="a.py", old_str="f()", new_str="g()").output
    assert "matches 2 places in a.py (lines 1, 2)" in output and "or set replace_all to change every place" in output


def test_replace_all_must_be_true_or_false():
    problem = check_args("edit_file", {"path": "a.py", "old_str": "f", "new_str": "g", "replace_all": "yes"})
    assert problem == "edit_file: argument replace_all must be true or false, not a string."


def test_a_python_edit_that_breaks_the_file_is_refused_at_every_place(ws):
    full = write(ws, "a.py", b"a = f(1)\nb = f(2)\n")
    result = run(ws, "edit_file", path="a.py", old_str="f(", new_str="f((", replace_all=True)
    assert not result.ok and full.read_bytes() == b"a = f(1)\nb = f(2)\n"


def test_the_model_reads_of_it_in_the_prompt():
    prompt = render_system_prompt(TOOLS)
    assert "edit_file(path: str, old_str: str, new_str: str, replace_all?: bool)" in prompt
    assert "or every place with replace_all" in prompt
