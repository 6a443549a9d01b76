"""The parser's promises seen from the loop, on real files: what the model wrote is what runs, byte for byte,
and what it answered is the answer."""

import json

import pytest
from test_agent import make_session, results_in

CRLF_FILE = b'import re\r\nTHINK = re.compile(r"<think>.*?</think>")\r\n'
EDITED = b'import re\r\nTHINK = re.compile(r"<think>.*?</think>", re.DOTALL)\r\n'
EDIT = {"path": "strip.py", "old_str": 'r"<think>.*?</think>")', "new_str": 'r"<think>.*?</think>", re.DOTALL)'}


@pytest.mark.parametrize("reply", [
    "<think>\nAdd DOTALL.\n</think>\n\ntool: edit_file(" + json.dumps(EDIT) + ")",
    "Add DOTALL.\n</think>\n\ntool: edit_file(" + json.dumps(EDIT, ensure_ascii=False, indent=2) + ")",
    # a reply with CRLF line endings, the old and new lines written raw inside the strings
    'I will edit it.\r\ntool: edit_file({"path": "strip.py",\r\n "old_str": "import re\r\nTHINK = re.compile(r\\"<think>.*?</think>\\")",'
    '\r\n "new_str": "import re\r\nTHINK = re.compile(r\\"<think>.*?</think>\\", re.DOTALL)"})\r\n',
], ids=["leading reasoning", "reasoning without its opening tag", "CRLF reply, raw CRLF in the strings"])
def test_an_edit_of_a_regex_holding_think_tags_in_a_crlf_file_writes_exactly_the_intended_bytes(tmp_path, reply):
    (tmp_path / "strip.py").write_bytes(CRLF_FILE)
    session, _ = make_session(tmp_path, reply, "Done.")
    assert session.run("use DOTALL") == "Done."
    assert results_in(session.history.messages[3])[0]["ok"], session.history.messages[3]
    assert (tmp_path / "strip.py").read_bytes() == EDITED
    assert "<think>.*?</think>" in session.history.messages[2]["content"]  # the history keeps the call as written


@pytest.mark.parametrize("answer", ["The accounts table:\nUser: admin (id 1)\nUser: guest (id 2)",
                                    "Tool: pytest, all green.", "Observation: only Windows fails (CRLF)."])
def test_an_answer_with_protocol_like_lines_is_the_answer(tmp_path, answer):
    session, model = make_session(tmp_path, answer)
    assert session.run("go") == answer
    assert len(model.seen) == 1 and session.history.messages[-1] == {"role": "assistant", "content": answer}


def test_two_calls_on_one_line_and_a_bold_keyword_all_run(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"alpha\n")
    session, _ = make_session(tmp_path, 'tool: list_files(); tool: read_file({"path": "a.txt"})\n**tool:** list_files()',
                              "Done.")
    session.run("go")
    assert [(r["tool"], r["ok"]) for r in results_in(session.history.messages[3])] == [
        ("list_files", True), ("read_file", True), ("list_files", True)]


@pytest.mark.parametrize("attempt", [
    'Let me look.\ntool: read_file {"path": "conf.py"}',
    'Let me look.\n```json\n{"tool": "read_file", "args": {"path": "conf.py"}}\n```',
    'Let me look.\n```json\n{"name": "read_file", "arguments": "{\\"path\\": \\"conf.py\\"}"}\n```',
], ids=["no parentheses", "JSON with a tool key in a fence", "OpenAI's JSON in a fence"])
def test_a_call_the_parser_does_not_accept_is_answered_with_the_call_to_write_never_taken_as_the_answer(tmp_path, attempt):
    (tmp_path / "conf.py").write_bytes(b"DEBUG = True\n")
    session, model = make_session(tmp_path, attempt, 'tool: read_file({"path": "conf.py"})', "DEBUG is on.")
    assert session.run("is debug on?") == "DEBUG is on."
    error = results_in(session.history.messages[3])[0]
    assert (error["tool"], error["ok"]) == ("read_file", False)
    assert ': tool: read_file({"path": "conf.py"}) Nothing was run.' in error["output"]
    assert "Nothing was run." in error["output"]
    assert session.history.messages[2] == {"role": "assistant", "content": attempt}  # kept as written
    assert results_in(session.history.messages[5])[0]["output"].startswith("DEBUG = True")
    assert len(model.seen) == 3


@pytest.mark.parametrize("answer", ["Done. Accounts:\nUser: admin (id 1)", "Tool: read_file (3 times), all fine.",
                                    '```json\n{"name": "read_file", "description": "Read a file."}\n```'])
def test_prose_that_only_resembles_a_call_is_still_the_answer(tmp_path, answer):
    session, model = make_session(tmp_path, answer)
    assert session.run("go") == answer and len(model.seen) == 1
