"""The tool-call parser against the shapes real models write: each case is a reply and what must come of it."""

import json
import random
import string
import time

import pytest

from harness.common.seam_types import BadCall, ToolCall
from harness.parser.toolcalls import INVENTED, MAX_CALLS, opens_call, parse_reply
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
    ("numbered with a parenthesis", '1) tool: read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("task list", '- [ ] tool: read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("bold", '**tool: read_file({"path": "a.py"})**', [("read_file", R, None)]),
    ("bold keyword", '**tool:** read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("bold keyword without its colon", '**tool**: read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("italic keyword", '*tool:* read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("underscore bold keyword", '__tool:__ read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("backticked keyword", '`tool:` read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("bold keyword in a bullet", '- **tool:** read_file({"path": "a.py"})', [("read_file", R, None)]),
    ("backticked name", 'tool: `read_file`({"path": "a.py"})', [("read_file", R, None)]),
    ("bold name", 'tool: **read_file**({"path": "a.py"})', [("read_file", R, None)]),
    ("bold keyword and name", '**tool: read_file**({"path": "a.py"})', [("read_file", R, None)]),
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
    ("CRLF inside multi-line JSON", 'tool: read_file({\r\n  "path": "a.py"\r\n})\r\nDone.', [("read_file", R, None)]),
    ("CR-only line breaks", 'Looking.\rtool: read_file({"path": "a.py"})\rDone.', [("read_file", R, None)]),
    ("raw CRLF inside a string is kept", 'tool: edit_file({"path": "a.txt", "old_str": "a\r\nb", "new_str": "c"})',
     [("edit_file", {"path": "a.txt", "old_str": "a\r\nb", "new_str": "c"}, None)]),
    ("speaker label before the first call is prose", 'User: admin (id 1) is the owner.\ntool: read_file({"path": "a.py"})',
     [("read_file", R, None)]),
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


@pytest.mark.parametrize("reply, expected", [(r, e) for _, r, e in CALLS], ids=[i for i, _, _ in CALLS])
def test_calls_are_read(reply, expected):
    assert calls_of(reply) == [("call", *call) for call in expected]


ANSWERS = [  # real answers, with protocol-like words in them: no call, no note, and the text kept whole
    "The function is defined in a.py on line 3.",
    "",
    "Use `read_file` to look at files.",
    "```python\nprint(read_file('a.py'))\n```",
    "I fixed it. The tools I used were read_file and edit_file.",
    "The config says\ntool_choice: auto\nwhich is fine.",
    "Send the header\nX-User: bob\nand it works.",
    "Human-readable output is best.\nObservations: none.",
    "Reasoning done.\nThe <think> tag is what DeepSeek emits.",
    "The accounts table has two rows:\nUser: admin (id 1)\nUser: guest (id 2)",
    "**User:** admin\n**Role:** owner",
    "> User: can you fix it?\n> Assistant: done",
    "The transcript format is:\nHuman: the question\nAssistant: the answer",
    "Observation: the test fails only on Windows, because of the CRLF endings.",
    "Tool: pytest, all green.",
    "Tool: pytest (all green).",
    "I ran the checks.\nTool: pytest\nResult: 12 passed",
    "Tool: ruff, no findings.\nTool: mypy, 2 errors, listed below.",
    "Tool: read_file\nPurpose: shows a file with line numbers.",
    "TOOL: edit_file replaces one exact, unique string.",
    "Qwen3-Coder writes <function=read_file> tags.",
    "The log shows\n  user: root\n  tool: none needed",
    "The parser reads lines like `tool: NAME({json})`.",
    "read_file(path) returns numbered lines; write_file does not exist.",
    "Qwen wraps calls in <tool_call> tags; this agent reads `tool:` lines instead.",
    'The server replied {"name": "get_weather", "arguments": "{}"}, which is the OpenAI format.',
    "Your regex `<think>.*?</think>` matches lazily, so nested tags end early.",
    "Strip the closing tag with `text.split('</think>')[1]`.",
    "The results come back as tool_result lines, one per call.",
    "The CRLF file now ends with\r\nUser: admin\r\n",
    "The function that reads is\n`read_file(path)`",  # in backticks: shown, not called
    "```python\nfrom tools import read_file\nread_file(ws, \"a.py\")\n```",  # a line of a longer code sample
    "read_file(path) returns the text; list_files() the names.",
]


@pytest.mark.parametrize("reply", ANSWERS)
def test_answers_are_answers(reply):
    parsed = parse_reply(reply, NAMES)
    assert (parsed.calls, parsed.notes, parsed.text) == ([], [], reply.strip())


REFUSED = [  # (id, reply, fragment of the problem)
    ("unknown tool", 'tool: delete_file({"path": "a.py"})', 'There is no tool "delete_file". The tools are: read_file'),
    ("unknown tool, capitalised keyword", 'Tool: pytest({"args": "-q"})', 'There is no tool "pytest"'),
    ("unknown tool without arguments", "tool: bash", 'There is no tool "bash"'),
    ("unknown tool with other arguments", "tool: bash(ls -la)", 'There is no tool "bash"'),
    ("truncated JSON", 'tool: read_file({"path": "a.py"', "could not be read: the arguments are not valid JSON"),
    ("missing close paren", 'tool: read_file({"path": "a.py"}', "expected ')' right after the JSON object"),
    ("array arguments", 'tool: read_file(["a.py"])', "must be one JSON object"),
    ("positional string", 'tool: read_file("a.py")', "must be one JSON object"),
    ("known name alone", "tool: read_file", "its arguments must follow in parentheses"),
    ("unescaped inner quotes are not guessed", 'tool: edit_file({"path": "a.py", "old_str": "say "hi"", "new_str": "x"})',
     "not valid JSON"),
    ("bare call", 'read_file({"path": "a.py"})', "A line starts with read_file( but not with `tool:`"),
    ("json style", '{"name": "read_file", "arguments": {"path": "a.py"}}', "call to read_file written as JSON"),
    ("xml style", '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>', "written as JSON"),
    ("function tag style", "<function=read_file>\n<parameter=path>a.py</parameter>\n</function>", "JSON or XML"),
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
                                    "<tool_result>x</tool_result>", "```\ntool_result({})", "- tool_result(x)"])
def test_invented_continuations_after_a_call_are_cut_and_reported(marker):
    reply = f'tool: read_file({{"path": "a.py"}})\n{marker}\ntool: run_command({{"command": "rm -rf build"}})'
    parsed = parse_reply(reply, NAMES)
    assert [c.name for c in parsed.calls] == ["read_file"]  # the call after the invention is not run
    assert parsed.text == 'tool: read_file({"path": "a.py"})' + ("\n```" if marker.startswith("```") else "")
    assert parsed.notes == [INVENTED]


@pytest.mark.parametrize("line", ["User: admin (id 1) owns it, so next I read its file.", "Human: ok",
                                  "**User:** ok", "Observation: the file has 3 lines"])
def test_a_speakers_name_after_a_call_is_text_not_an_invented_turn(line):
    reply = f'tool: read_file({{"path": "a.py"}})\n{line}\ntool: list_files()'
    parsed = parse_reply(reply, NAMES)
    assert [c.name for c in parsed.calls] == ["read_file", "list_files"]
    assert parsed.text == reply and parsed.notes == []


@pytest.mark.parametrize("answer", [
    "Tool: read_file (a.py)", "Tool: read_file\nPurpose: shows a file.", "TOOL: edit_file replaces one string.",
    "Use tool: read_file with a path argument.", "- Tool: list_files, then read_file.", "tool: pytest, all green",
    'I will read it: `tool: read_file({"path": "a.py"})` is how.', "User: admin (id 1)",
    '```json\n{"name": "read_file", "description": "Read a file."}\n```',  # a tool's schema, not a call
    '{"tool": "pytest", "passed": 12}', '{"name": "read_file", "size": 3}',
    "read_file returns numbered lines {like this}", 'read_file {"path": "a.py"} is how it was called.',
])
def test_protocol_words_outside_the_agreed_shape_are_prose(answer):
    parsed = parse_reply(answer, NAMES)
    assert (parsed.calls, parsed.notes, parsed.text) == ([], [], answer)


NEAR_CALLS = [  # (id, reply, the problem's start, the correct call it shows, or None when no arguments could be read)
    ("no parentheses", 'Let me look.\ntool: read_file {"path": "conf.py"}',
     'The line `tool: read_file {"path": "conf.py"}` is not a call: the arguments go in parentheses',
     'tool: read_file({"path": "conf.py"})'),
    ("no parentheses, capitalised", 'Tool: read_file {"path": "conf.py"}',
     'The line `Tool: read_file {"path": "conf.py"}` is not a call', 'tool: read_file({"path": "conf.py"})'),
    ("a colon after the name", '- tool: edit_file: {"path": "a.py", "old_str": "x", "new_str": "y"}',
     "The line `- tool: edit_file: {",
     'tool: edit_file({"path": "a.py", "old_str": "x", "new_str": "y"})'),
    ("arguments over several lines", 'tool: read_file {\n  "path": "a.py"\n}', "The line `tool: read_file {` is not a call",
     'tool: read_file({"path": "a.py"})'),
    ("a bare word", "tool: read_file a.py", "The line `tool: read_file a.py` starts like a call to read_file but is not "
     "one: a call is the tool's name and its arguments as one JSON object in parentheses", None),
    ("words in parentheses", "- tool: read_file (3 times)", "The line `- tool: read_file (3 times)` starts like a call", None),
    ("the protocol word with prose", "tool: read_file with a path argument.", "The line `tool: read_file with a path", None),
    ("bare name without parentheses", 'read_file {"path": "a.py"}', "The line `read_file {\"path\": \"a.py\"}` is not a "
     "call", 'tool: read_file({"path": "a.py"})'),
    ("JSON with a tool key in a fence", '```json\n{"tool": "read_file", "args": {"path": "conf.py"}}\n```',
     "That is a call to read_file written as JSON", 'tool: read_file({"path": "conf.py"})'),
    ("JSON with the arguments at the top", 'I will read it:\n{"tool": "read_file", "path": "conf.py"}',
     "That is a call to read_file written as JSON", 'tool: read_file({"path": "conf.py"})'),
    ("JSON, name after arguments", '```\n{"arguments": {"path": "conf.py"}, "name": "read_file"}\n```',
     "That is a call to read_file written as JSON", 'tool: read_file({"path": "conf.py"})'),
    ("OpenAI's shape, arguments a string", '{"type": "function", "function": {"name": "read_file", "arguments": '
     '"{\\"path\\": \\"a.py\\"}"}}', "That is a call to read_file written as JSON", 'tool: read_file({"path": "a.py"})'),
    ("a list of them", '[{"tool_name": "list_files", "parameters": {}}]', "That is a call to list_files written as JSON",
     "tool: list_files({})"),
    ("the tool as the key", '{"read_file": {"path": "a.py"}}', "That is a call to read_file written as JSON",
     'tool: read_file({"path": "a.py"})'),
    ("Python keywords", 'Let me look.\nread_file(path="conf.py")', 'The line `read_file(path="conf.py")` calls '
     "read_file as code, so it was not run", 'tool: read_file({"path": "conf.py"})'),
    ("Python, no arguments", "list_files()", "The line `list_files()` calls list_files as code", "tool: list_files({})"),
    ("Python, positional", 'run_command("ls")', 'The line `run_command("ls")` calls run_command as code', None),
    ("Python, not even Python", "read_file(conf.py)", "The line `read_file(conf.py)` calls read_file as code", None),
    ("Python, alone in a fence", '```python\nread_file("conf.py")\n```', 'The line `read_file("conf.py")` calls', None),
]


@pytest.mark.parametrize("reply, start, example", [case[1:] for case in NEAR_CALLS], ids=[case[0] for case in NEAR_CALLS])
def test_a_line_that_starts_like_a_call_and_is_not_one_is_answered_never_taken_as_the_answer(reply, start, example):
    parsed = parse_reply(reply, NAMES)
    assert len(parsed.calls) == 1 and isinstance(parsed.calls[0], BadCall), parsed.calls
    problem = parsed.calls[0].problem
    assert problem.startswith(start), problem
    if example:
        assert problem.endswith(f": {example}") and "\n" not in problem, problem
    assert parsed.text == reply  # the history keeps what the model wrote


def test_a_near_call_among_real_calls_is_answered_in_its_place():
    reply = 'tool: list_files()\ntool: read_file {"path": "a.py"}\ntool: read_file({"path": "b.py"})'
    assert [(type(call).__name__, call.name) for call in parse_reply(reply, NAMES).calls] == [
        ("ToolCall", "list_files"), ("BadCall", "read_file"), ("ToolCall", "read_file")]


def test_a_near_call_with_long_arguments_shows_the_shape_not_a_copy():
    content = "x" * 5000
    reply = "tool: edit_file " + json.dumps({"path": "a.py", "old_str": "", "new_str": content})
    problem = parse_reply(reply, NAMES).calls[0].problem
    assert len(problem) < 600 and problem.endswith(
        "; written as one: tool: edit_file({...}), the same JSON object in the parentheses")


def test_a_call_planned_before_a_lone_closing_think_tag_never_runs():
    reply = ('The user wants a.txt left alone? Maybe I should do\n'
             'tool: edit_file({"path": "a.txt", "old_str": "hello", "new_str": "bye"})\n'
             'No wait, they said not to touch it.\n</think>\n\nI left a.txt unchanged, as asked.')
    parsed = parse_reply(reply, NAMES)
    assert (parsed.calls, parsed.text) == ([], "I left a.txt unchanged, as asked.")


def test_a_closing_think_tag_inside_arguments_on_its_own_line_is_data():
    reply = 'tool: edit_file({"path": "a.txt", "old_str": "x", "new_str": "a\n</think>\nb"})'
    parsed = parse_reply(reply.replace("\\n", "\n"), NAMES)
    assert [c.args["new_str"] for c in parsed.calls] == ["a\n</think>\nb"]


# --- reasoning: only ever leading, never inside a call ---

EDIT_THINK = 'tool: edit_file({"path": "p.py", "old_str": "X", "new_str": "re.compile(r\\"<think>.*?</think>\\")"})'
THINK = [  # (id, reply, expected calls as (name, args), the text kept in the history)
    ("think tags inside new_str are kept", EDIT_THINK,
     [("edit_file", {"path": "p.py", "old_str": "X", "new_str": 're.compile(r"<think>.*?</think>")'})], EDIT_THINK),
    ("a closing tag in the second call keeps the first",
     'tool: list_files()\ntool: edit_file({"path": "p.md", "old_str": "", "new_str": "end of plan\\n</think>\\n"})',
     [("list_files", {}), ("edit_file", {"path": "p.md", "old_str": "", "new_str": "end of plan\n</think>\n"})],
     'tool: list_files()\ntool: edit_file({"path": "p.md", "old_str": "", "new_str": "end of plan\\n</think>\\n"})'),
    ("a closing tag on its own line inside multi-line JSON",
     'tool: edit_file({\n"path": "p.md",\n"old_str": "",\n"new_str": "a\n</think>\nb"\n})',
     [("edit_file", {"path": "p.md", "old_str": "", "new_str": "a\n</think>\nb"})],
     'tool: edit_file({\n"path": "p.md",\n"old_str": "",\n"new_str": "a\n</think>\nb"\n})'),
    ("a leading block and its calls are dropped",
     '<think>\ntool: run_command({"command": "rm -rf /"})\n</think>\ntool: read_file({"path": "a.py"})',
     [("read_file", R)], 'tool: read_file({"path": "a.py"})'),
    ("two leading blocks", "<think>a</think>\n<think>b</think>\nThe answer is 4.", [], "The answer is 4."),
    ("a leading block whose server stripped the opening tag",
     'maybe tool: run_command({"command": "x"})\n</think>\n\ntool: list_files()', [("list_files", {})], "tool: list_files()"),
    ("a closing tag after the first call is text",
     'tool: list_files()\nThen I check that </think>\nis handled.',
     [("list_files", {})], 'tool: list_files()\nThen I check that </think>\nis handled.'),
    ("a think block after the calls is text", 'tool: list_files()\n<think>\nwhat next\n</think>',
     [("list_files", {})], 'tool: list_files()\n<think>\nwhat next\n</think>'),
    ("a think block that is not leading is text", 'Plan:\n<think>\nread it\n</think>\ntool: read_file({"path": "a.py"})',
     [("read_file", R)], 'Plan:\n<think>\nread it\n</think>\ntool: read_file({"path": "a.py"})'),
    ("a leading block, then a closing tag inside an argument",
     '<think>plan</think>\ntool: edit_file({"path": "p", "old_str": "", "new_str": "</think>"})',
     [("edit_file", {"path": "p", "old_str": "", "new_str": "</think>"})],
     'tool: edit_file({"path": "p", "old_str": "", "new_str": "</think>"})'),
    ("an answer after reasoning", "<think>secret plan</think>\nThe answer is 4.", [], "The answer is 4."),
    ("an answer after reasoning without its opening tag", "plan without an opening tag</think>\nThe answer is 4.", [],
     "The answer is 4."),
    ("cut off while reasoning", "<think>cut off while reasoning, tool: list_files()", [], ""),
    ("CRLF stays inside arguments and the history",
     'Editing.\r\ntool: edit_file({"path": "w.txt", "old_str": "a\r\n", "new_str": "<think>\r\n"})\r\n',
     [("edit_file", {"path": "w.txt", "old_str": "a\r\n", "new_str": "<think>\r\n"})],
     'Editing.\r\ntool: edit_file({"path": "w.txt", "old_str": "a\r\n", "new_str": "<think>\r\n"})'),
]


@pytest.mark.parametrize("reply, calls, text", [(r, c, t) for _, r, c, t in THINK], ids=[i for i, *_ in THINK])
def test_reasoning_is_leading_and_arguments_are_never_touched(reply, calls, text):
    parsed = parse_reply(reply, NAMES)
    assert [(c.name, c.args) for c in parsed.calls] == calls
    assert all(isinstance(c, ToolCall) for c in parsed.calls)
    assert (parsed.text, parsed.notes) == (text, [])


def test_a_continuation_marker_inside_a_call_argument_is_not_a_cut():
    reply = 'tool: edit_file({"path": "chat.txt", "old_str": "", "new_str": "Hello\nUser: hi\nHuman: yo\ntool_result(\n"})\nDone.'
    parsed = parse_reply(reply, NAMES)
    assert calls_of(reply) == [("call", "edit_file", {"path": "chat.txt", "old_str": "",
                                                      "new_str": "Hello\nUser: hi\nHuman: yo\ntool_result(\n"}, None)]
    assert (parsed.notes, parsed.text) == ([], reply)


# --- several calls on one line, and calls inside sentences ---

SAME_LINE = [  # (id, reply, the calls read, in order)
    ("space", 'tool: read_file({"path": "a.py"}) tool: list_files()', ["read_file", "list_files"]),
    ("semicolon", 'tool: read_file({"path": "a.py"}); tool: list_files()', ["read_file", "list_files"]),
    ("and-and", 'tool: read_file({"path": "a.py"}) && tool: list_files()', ["read_file", "list_files"]),
    ("backticks", '`tool: read_file({"path": "a.py"})` `tool: list_files()`', ["read_file", "list_files"]),
    ("and then", '`tool: read_file({"path": "a.py"})` and then `tool: list_files()`', ["read_file", "list_files"]),
    ("no space", "tool:list_files()tool:list_files()", ["list_files", "list_files"]),
    ("three", "tool: list_files(); tool: list_files({\"path\": \"src\"}); tool: read_file({\"path\": \"a.py\"})",
     ["list_files", "list_files", "read_file"]),
    ("an unknown second", 'tool: read_file({"path": "a.py"}) tool: nope({})', ["read_file", "bad"]),
]


@pytest.mark.parametrize("reply, names", [(r, n) for _, r, n in SAME_LINE], ids=[i for i, *_ in SAME_LINE])
def test_a_call_right_after_a_call_on_its_line_is_run(reply, names):
    parsed = parse_reply(reply, NAMES)
    assert [c.name if isinstance(c, ToolCall) else "bad" for c in parsed.calls] == names
    assert parsed.notes == []


@pytest.mark.parametrize("reply", [
    'tool: read_file({"path": "a.py"}) rather than tool: run_command({"command": "cat a.py"})',
    'You could use tool: run_command({"command": "cat a.py"}) but instead:\ntool: read_file({"path": "a.py"})',
])
def test_a_call_inside_a_sentence_is_not_run_and_the_model_is_told(reply):
    parsed = parse_reply(reply, NAMES)
    assert calls_of(reply) == [("call", "read_file", R, None)]
    assert parsed.notes == ["'tool: run_command({\"command\": \"cat a.py\"})' stands in the middle of a line, so it "
                            "was not run. If you meant it, write it on its own line."]


# --- broken calls: their place, their extent ---


def test_a_cut_off_reply_does_not_run_the_partial_call():
    reply = 'tool: read_file({"path": "a.py"})\ntool: edit_file({"path": "big.py", "old_str": "", "new_str": "def f():\n    pass\n    '
    outcome = calls_of(reply, finish_reason="length")
    assert outcome[0] == ("call", "read_file", R, None)
    assert outcome[1][0] == "bad" and "cut off (at its token limit) inside this call" in outcome[1][1]


def test_the_lines_of_an_unclosed_call_are_its_arguments_not_calls_or_turns():
    reply = 'tool: edit_file({"path": "p.md", "old_str": "", "new_str": "a\ntool: run_command({"command": "ls"})\nUser: x\n'
    parsed = parse_reply(reply, NAMES, "length")
    assert [type(c) for c in parsed.calls] == [BadCall] and parsed.notes == []


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


PATHOLOGICAL = [  # (id, reply, the calls read) — each of these once took seconds to hours, or ended in a traceback
    ("a separator line of underscores", "tool: list_files()\n" + "_" * 24, ["list_files"]),
    ("a separator line of stars", "*" * 24 + "x", []),
    ("a horizontal rule of spaced stars", "* " * 24 + "x", []),
    ("a 5000-digit number", 'tool: read_file({"n": ' + "9" * 5000 + "})", ["bad"]),
    ("brackets 5000 deep", "tool: read_file(" + "[" * 5000 + ")", ["bad"]),
    ("a bare call holding a 5000-digit number", 'read_file({"n": ' + "9" * 5000 + "})", ["bad"]),  # code calling it
    ("five thousand code lines calling read_file in a fence", "```\n" + "read_file(x)\n" * 5000 + "```", []),
    ("five thousand lines of code calling read_file", 'read_file({"path": \n' * 5000, []),
    ("five thousand lines starting like a call", 'tool: read_file {"path": \n' * 5000, ["bad"] * 10),
    ("five thousand JSON lines", '{"tool": "x", "args": {"a": [' * 5000, []),
    ("a JSON value nested deep", '{"tool": ' * 5000, []),
]


@pytest.mark.parametrize("reply, kinds", [(r, k) for _, r, k in PATHOLOGICAL], ids=[i for i, *_ in PATHOLOGICAL])
def test_pathological_replies_are_read_quickly_and_without_error(reply, kinds):
    started = time.process_time()  # the parser's own work: a loaded machine does not fail the test
    parsed = parse_reply(reply, NAMES)
    assert [c.name if isinstance(c, ToolCall) else "bad" for c in parsed.calls] == kinds
    assert time.process_time() - started < 1.0


# --- the promise, as a property: a call written is read back exactly, and nothing else is a call ---

TRICKY = ["<think>", "</think>", "tool_result(", "User:", "Human:", "Observation:", "tool: read_file(", "\r", "\r\n",
          "\n", '"', "'", "\\", "\\n", "{", "}", "(", ")", "[", "]", "```", "**", " ", "\t", "é", "\u2028", "\u2029",
          "\U0001f600", "\u201c", "\u201d", "\u2018", "\u00a0", "\x00", "\x1b", "\ud83d", "\ufeff", "tool:", "a",
          "x = 1", "Ω", "})", "tool: list_files()"]
PROSE = ["Let me look at the file first.", "Then I will edit it.", "The <think> tag and the tool_result( marker.",
         "Running the tests (quietly).", "Paths are {relative}.", "Naïve café, 100 \u201cquotes\u201d \U0001f600."]
ANSWER_LINES = ["User: admin (id 1)", "Tool: pytest, all green.", "Observation: it fails.", "Human-readable."]
DECORATIONS = ["{}", "- {}", "* {}", "1. {}", "> {}", "    {}", "**{}**", "`{}`", "```\n{}\n```", "{} to see it"]
KEYWORDS = ["tool:", "tool: ", "TOOL: ", "**tool:** ", "`tool:` ", "__tool:__ "]


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(TRICKY) for _ in range(rng.randint(0, 12)))


def random_args(rng: random.Random) -> dict:
    keys = rng.sample(["path", "old_str", "new_str", "command", "pattern", "glob", "tool_result(", "</think>"],
                      rng.randint(0, 4))
    values = [random_text(rng), random_text(rng), rng.randint(-5, 10**6), 0.5, None, True,
              [random_text(rng), {"(": random_text(rng)}]]
    return {key: rng.choice(values) for key in keys}


def render_call(rng: random.Random, name: str, args: dict) -> str:
    """One call as a model might write it; with newlines inside the JSON only where JSON allows them."""
    if not args and rng.random() < 0.5:
        return f"{rng.choice(KEYWORDS)}{name}()"
    rendered = json.dumps(args, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, None, 0, 2]))
    if rng.random() < 0.3:  # CRLF between JSON tokens; the strings hold no raw line breaks, json.dumps escapes them
        rendered = rendered.replace("\n", "\r\n")
    return f"{rng.choice(KEYWORDS)}{name}({rendered})"


