"""Replies are bounded (issue 34): every request asks for a reply of at most --max-reply-tokens (max_tokens, or
max_completion_tokens where a model takes that instead, or neither where a server refuses both), never more than
the budget leaves; a stream that runs far past it is read no further; a reply that ran to it is a failed turn of
its own, not a full window: the budget stays, and the history keeps only its beginning."""

import json
import time

import pytest
import responses
from fake_endpoint import FakeEndpoint, completion, stream_events
from test_e2e import agent

from harness.common.seam_types import Reply
from harness.history.session_history import RAN_AWAY_KEPT, SessionHistory
from harness.model.client import Client
from harness.model.session_model import SessionModel
from harness.model.stream import read_stream

URL = "https://api.example.com/v1"
MESSAGES = [{"role": "user", "content": "hi"}]
MAX_TOKENS_REFUSED = {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                           "Use 'max_completion_tokens' instead.", "type": "invalid_request_error",
                                "param": "max_tokens", "code": "unsupported_parameter"}}


def sent(call) -> dict:
    return json.loads(call.request.body)


@responses.activate
@pytest.mark.parametrize("model, parameter", [("gpt-4o-mini", "max_tokens"), ("qwen2.5-coder:7b", "max_tokens"),
                                              ("gpt-5-mini", "max_completion_tokens"),
                                              ("openai/o3-mini", "max_completion_tokens")])
def test_every_request_asks_for_a_bounded_reply_in_the_parameter_the_model_takes(model, parameter):
    responses.post(f"{URL}/chat/completions", json=completion("Hi."))
    assert Client(URL, "sk-test", model, reply_tokens=4000).chat(MESSAGES, limit=4000).text == "Hi."
    body = sent(responses.calls[0])
    assert body[parameter] == 4000 and {"max_tokens", "max_completion_tokens"} - {parameter} - set(body) == \
        {"max_tokens", "max_completion_tokens"} - {parameter}


@responses.activate
def test_a_model_that_refuses_max_tokens_is_asked_with_max_completion_tokens_from_then_on():
    responses.post(f"{URL}/chat/completions", status=400, json=MAX_TOKENS_REFUSED)
    responses.post(f"{URL}/chat/completions", json=completion("Hi."))
    responses.post(f"{URL}/chat/completions", json=completion("Again."))
    lines = []
    client = Client(URL, "sk-test", "some-reasoner", reply_tokens=4000, log=lines.append)
    assert client.chat(MESSAGES, limit=4000).text == "Hi."
    assert client.chat(MESSAGES, limit=3000).text == "Again."
    bodies = [sent(call) for call in responses.calls]
    assert [("max_tokens" in body, body.get("max_completion_tokens")) for body in bodies] == \
        [(True, None), (False, 4000), (False, 3000)]
    assert lines == ["some-reasoner rejects the 'max_tokens' parameter; sending requests with "
                     "'max_completion_tokens' instead"]


@responses.activate
def test_a_server_that_refuses_both_is_asked_with_neither():
    refused = {"error": {"message": "Unrecognized request arguments supplied: max_completion_tokens"}}
    responses.post(f"{URL}/chat/completions", status=400, json={"error": {"message": "unknown field: max_tokens"}})
    responses.post(f"{URL}/chat/completions", status=400, json=refused)
    responses.post(f"{URL}/chat/completions", json=completion("Hi."))
    assert Client(URL, None, "m", reply_tokens=4000).chat(MESSAGES, limit=4000).text == "Hi."
    last = sent(responses.calls[-1])
    assert "max_tokens" not in last and "max_completion_tokens" not in last


def test_a_stream_that_runs_past_its_limit_is_read_no_further():
    """A server that ignores max_tokens: the reply ends where it passed the limit, cut off ("length")."""
    events = stream_events("again " * 2000, pieces=2000, finish_reason=None)
    chunks = iter([f"data: {json.dumps(event)}\n\n".encode() for event in events])
    shown = []
    streamed = read_stream(chunks, lambda kind, text: shown.append(text), max_bytes=600)
    assert streamed.finish_reason == "length" and streamed.overran
    assert 600 < len("".join(streamed.text)) <= 606 and "".join(shown) == "".join(streamed.text)
    assert next(chunks, None) is not None  # the rest was never read


@responses.activate
def test_a_whole_reply_far_past_its_limit_is_taken_as_a_stream_of_it_would_be():
    """--no-stream and a stream agree: a server that ignored max_tokens and claims "stop" ran on all the same."""
    responses.post(f"{URL}/chat/completions", json=completion("again " * 2000))  # 12,000 bytes for 100 tokens
    reply = Client(URL, None, "m", stream=False, reply_tokens=100).chat(MESSAGES, limit=100)
    assert reply.finish_reason == "length" and reply.overran and reply.text == ("again " * 2000)[:800]
    responses.post(f"{URL}/chat/completions", json=completion("again " * 100))  # 600 bytes: within it
    reply = Client(URL, None, "m", stream=False, reply_tokens=100).chat(MESSAGES, limit=100)
    assert reply.finish_reason == "stop" and not reply.overran


