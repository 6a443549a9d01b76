"""A reply whose native `tool_calls` has a shape nobody expects is read, never a crash: whole or streamed, inside a
task or in /compact, it ends as one line."""

import json

import pytest
import responses

from agent import AnswerIncomplete, build_session
from harness.cli.config import Config
from harness.cli.repl import run_slash_command
from harness.model.client import Client
from harness.model.stream import read_stream
from tools import Workspace

BASE = "http://127.0.0.1:9/v1"
URL = BASE + "/chat/completions"
SHAPES = [[{"function": "read_file"}], [{"function": ["read_file"]}], [{"function": {"name": 5}}], [None], ["x"],
          "read_file", {"function": {"name": "read_file"}}, 7, [{"function": None, "type": "function"}]]
NAMES = [["?"], ["?"], ["?"], ["?"], ["?"], ["?"], ["read_file"], ["?"], ["?"]]


def whole(tool_calls, content=None) -> dict:
    message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
    return {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


@responses.activate
@pytest.mark.parametrize("tool_calls, names", list(zip(SHAPES, NAMES)))
def test_any_shape_of_native_tool_calls_in_a_whole_reply_is_read(tool_calls, names):
    responses.post(URL, json=whole(tool_calls))
    reply = Client(BASE, "", "m").chat([{"role": "user", "content": "hi"}])
    assert (reply.text, reply.native_calls) == ("", names)


@pytest.mark.parametrize("tool_calls", SHAPES)
def test_any_shape_of_native_tool_calls_in_a_stream_is_read(tool_calls):
    events = [{"choices": [{"delta": {"tool_calls": tool_calls}, "finish_reason": None}]},
              {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}]
    data = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events) + b"data: [DONE]\n\n"
    streamed = read_stream([data])
    assert streamed.native_calls == (["read_file"] if tool_calls == {"function": {"name": "read_file"}} else [])
    assert streamed.finish_reason == "tool_calls"


@responses.activate
@pytest.mark.parametrize("tool_calls", SHAPES)
def test_inside_a_task_it_is_the_task_failing_with_a_reason(tmp_path, tool_calls):
    responses.post(URL, json=whole(tool_calls, "Let me look."))
    session = build_session(Config(model="m"), Client(BASE, "", "m"), Workspace(tmp_path))
    with pytest.raises(AnswerIncomplete, match=r"native function call \((\?|read_file)\) instead of a `tool:` line"):
        session.run("go")


@responses.activate
@pytest.mark.parametrize("tool_calls", SHAPES)
def test_compact_summarises_with_a_malformed_reply_and_says_so_in_one_line(tmp_path, tool_calls):
    responses.post(URL, json=whole(tool_calls))
    session = build_session(Config(model="m", context_tokens=2000), Client(BASE, "", "m"), Workspace(tmp_path))
    for n in range(6):
        session.history.add("user", f"task {n} " + "words " * 200)
        session.history.add("assistant", f"answer {n}")
    line = run_slash_command(session, "/compact")
    assert line.startswith("Context compacted: ") and "\n" not in line
    assert "(The summary came back empty.)" in json.dumps(session.history.messages)  # the reply had no text


def test_a_bug_inside_a_slash_command_is_one_line_and_the_session_goes_on(tmp_path):
    session = build_session(Config(model="m"), Client(BASE, "", "m"), Workspace(tmp_path))
    session.history.compact = lambda force: {}["boom"]  # a bug of ours, wherever it is
    assert run_slash_command(session, "/compact") == ("plainagent: internal error in /compact, please report it: "
                                                      "KeyError: 'boom'")
