"""Reading files as they are found on people's disks: UTF-16 and UTF-32 text with a byte-order mark (what Windows
Notepad and PowerShell write), and lines too long to show whole (minified code, one-line JSON). Through the tools,
on real files in tmp_path, with byte-exact assertions."""

import codecs

import pytest
import test_tools

ws, run = test_tools.ws, test_tools.run  # the workspace fixture, and a call made as the loop makes it

UTF16_NOTEPAD = codecs.BOM_UTF16_LE + "name = \"café\"\r\nport = 80\r\n".encode("utf-16-le")




def write(ws, path, data: bytes):
    (ws.root / path).write_bytes(data)
    return ws.root / path


# --- UTF-16 and UTF-32, told by their byte-order mark ---


ENCODED = [  # (how the model is told, the bytes of "a\r\nü\r\n" in it)
    ("UTF-16 (little-endian)", codecs.BOM_UTF16_LE + "a\r\nü\r\n".encode("utf-16-le")),
    ("UTF-16 (big-endian)", codecs.BOM_UTF16_BE + "a\r\nü\r\n".encode("utf-16-be")),
    ("UTF-32 (little-endian)", codecs.BOM_UTF32_LE + "a\r\nü\r\n".encode("utf-32-le")),
    ("UTF-32 (big-endian)", codecs.BOM_UTF32_BE + "a\r\nü\r\n".encode("utf-32-be")),
]


@pytest.mark.parametrize("name, data", ENCODED)
def test_a_utf16_or_utf32_file_with_a_bom_is_read_as_text_and_says_its_encoding(ws, name, data):
    write(ws, "notes.txt", data)
    assert run(ws, "read_file", path="notes.txt").output == (
        "a\nü\n"
        f"(note: the file is {name}, with a byte-order mark; edit_file writes it back the same way)")


@pytest.mark.parametrize("name, data", ENCODED)
def test_an_edit_keeps_the_encoding_the_bom_and_the_line_endings(ws, name, data):
    full = write(ws, "notes.txt", data)
    result = run(ws, "edit_file", path="notes.txt", old_str="ü", new_str="ö\nzwei")
    assert result.ok, result.output
    codec = {"UTF-16 (l": "utf-16-le", "UTF-16 (b": "utf-16-be", "UTF-32 (l": "utf-32-le", "UTF-32 (b": "utf-32-be"}
    encoding = codec[name[:9]]
    assert full.read_bytes() == data[:len(data) - len("ü\r\n".encode(encoding))] + "ö\r\nzwei\r\n".encode(encoding)
    assert ws.journal[-1].before == data  # /undo puts back the very bytes


def test_notepads_utf16_file_is_edited_byte_for_byte(ws):
    full = write(ws, "settings.ini", UTF16_NOTEPAD)
    assert run(ws, "edit_file", path="settings.ini", old_str="port = 80", new_str="port = 8080").ok
    assert full.read_bytes() == codecs.BOM_UTF16_LE + "name = \"café\"\r\nport = 8080\r\n".encode("utf-16-le")


def test_search_files_finds_text_in_a_utf16_file(ws):
    write(ws, "settings.ini", UTF16_NOTEPAD)
    write(ws, "other.txt", b"port = 1\n")
    assert run(ws, "search_files", pattern="port = \\d+").output == "other.txt:1: port = 1\nsettings.ini:2: port = 80"
    assert run(ws, "search_files", pattern="café", path="settings.ini").output == 'settings.ini:1: name = "café"'