def test_the_limit_is_counted_in_bytes_so_text_of_any_script_is_cut_near_it():
    """A CJK character is about a token, and three bytes: counted in characters, such a reply ran on eight times."""
    events = stream_events("再来一次" * 2000, pieces=2000, finish_reason=None)
    chunks = iter([f"data: {json.dumps(event)}\n\n".encode() for event in events])
    streamed = read_stream(chunks, max_bytes=600)
    assert 600 < len("".join(streamed.text).encode()) <= 624


def test_a_native_call_whose_arguments_never_end_is_cut_at_the_limit_too():
    first = {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": ""}}]}}]}
    piece = {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "[1, 2, 3, "}}]}}]}
    chunks = iter([f"data: {json.dumps(event)}\n\n".encode() for event in [first] + [piece] * 2000])
    streamed = read_stream(chunks, max_bytes=600)
    assert streamed.overran and streamed.native_calls == ["f"]
    assert next(chunks, None) is not None  # the rest was never read


class Scripted:
    """A client with a reply limit: records what each request asked."""

    def __init__(self, replies):
        self.replies, self.limits, self.reply_tokens = list(replies), [], 8192

    def chat(self, messages, on_delta=None, limit=None):
        self.limits.append(limit)
        reply = self.replies.pop(0)
        reply.limit = limit  # as the client does
        return reply


def test_the_limit_is_never_more_than_the_budget_leaves_beside_the_request():
    history = SessionHistory([{"role": "system", "content": "s" * 9000}], 5000)  # about 3,000 tokens of 5,000
    client = Scripted([Reply("Hi.")])
    SessionModel(client, history=history).chat(history.messages)
    assert 1900 <= client.limits[0] <= 2010


RUNAWAY = "I will read the file. " * 2000  # 44,000 characters and no call: a small model repeating itself


def test_a_reply_that_ran_to_its_limit_is_no_full_window_and_is_kept_cut():
    history = SessionHistory([{"role": "system", "content": "You are an agent."}], 32_000)
    history.add("user", "read a.py")
    reply = Reply(RUNAWAY, finish_reason="length", usage={"prompt_tokens": 400, "completion_tokens": 8192})
    client = Scripted([reply])
    assert SessionModel(client, history=history).chat(history.messages) is reply  # asked once: no second try
    assert client.limits == [8192] and not reply.window_full and history.budget.tokens == 32_000
    history.add("assistant", RUNAWAY)  # as the loop adds every reply
    kept = history.messages[-1]["content"]
    assert kept == RUNAWAY[:RAN_AWAY_KEPT] + (f"\n(... {len(RUNAWAY) - RAN_AWAY_KEPT:,} more characters of this reply "
                                              "were cut here: it ran to its limit without a call.)")
    assert reply.no_answer(RUNAWAY).startswith("The model's reply ran to its limit of 8,192 tokens (--max-reply-tokens)")
    history.add("user", "(That task failed.)\n\nsay hi")
    history.add("assistant", "Hi.")  # the next reply is kept whole
    assert history.messages[-1]["content"] == "Hi."


def test_a_reply_that_ran_to_its_limit_with_calls_is_kept_whole():
    history = SessionHistory([{"role": "system", "content": "s"}], 32_000,
                             opens_call=lambda line, **_: line.startswith("tool: "))
    text = 'Reading.\ntool: read_file({"path": "a.py"})\n' + RUNAWAY
    history.answered(Reply(text, finish_reason="length", limit=8192, usage={"completion_tokens": 8192}), 1.0)
    history.add("assistant", text)
    assert history.messages[-1]["content"] == text


def test_a_reply_that_ran_on_before_its_call_keeps_the_call_and_loses_the_run():
    history = SessionHistory([{"role": "system", "content": "s"}], 32_000,
                             opens_call=lambda line, **_: line.startswith("tool: "))
    text = RUNAWAY + '\ntool: edit_file({"path": "a.py", "old_str": "x'  # cut off inside its call
    history.answered(Reply(text, finish_reason="length", limit=8192, usage={"completion_tokens": 8192}), 1.0)
    history.add("assistant", text)
    assert history.messages[-1]["content"] == (
        RUNAWAY[:RAN_AWAY_KEPT] + f"\n(... {len(RUNAWAY) - RAN_AWAY_KEPT:,} more characters of this reply were cut "
        'here: it ran to its limit without a call.)\ntool: edit_file({"path": "a.py", "old_str": "x')