def test_calls_round_trip_exactly_whatever_their_arguments_hold():
    rng = random.Random(20240607)
    for _ in range(2000):
        calls = [(rng.choice(NAMES), random_args(rng)) for _ in range(rng.randint(1, 4))]
        rendered = [render_call(rng, name, args) for name, args in calls]
        lines = [rng.choice(PROSE + ANSWER_LINES) for _ in range(rng.randint(0, 2))]  # before the first call
        if rng.random() < 0.3:
            reasoning = "\n".join(rendered) + "\n" + random_text(rng)  # calls only planned: never run
            lines.insert(0, "<think>\n" + reasoning.replace("</think>", "") + "\n</think>")  # its first </think> ends it
        index = 0
        while index < len(rendered):
            if index + 1 < len(rendered) and rng.random() < 0.2:  # two calls on one line
                lines.append(rendered[index] + rng.choice([" ", "; ", " && "]) + rendered[index + 1])
                index += 2
            else:
                lines.append(rng.choice(DECORATIONS).format(rendered[index]))
                index += 1
            lines += rng.sample(PROSE, rng.randint(0, 2))
        reply = rng.choice(["\n", "\r\n"]).join(lines)
        parsed = parse_reply(reply, NAMES, rng.choice([None, "stop", "length"]))
        assert [(c.name, c.args, c.repair) for c in parsed.calls] == [(n, a, None) for n, a in calls], reply
        assert all(call in parsed.text for call in rendered), reply  # the history keeps each call as written
        assert parsed.notes == [], reply