def test_a_file_whose_bom_lies_is_shown_with_a_note_and_not_edited(ws):
    """A UTF-16 mark on bytes that are not UTF-16 (an odd count): shown as far as it decodes, never rewritten."""
    full = write(ws, "odd.txt", codecs.BOM_UTF16_LE + "ok\n".encode("utf-16-le") + b"!")
    read = run(ws, "read_file", path="odd.txt")
    assert read.ok and read.output == (
        "ok\n\ufffd\n"
        "(note: the file starts with a UTF-16 (little-endian) byte-order mark, but byte 8 is not UTF-16: "
        "undecodable bytes are shown as \ufffd, and edit_file will refuse this file)")
    edit = run(ws, "edit_file", path="odd.txt", old_str="ok", new_str="ko")
    assert not edit.ok and edit.output == (
        "odd.txt starts with a UTF-16 (little-endian) byte-order mark, but byte 8 is not UTF-16; edit_file would "
        "corrupt it, so it refuses. Use run_command with a tool that knows the encoding. No changes were made.")
    assert full.read_bytes() == codecs.BOM_UTF16_LE + "ok\n".encode("utf-16-le") + b"!"


def test_utf16_without_a_bom_and_real_binaries_are_still_binary(ws):
    write(ws, "no-bom.txt", "hello\n".encode("utf-16-le"))
    write(ws, "image.bin", codecs.BOM_UTF16_LE + b"\0\0\0\0" * 10)  # decodes, to NUL characters: not text
    for path, size in [("no-bom.txt", 12), ("image.bin", 42)]:
        assert run(ws, "read_file", path=path).output == (
            f"{path} is a binary file ({size} bytes); read_file shows text files only.")
        assert "binary file" in run(ws, "edit_file", path=path, old_str="h", new_str="j").output


# --- lines too long to show whole ---

ONE_LINE = "".join(f'{{"n":"{n:06}"}},' for n in range(20_000))  # {"n":"000000"},{"n":"000001"},... 300,000 characters


def test_read_file_says_where_a_long_line_was_cut_and_how_to_see_the_rest(ws):
    write(ws, "data.json", ("[" + ONE_LINE + "]\n").encode())
    output = run(ws, "read_file", path="data.json").output
    assert output == (
        ("[" + ONE_LINE)[:2000] + " [line cut: 298,002 more characters]\n"
        "(note: line 1 is cut at 2,000 of its 300,002 characters. To see the rest: search_files with "
        "path=\"data.json\" shows the text around a match anywhere in a line, and run_command can print any part "
        "of it (characters 2,001-4,000, say))")


def test_read_file_counts_the_long_lines_it_cut(ws):
    write(ws, "wide.txt", b"short\n" + (b"x" * 3000 + b"\n") * 3)
    notes = run(ws, "read_file", path="wide.txt", offset=2, limit=2).output.splitlines()[-1]
    assert notes == (
        "(note: lines 2 and 3 are cut at 2,000 characters each. To see the rest: search_files with "
        "path=\"wide.txt\" shows the text around a match anywhere in a line, and run_command can print any part "
        "of it (characters 2,001-4,000, say))")


def test_search_files_shows_the_part_of_a_long_line_where_the_match_is(ws):
    """A match at character 150,001 of a 300,000-character line used to show the line's first 200 characters."""
    write(ws, "data.json", (ONE_LINE + "\n").encode())
    output = run(ws, "search_files", pattern='"010000"').output
    assert ONE_LINE.index('"010000"') == 150_005
    assert output == ("data.json:1: [line cut: 149,955 characters before] " + ONE_LINE[149_955:150_155]
                      + " [line cut: 149,845 more characters]")


@pytest.mark.parametrize("line, pattern, shown", [
    ("   " + "a" * 150 + "NEEDLE" + "b" * 100, "NEEDLE",  # leading spaces are not counted as text
     "[line cut: 56 characters before] " + "a" * 94 + "NEEDLE" + "b" * 100),
    ("NEEDLE" + "b" * 300, "NEEDLE", "NEEDLE" + "b" * 194 + " [line cut: 106 more characters]"),
    ("a" * 300 + "NEEDLE", "NEEDLE", "[line cut: 106 characters before] " + "a" * 194 + "NEEDLE"),
])
def test_search_files_excerpts_keep_the_match_in_view(ws, line, pattern, shown):
    write(ws, "a.txt", (line + "\n").encode())
    assert run(ws, "search_files", pattern=pattern).output == "a.txt:1: " + shown