def test_a_local_model_that_never_stops_ends_its_task_with_its_own_line_and_the_window_untouched(install, project):
    """The endless stream of a small local model: read up to the limit, the task failed in one line, no
    compaction, no summary, and the next request is as small as the first."""
    endless = {"events": stream_events("again and again " * 3000, pieces=3000, finish_reason=None), "linger": True}
    with FakeEndpoint([endless, "Done."]) as endpoint:
        started = time.monotonic()
        done = agent(install, project, endpoint, "-p", "say hi", "--max-reply-tokens", "300")
        took = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert ("plainagent: The model's reply ran to its limit of 300 tokens (--max-reply-tokens) without a tool call "
            "or an end: it may be repeating itself." in done.stderr)
    assert "compact" not in done.stderr.lower() and "context budget" not in done.stderr
    assert endpoint.received[0].body["max_tokens"] == 300 and len(endpoint.received) == 1
    assert took < 30


@pytest.mark.parametrize("usage", [{"prompt_tokens": 368, "completion_tokens": 3}, {}])
def test_a_runaway_the_client_cut_is_one_whatever_its_usage_says(usage):
    """A count of one piece, not of the reply (some servers send it with each chunk): the cut was the client's."""
    history = SessionHistory([{"role": "system", "content": "s"}], 32_000)
    reply = Reply(RUNAWAY, finish_reason="length", usage=usage, overran=True)
    assert SessionModel(Scripted([reply]), history=history).chat(history.messages) is reply
    assert reply.ran_to_limit() and not reply.window_full and history.budget.tokens == 32_000


def test_a_whole_reply_far_longer_than_its_count_is_measured_by_its_bytes():
    reply = Reply("x" * 200_000, finish_reason="length", usage={"completion_tokens": 5}, limit=8192)
    assert reply.tokens() == 66_667 and reply.ran_to_limit()


def test_a_reply_that_runs_to_the_room_the_budget_left_has_filled_the_window_and_nothing_is_learnt():
    """--context-tokens 3000: the limit asked is what the budget leaves; a reply that runs to it is the window's
    end, said so, with no budget learnt from it and no compaction."""
    history = SessionHistory([{"role": "system", "content": "s" * 3000}, {"role": "user", "content": "t" * 3000}],
                             3000)
    reply = Reply("word " * 2000, finish_reason="length", usage={"prompt_tokens": 1367, "completion_tokens": 1000})
    client = Scripted([reply])
    SessionModel(client, history=history).chat(history.messages)
    assert client.limits[0] < 8192 and reply.window_full and history.budget.tokens == 3000
    assert "the context window is full" in reply.no_answer(reply.text)


@responses.activate
@pytest.mark.parametrize("message, cap", [
    ("max_tokens is too large: 20000. This model supports at most 16384 completion tokens, whereas you provided "
     "20000.", 16384),  # OpenAI
    ("Invalid max_tokens value, the valid range of max_tokens is [1, 8192]", 8192),  # DeepSeek
    ("'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's maximum context length is 4096 tokens "
     "and your request has 500 input tokens (8192 > 4096 - 500).", 3596),  # vLLM
])
def test_a_limit_whose_value_is_refused_is_asked_again_at_the_most_the_server_states(message, cap):
    responses.post(f"{URL}/chat/completions", status=400, json={"error": {"message": message}})
    responses.post(f"{URL}/chat/completions", json=completion("Hi."))
    responses.post(f"{URL}/chat/completions", json=completion("Again."))
    lines = []
    client = Client(URL, "sk-test", "m", reply_tokens=20000, log=lines.append)
    assert client.chat(MESSAGES, limit=20000).text == "Hi." and client.chat(MESSAGES, limit=20000).text == "Again."
    assert [sent(call).get("max_tokens") for call in responses.calls] == [20000, cap, cap]
    assert lines == [f"m takes replies of at most {cap:,} tokens; asking for that"]


@responses.activate
def test_a_newer_model_that_refuses_max_completion_tokens_is_asked_with_max_tokens():
    refused = {"error": {"message": "Unsupported parameter: 'max_completion_tokens'"}}
    responses.post(f"{URL}/chat/completions", status=400, json=refused)
    responses.post(f"{URL}/chat/completions", json=completion("Hi."))
    assert Client(URL, "sk-test", "o3-mini", reply_tokens=4000).chat(MESSAGES, limit=4000).text == "Hi."
    assert sent(responses.calls[1]).get("max_tokens") == 4000


def test_a_refusal_for_length_that_the_replys_limit_explains_leaves_the_estimate_alone():
    """The prompt fits; prompt and max_tokens together do not: the window is learnt, not a smaller token."""
    from harness.history.budget import Budget

    budget, messages = Budget(32_000), [{"role": "user", "content": "a" * 1500}]
    budget.refused(messages, 16_385, None, asked=19_000)
    assert budget.tokens == 16_385 and budget.bytes_per_token == 3.0