def test_any_text_parses_without_error_and_the_history_is_a_slice_of_it():
    """Junk never raises, every call names a known tool, and the history text is the reply, only cut."""
    rng = random.Random(1234)
    pieces = ["tool:", " read_file", "(", ")", "{", "}", '"path"', ":", '"a.py"', "'", "\n", "\r\n", "```", "**",
              "- ", "<think>", "</think>", "tool_result(", "\\", "\u201c", "User:", "edit_file", "nope_tool", ",", " "]
    for _ in range(3000):
        if rng.random() < 0.5:
            reply = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        else:
            reply = "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 200)))
        parsed = parse_reply(reply, NAMES, rng.choice([None, "stop", "length"]))
        assert parsed.text in reply, reply
        for call in parsed.calls:
            assert call.name in NAMES if isinstance(call, ToolCall) else call.problem, reply


# --- a line still being written: what the display asks while a reply streams in ---


def test_opens_call_settles_a_line_only_when_nothing_still_to_come_can_change_it():
    """Whatever opens_call says of a line's start (not None) is what it says of the whole line: the display
    can hide or show what it holds at that moment and never be contradicted by the rest."""
    rng = random.Random(77)
    pieces = ["tool", "Tool", ":", " ", "**", "`", "_", "- ", "1.", " [x] ", "> ", "read_file", "mcp.fetch-url", "x-",
              "(", ")", "{", '"path": "a"', "}", "\n", "\r\n", "\t", ",", "nope", "t", "o", "l", ".", "-", "[", "]"]
    written = ['tool: read_file ( {"path": "a.py"})', 'Tool: pytest(\n  {"a": 1})', 'Tool: pytest(\n  all green)',
               'tool: mcp.fetch-url({"url": "u"})', "tool: mcp.fetch-url", "Tool: mcp.fetch-url", "12. tool: x()",
               '- [x] **tool:** `read_file`({"path": "a.py"})', "tool: read_file\r\nmore", "- - - - tool: y()"]
    replies = written + [reply for _, reply, _ in CALLS] + [
        "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14))) for _ in range(1500)]
    for reply in replies:
        for names in (NAMES, None):
            whole = opens_call(reply, names, complete=True)
            assert whole is bool(whole)
            for end in range(len(reply) + 1):
                assert opens_call(reply[:end], names) in (None, whole), (reply, end, names)

