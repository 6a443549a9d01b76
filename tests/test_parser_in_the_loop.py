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
