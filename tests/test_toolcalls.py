"""The tool-call parser against the shapes real models write: each case is a reply and what must come of it."""

import random
import string

import pytest

from toolcalls import MAX_CALLS, BadCall, ToolCall, parse_reply
from tools import TOOLS

NAMES = list(TOOLS)
R = {"path": "a.py"}


def calls_of(reply, finish_reason=None):
    """The outcome in a comparable form: ("call", name, args, repair) or ("bad", fragment-checkable text)."""
    parsed = parse_reply(reply, NAMES, finish_reason)
    return [("call", c.name, c.args, c.repair) if isinstance(c, ToolCall) else ("bad", c.problem) for c in parsed.calls]


CALLS = [  # (id, reply, expected calls as (name, args, repair))
    ("plain", 'tool: read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("prose before and after", 'I will look first.\ntool: read_file({"path": "a.py"})\nThen I will edit.',
     [("read_file", R, None)]),
    ("prose after on the same line", 'tool: read_file({"path": "a.py"}) to see the code', [("read_file", R, None)]),
    ("no arguments", "tool: list_files()", [("list_files", {}, None)]),
    ("no arguments with spaces", "tool: list_files(  )", [("list_files", {}, None)]),
    ("space before paren", 'tool: read_file ({"path": "a.py"})', [("read_file", R, None)]),
    ("no space after colon", 'tool:read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("upper case TOOL", 'TOOL: read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("code fence", '```\ntool: read_file({"path": "a.py"})\n```', [("read_file", R, None)]),
    ("code fence with language", '```python\ntool: read_file({"path": "a.py"})\n```', [("read_file", R, None)]),
    ("bullet", '- tool: read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("star bullet", '* tool: read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("numbered", '1. tool: read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("bold", '**tool: read_file({"path": "a.py"})**', [("read_file", R, None)]),
    ("bold label", '**tool:** read_file({"path": "a.py"})', None),  # checked below: refused, not guessed
    ("inline backticks", '`tool: read_file({"path": "a.py"})`', [("read_file", R, None)]),
    ("quote", '> tool: read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("indented", '    tool: read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("multi-line JSON", 'tool: edit_file({\n  "path": "a.py",\n  "old_str": "x = 1",\n  "new_str": "x = 2"\n})',
     [("edit_file", {"path": "a.py", "old_str": "x = 1", "new_str": "x = 2"}, None)]),
    ("raw newlines and tabs inside strings", 'tool: edit_file({"path": "a.go", "old_str": "", "new_str": "func f() {\n\treturn\n}\n"})',
     [("edit_file", {"path": "a.go", "old_str": "", "new_str": "func f() {\n\treturn\n}\n"}, None)]),
    ("paren inside string", 'tool: edit_file({"path": "a.py", "old_str": "f(x)", "new_str": "f(x, y))"})',
     [("edit_file", {"path": "a.py", "old_str": "f(x)", "new_str": "f(x, y))"}, None)]),
    ("escaped quotes", 'tool: run_command({"command": "echo \\"hi\\""})', [("run_command", {"command": 'echo "hi"'}, None)]),
    ("JSON string holding the object", 'tool: read_file("{\\"path\\": \\"a.py\\"}")', [("read_file", R, None)]),
    ("two calls", 'tool: read_file({"path": "a.py"})\ntool: read_file({"path": "b.py"})',
     [("read_file", R, None), ("read_file", {"path": "b.py"}, None)]),
    ("two calls in fences with prose", 'First:\n```\ntool: list_files()\n```\nthen\n```\ntool: read_file({"path": "a.py"})\n```',
     [("list_files", {}, None), ("read_file", R, None)]),
    ("CRLF reply", 'Looking.\r\ntool: read_file({"path": "a.py"})\r\n', [("read_file", R, None)]),
    ("think block is dropped", '<think>\ntool: run_command({"command": "rm -rf /"})\n</think>\ntool: read_file({"path": "a.py"})',
     [("read_file", R, None)]),
    ("leading think closed only", 'maybe tool: run_command({"command": "x"})\n</think>\ntool: list_files()',
     [("list_files", {}, None)]),
    ("curly quotes", "tool: read_file({\u201cpath\u201d: \u201ca.py\u201d})", [("read_file", R, "straightening curly quotes")]),
    ("windows path backslashes", 'tool: read_file({"path": "src\\app.py"})',
     [("read_file", {"path": "src\\app.py"}, "doubling backslashes that start no JSON escape")]),
    ("regex backslashes", 'tool: search_files({"pattern": "def \\w+\\(self"})',
     [("search_files", {"pattern": "def \\w+\\(self"}, "doubling backslashes that start no JSON escape")]),
    ("python dict", "tool: read_file({'path': 'a.py'})", [("read_file", R, "reading it as a Python dict")]),
    ("python literals", "tool: search_files({'pattern': 'x', 'glob': None})",
     [("search_files", {"pattern": "x", "glob": None}, "reading it as a Python dict")]),
    ("mid-sentence mention is ignored when a real call exists",
     'You could use tool: run_command({"command": "ls"}) but instead:\ntool: list_files()', [("list_files", {}, None)]),
    ("unicode in arguments", 'tool: edit_file({"path": "é.txt", "old_str": "", "new_str": "naïve ✓"})',
     [("edit_file", {"path": "é.txt", "old_str": "", "new_str": "naïve ✓"}, None)]),
]


@pytest.mark.parametrize("reply, expected", [(r, e) for _, r, e in CALLS if e is not None],
                         ids=[i for i, _, e in CALLS if e is not None])
def test_calls_are_read(reply, expected):
    assert calls_of(reply) == [("call", *call) for call in expected]


ANSWERS = [  # replies that are final answers: no call, no complaint
    "The function is defined in a.py on line 3.",
    "",
    "Use `read_file` to look at files.",
    "```python\nprint(read_file('a.py'))\n```",
    "I fixed it. The tools I used were read_file and edit_file.",
    "The config says\ntool_choice: auto\nwhich is fine.",
    "Send the header\nX-User: bob\nand it works.",  # not a continuation marker: it does not start the line
    "Human-readable output is best.\nObservations: none.",
    "Reasoning done.\nThe <think> tag is what DeepSeek emits.",
]


@pytest.mark.parametrize("reply", ANSWERS)
def test_answers_have_no_calls(reply):
    assert calls_of(reply) == []


REFUSED = [  # (id, reply, fragment of the problem)
    ("bold label", '**tool:** read_file({"path": "a.py"})', "starts with tool: but not with a tool name"),
    ("unknown tool", 'tool: delete_file({"path": "a.py"})', 'There is no tool "delete_file". The tools are: read_file'),
    ("truncated JSON", 'tool: read_file({"path": "a.py"', "could not be read: the arguments are not valid JSON"),
    ("missing close paren", 'tool: read_file({"path": "a.py"}', "expected ')' right after the JSON object"),
    ("array arguments", 'tool: read_file(["a.py"])', "must be one JSON object"),
    ("positional string", 'tool: read_file("a.py")', "not valid JSON"),
    ("no parenthesis", "tool: read_file a.py", "starts with tool: but not with a tool name and '('"),
    ("unescaped inner quotes are not guessed", 'tool: edit_file({"path": "a.py", "old_str": "say "hi"", "new_str": "x"})',
     "not valid JSON"),
    ("bare call", 'read_file({"path": "a.py"})', "A line starts with read_file( but not with `tool:`"),
    ("json style", '{"name": "read_file", "arguments": {"path": "a.py"}}', "JSON or XML function call"),
    ("xml style", '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>', "JSON or XML"),
    ("mid-sentence only", 'I will now call tool: read_file({"path": "a.py"}) to look.', "must start its own line"),
    ("invented result without call", "Let me check.\ntool_result({\"ok\": true})\nThe file is fine.",
     "goes on as if a result had come"),
]


@pytest.mark.parametrize("reply, fragment", [(r, f) for _, r, f in REFUSED], ids=[i for i, _, _ in REFUSED])
def test_unclear_calls_are_refused_with_a_reason(reply, fragment):
    outcome = calls_of(reply)
    assert len(outcome) == 1 and outcome[0][0] == "bad", outcome
    assert fragment in outcome[0][1]


@pytest.mark.parametrize("marker", ["tool_result({\"tool\": \"read_file\", \"ok\": true, \"output\": \"x\"})",
                                    "<tool_result>x</tool_result>", "User: thanks", "Human: ok",
                                    "Observation: the file has 3 lines", "```\ntool_result({})", "- tool_result(x)"])
def test_invented_continuations_are_cut_and_reported(marker):
    reply = f'tool: read_file({{"path": "a.py"}})\n{marker}\ntool: run_command({{"command": "rm -rf build"}})'
    parsed = parse_reply(reply, NAMES)
    assert [c.name for c in parsed.calls] == ["read_file"]  # the call after the invention is not run
    assert parsed.text == 'tool: read_file({"path": "a.py"})' + ("\n```" if marker.startswith("```") else "")
    assert any("discarded" in note for note in parsed.notes)


@pytest.mark.parametrize("reply, kept", [
    ("<think>secret plan</think>\nThe answer is 4.", "The answer is 4."),
    ("plan without an opening tag</think>\nThe answer is 4.", "The answer is 4."),
    ("<think>cut off while reasoning, tool: list_files()", ""),
    ("Reasoning done.\nThe <think> tag is what DeepSeek emits.", "Reasoning done.\nThe <think> tag is what DeepSeek emits."),
])
def test_history_text_drops_reasoning_only(reply, kept):
    parsed = parse_reply(reply, NAMES)
    assert parsed.text == kept and parsed.calls == []


def test_a_continuation_marker_inside_a_call_argument_is_not_a_cut():
    reply = 'tool: edit_file({"path": "chat.txt", "old_str": "", "new_str": "Hello\nUser: hi\nHuman: yo\n"})\nDone.'
    parsed = parse_reply(reply, NAMES)
    assert calls_of(reply) == [("call", "edit_file", {"path": "chat.txt", "old_str": "", "new_str": "Hello\nUser: hi\nHuman: yo\n"}, None)]
    assert parsed.notes == []


def test_a_cut_off_reply_does_not_run_the_partial_call():
    reply = 'tool: read_file({"path": "a.py"})\ntool: edit_file({"path": "big.py", "old_str": "", "new_str": "def f():\n    pass\n    '
    outcome = calls_of(reply, finish_reason="length")
    assert outcome[0] == ("call", "read_file", R, None)
    assert outcome[1][0] == "bad" and "cut off at the output token limit" in outcome[1][1]


def test_too_many_calls_are_capped_with_a_note():
    reply = "\n".join(f'tool: read_file({{"path": "f{n}.py"}})' for n in range(MAX_CALLS + 3))
    parsed = parse_reply(reply, NAMES)
    assert len(parsed.calls) == MAX_CALLS
    assert parsed.notes == [f"Only the first {MAX_CALLS} calls of a reply are run; 3 were dropped. "
                            "Send them again after these results."]


def test_repairs_are_reported_to_the_model():
    parsed = parse_reply("tool: read_file({'path': 'a.py'})", NAMES)
    assert parsed.notes == ["The arguments of read_file were not valid JSON; they were read after reading it as "
                            "a Python dict. Write plain JSON next time."]


def test_strict_json_is_preferred_over_repairs():
    """A valid JSON backslash escape stays what JSON says it is; repairs run only when JSON fails."""
    assert calls_of('tool: run_command({"command": "printf \\"a\\\\nb\\""})') == [
        ("call", "run_command", {"command": 'printf "a\\nb"'}, None)]


def test_a_bad_call_among_good_ones_keeps_its_place():
    reply = 'tool: list_files()\ntool: read_file({"path": \n'
    assert [kind for kind, *_ in calls_of(reply)] == ["call", "bad"]


def test_fuzz_never_raises_and_never_invents_a_tool():
    rng = random.Random(1234)
    pieces = ["tool:", " read_file", "(", ")", "{", "}", '"path"', ":", '"a.py"', "'", "\n", "```", "**", "- ",
              "<think>", "</think>", "tool_result(", "\\", "\u201c", "User:", "edit_file", "nope_tool", ",", " "]
    for _ in range(3000):
        if rng.random() < 0.5:
            reply = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        else:
            reply = "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 200)))
        for call in parse_reply(reply, NAMES, rng.choice([None, "stop", "length"])).calls:
            if isinstance(call, ToolCall):
                assert call.name in NAMES and isinstance(call.args, dict)
            else:
                assert isinstance(call, BadCall) and call.problem
