"""A file's bytes decoded for an edit and encoded back exactly, the final newline kept, and the one line model
(CRLF, LF or CR, nothing else) that read_file, edit_file, search and the parser count with. Edits through
the tool, byte for byte, are in test_edits.py."""

import codecs

import pytest

from harness.common import text_files
from harness.common.text_files import decode_for_edit, keep_final_newline, split_lines
from harness.parser import toolcalls


@pytest.mark.parametrize("before, after, kept", [
    ("a\n", "b", "b\n"), ("a", "b\n", "b"), ("a\n", "", ""), ("a", "b", "b"),
    ("x\na", "x\na\n", "x\na\n"), ("x\na\n", "x\na", "x\na"),  # the newline is all the edit changes: made
])
def test_keep_final_newline(before, after, kept):
    assert keep_final_newline(before, after) == kept


def test_decode_for_edit_round_trips_bytes():
    for raw in [b"a\r\nb\r\n", b"\xef\xbb\xbfa\nb", b"", "ü\n".encode(), b"a\r\nb\nc\rd", b"\r\n\n\r",
                codecs.BOM_UTF16_LE + "a\r\n€\n".encode("utf-16-le"), codecs.BOM_UTF16_BE,
                codecs.BOM_UTF32_BE + "😀\r".encode("utf-32-be")]:
        document = decode_for_edit(raw, "f")
        assert document.encode(document.text) == raw


@pytest.mark.parametrize("raw, text, codec", [
    (b"plain\n", "plain\n", "utf-8"),
    (codecs.BOM_UTF8 + b"marked", "marked", "utf-8"),
    (codecs.BOM_UTF16_LE + "x😀".encode("utf-16-le"), "x😀", "utf-16-le"),  # a character in two halves
    (codecs.BOM_UTF32_LE + "x".encode("utf-32-le"), "x", "utf-32-le"),  # not UTF-16 LE with a NUL character
    (b"\xff\xfeabc", "\u6261\ufffd", "utf-16-le"),  # a mark by chance on 3 bytes: not valid, never edited
])
def test_decode_tells_the_encoding_by_the_byte_order_mark(raw, text, codec):
    decoded = text_files.decode(raw)
    assert (decoded.text, decoded.codec) == (text, codec)
    assert bool(decoded.problem()) == ("\ufffd" in text)


@pytest.mark.parametrize("raw", [b"PK\x03\x04\0\0", "no mark".encode("utf-16-le"), codecs.BOM_UTF16_LE + b"a\0\0\0"])
def test_decode_calls_binary_what_holds_nul_characters(raw):
    assert text_files.decode(raw) is None


def test_split_lines_breaks_at_crlf_lf_and_cr_only():
    assert split_lines("a\r\nb\nc\rd\x0ce\u2028f\x1cg\x85h\n") == ["a", "b", "c", "d\x0ce\u2028f\x1cg\x85h"]
    assert split_lines("") == [] and split_lines("\n") == [""] and split_lines("a") == ["a"]


def test_the_parser_and_the_files_share_one_line_model():
    """The parser finds lines where read_file counts them: the same pattern, not a copy that could drift."""
    assert toolcalls.LINE_BREAK is text_files.LINE_BREAK
