"""The streaming reader: SSE parsed from raw bytes (stream.py), and the client reading streams from a real socket."""

import json
import random
import time

import pytest
from fake_endpoint import FakeEndpoint, completion, stream_events

from harness.cli.args import parse_args
from harness.cli.config import ConfigError, load_config
from harness.common.seam_types import ChatError
from harness.model.client import Client
from harness.model.stream import Event, StreamCut, StreamError, read_events, read_lines, read_stream

MESSAGES = [{"role": "user", "content": "hi"}]
TRICKY = "中文 text, U+2028 here:\u2028and an emoji 🙂 at the end"


def sse(*events) -> bytes:
    return b"".join((f"data: {json.dumps(event, ensure_ascii=False)}" if isinstance(event, dict) else event).encode()
                    + b"\n\n" for event in events)


def delta(content=None, finish=None, **more) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": content, **more}, "finish_reason": finish}]}


# --- lines and events from bytes ---


@pytest.mark.parametrize("seed", range(20))
def test_lines_survive_any_split_of_the_bytes(seed):
    data = "data: 中文\r\n\ndata: a\u2028b 🙂\n: keep-alive\n\n".encode()
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(data)), rng.randint(1, 10)))
    chunks = [data[start:end] for start, end in zip([0, *cuts], [*cuts, len(data)])]
    assert list(read_lines(chunks)) == ["data: 中文", "", "data: a\u2028b 🙂", ": keep-alive", ""]


@pytest.mark.parametrize("lines, events", [
    (["data: {}", ""], [Event("message", "{}")]),
    (["data:{}", ""], [Event("message", "{}")]),  # no space after the colon
    ([": keep-alive", "", "data: x", ""], [Event("message", "x")]),
    (["data: a", "data: b", ""], [Event("message", "a\nb")]),
    (["event: error", "data: {\"message\": \"boom\"}", ""], [Event("error", '{"message": "boom"}')]),
    (['error: {"code": 500, "message": "boom"}', ""], [Event("error", '{"code": 500, "message": "boom"}')]),
    (["id: 7", "retry: 100", "data: x"], [Event("message", "x", whole=False)]),  # the stream ended inside it
    (["", "", ""], []),
])
def test_events(lines, events):
    assert list(read_events(lines)) == events


def test_a_stream_is_put_together_and_each_piece_is_seen_as_it_comes():
    seen = []
    data = sse(delta(None, role="assistant"), delta(reasoning_content="plan "), delta(reasoning="more"),
               delta("Hel"), delta([{"type": "text", "text": "lo"}, {"type": "image_url"}, "!"]), delta(None, "stop"),
               {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}}, "data: [DONE]")
    streamed = read_stream([data], lambda kind, text: seen.append((kind, text)))
    assert seen == [("reasoning", "plan "), ("reasoning", "more"), ("text", "Hel"), ("text", "lo!")]
    assert "".join(streamed.text) == "Hello!" and "".join(streamed.reasoning) == "plan more"
    assert streamed.finish_reason == "stop" and streamed.usage == {"prompt_tokens": 9, "completion_tokens": 3}


@pytest.mark.parametrize("ending", [sse("data: [DONE]"), sse(delta("", "stop"))])
def test_done_or_a_finish_reason_ends_a_reply(ending):
    assert "".join(read_stream([sse(delta("Hi")) + ending]).text) == "Hi"


@pytest.mark.parametrize("data", [sse(delta("Hi")), sse(delta("Hi")) + b"data: {\"choi", b""])
def test_a_stream_without_done_or_finish_reason_was_cut(data):
    with pytest.raises(StreamCut):
        read_stream([data])


@pytest.mark.parametrize("data, words", [
    (sse(delta("Hi"), {"error": {"message": "model crashed", "code": 500}}), "model crashed"),
    (b'error: {"code": 500, "message": "slot unavailable"}\n\n', "slot unavailable"),
    (b"event: error\ndata: {\"message\": \"overloaded\"}\n\n", "overloaded"),
    (b"data: <html>\n\n", "not JSON"),
])
def test_an_error_in_the_stream_is_reported(data, words):
    with pytest.raises(StreamError, match=words):
        read_stream([data])


# --- the client against a streaming server on a real socket ---


def make_client(endpoint, **options) -> tuple[Client, list[str]]:
    lines = []
    options = {"stream": True, "sleep": lambda seconds: None, "log": lines.append} | options
    return Client(endpoint.url, None, "m", **options), lines


def test_a_split_stream_with_keep_alives_arrives_whole():
    events = [": keep-alive", *stream_events(TRICKY, pieces=7, usage={"prompt_tokens": 4, "completion_tokens": 9})]
    events.insert(3, ": keep-alive")
    with FakeEndpoint([{"events": events, "split": 3}]) as endpoint:
        client, lines = make_client(endpoint)
        seen = []
        reply = client.chat(MESSAGES, lambda kind, text: kind == "waiting" or seen.append(text))
    assert reply.text == TRICKY and "".join(seen) == TRICKY and len(seen) == 7
    assert reply.usage == {"prompt_tokens": 4, "completion_tokens": 9} and reply.streamed and lines == []
    assert endpoint.received[0].body == {"model": "m", "messages": MESSAGES, "stream": True,
                                         "stream_options": {"include_usage": True}}


def test_done_without_a_finish_reason_is_a_whole_reply():
    with FakeEndpoint([{"events": stream_events("", finish_reason=None)}]) as endpoint:  # llama.cpp stopping at once
        reply = make_client(endpoint)[0].chat(MESSAGES)
    assert (reply.text, reply.finish_reason, reply.usage) == ("", None, {})


@pytest.mark.parametrize("cut", [{"events": stream_events("Half a rep", finish_reason=None, done=False)},
                                 {"events": stream_events("Half a rep", finish_reason=None, done=False),
                                  "hang_up": True}])
def test_a_cut_stream_is_not_kept_and_is_asked_again(cut):
    with FakeEndpoint([cut, {"events": stream_events("Whole reply.")}]) as endpoint:
        client, lines = make_client(endpoint)
        seen, kinds = [], []
        reply = client.chat(MESSAGES, lambda kind, text: kind == "waiting" or (seen.append(text), kinds.append(kind)))
    assert reply.text == "Whole reply." and len(endpoint.received) == 2
    assert kinds.count("restart") == 1 and "".join(seen[:kinds.index("restart")]) == "Half a rep"
    assert "".join(seen) == "Half a repWhole reply."  # what was shown first is said to be discarded
    assert len(lines) == 1 and "the reply shown so far is discarded; retrying in" in lines[0]


def test_a_cut_stream_is_said_and_asked_again():
    """The stream ends mid-reply without a finish_reason: the user is told, and the same request goes again.
    (An end-to-end test once: in a process of its own the client would really wait out its backoff.)"""
    cut = {"events": stream_events("The answer is fo", finish_reason=None, done=False), "hang_up": True}
    with FakeEndpoint([cut, {"events": stream_events("The answer is 42.")}]) as endpoint:
        client, lines = make_client(endpoint)
        assert client.chat(MESSAGES).text == "The answer is 42."
    assert len(lines) == 1 and "the reply shown so far is discarded; retrying in" in lines[0]
    assert [request.body["messages"] for request in endpoint.received] == [MESSAGES, MESSAGES]  # nothing of it kept


def test_a_cut_stream_fails_in_one_line_once_retries_are_spent():
    cut = {"events": stream_events("Half", finish_reason=None, done=False)}
    with FakeEndpoint([cut, cut]) as endpoint, pytest.raises(ChatError) as caught:
        make_client(endpoint, max_retries=1)[0].chat(MESSAGES)
    assert str(caught.value) == f"The connection to {endpoint.url}/chat/completions broke before the whole response arrived. Try again."


def test_an_error_event_in_a_200_stream_is_one_line():
    events = [*stream_events("Part", finish_reason=None, done=False), {"error": {"message": "out of\nmemory"}}]
    with FakeEndpoint([{"events": events}]) as endpoint, pytest.raises(ChatError) as caught:
        make_client(endpoint)[0].chat(MESSAGES)
    assert str(caught.value) == f"200 from {endpoint.url}/chat/completions carrying an error in the stream: out of memory"
    assert len(endpoint.received) == 1  # the server answered: asking again would cost a whole reply more


def test_a_session_of_streams_keeps_one_connection():
    with FakeEndpoint([{"events": stream_events(word)} for word in ("One.", "Two.", "Three.")]) as endpoint:
        client, _ = make_client(endpoint)
        assert [client.chat(MESSAGES).text for _ in range(3)] == ["One.", "Two.", "Three."]
    assert endpoint.n_connections == 1


# A server holding a whole reply's stream open costs the grace period; nothing else would end the wait before
# the read timeout, so finishing well inside it shows the grace did.
GRACE, SILENCE = 0.05, 10.0


def test_a_stream_held_open_after_done_costs_the_grace_period_at_most():
    held = {"events": stream_events("Done."), "linger": True}  # open until the endpoint closes
    with FakeEndpoint([held, {"events": stream_events("Next.")}]) as endpoint:
        client, lines = make_client(endpoint, stream_grace=GRACE, read_timeout=SILENCE)
        started = time.monotonic()
        assert client.chat(MESSAGES).text == "Done."
        assert time.monotonic() - started < SILENCE / 2
        assert client.chat(MESSAGES).text == "Next." and lines == []  # on a new connection
    assert endpoint.n_connections == 2


def test_a_stream_held_open_after_its_finish_reason_without_done_costs_the_grace_period_at_most():
    held = {"events": stream_events("Finished.", done=False), "linger": True}
    with FakeEndpoint([held, {"events": stream_events("Next.")}]) as endpoint:
        client, lines = make_client(endpoint, stream_grace=GRACE, read_timeout=SILENCE)
        started = time.monotonic()
        assert client.chat(MESSAGES).text == "Finished."
        assert time.monotonic() - started < SILENCE / 2 and lines == []  # the reply was whole: nothing retried
        assert client.chat(MESSAGES).text == "Next."


def test_a_stream_whose_body_ends_at_once_waits_for_no_grace():
    """The grace is for a server that holds the stream open; one that ends it is not waited for at all."""
    with FakeEndpoint([{"events": stream_events("Done.")}]) as endpoint:
        client, _ = make_client(endpoint, stream_grace=SILENCE)
        started = time.monotonic()
        assert client.chat(MESSAGES).text == "Done."
    assert time.monotonic() - started < SILENCE / 2


def test_a_server_answering_plain_json_to_a_stream_request_still_works():
    with FakeEndpoint(["Not streamed."]) as endpoint:
        reply = make_client(endpoint)[0].chat(MESSAGES, lambda kind, text: kind == "waiting"
                                              or pytest.fail("nothing was streamed"))
    assert reply.text == "Not streamed." and not reply.streamed


def test_a_400_naming_stream_options_is_retried_without_it_and_remembered():
    refusal = {"status": 400, "body": {"error": {"message": "Unrecognized request argument: stream_options"}}}
    with FakeEndpoint([refusal, {"events": stream_events("One.")}, {"events": stream_events("Two.")}]) as endpoint:
        client, lines = make_client(endpoint)
        assert [client.chat(MESSAGES).text for _ in range(2)] == ["One.", "Two."]
    assert ["stream_options" in request.body for request in endpoint.received] == [True, False, False]
    assert all(request.body["stream"] for request in endpoint.received)
    assert lines == ["m rejects the 'stream_options' parameter; sending requests without it"]


def test_the_read_timeout_is_the_longest_silence_between_bytes():
    events = stream_events("slow but steady", pieces=8)  # 11 events: 0.3 s in all, never 0.2 s silent
    with FakeEndpoint([{"events": events, "pause": 0.03}, {"events": events, "hold": True, "hold_at": 3}]) as endpoint:
        client, lines = make_client(endpoint, read_timeout=0.2, max_retries=0)
        assert client.chat(MESSAGES).text == "slow but steady"
        with pytest.raises(ChatError, match="no data for 0.2 s"):  # three events, then silence
            client.chat(MESSAGES)


def test_the_deadline_holds_while_a_stream_drips():
    events = stream_events("x" * 40, pieces=40)  # 2 s of dripping, each byte well within the read timeout
    with FakeEndpoint([{"events": events, "pause": 0.05}]) as endpoint:
        client, _ = make_client(endpoint, deadline=0.2, max_retries=0)
        started = time.monotonic()
        with pytest.raises(ChatError, match="no complete response within 0.2 s"):
            client.chat(MESSAGES)
    assert time.monotonic() - started < 1  # the deadline, not the end of the drip


def test_without_stream_nothing_about_streams_is_sent():
    with FakeEndpoint([{"body": completion("Plain.")}]) as endpoint:
        reply = Client(endpoint.url, None, "m").chat(MESSAGES)
    assert reply.text == "Plain." and endpoint.received[0].body == {"model": "m", "messages": MESSAGES}


@pytest.mark.parametrize("argv, environ, stream", [
    ([], {}, True), (["--no-stream"], {}, False), ([], {"PLAINAGENT_STREAM": "off"}, False),
    ([], {"PLAINAGENT_STREAM": "on"}, True), (["--no-stream"], {"PLAINAGENT_STREAM": "on"}, False),
])
def test_streaming_is_on_unless_turned_off(tmp_path, argv, environ, stream):
    config = load_config(parse_args(["-m", "m", "--base-url", "http://localhost:1/v1", *argv]), environ, tmp_path,
                         tmp_path)
    assert config.stream is stream


def test_a_stream_setting_that_is_neither_on_nor_off_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="^PLAINAGENT_STREAM='maybe': use on or off.$"):
        load_config(parse_args(["-m", "m"]), {"PLAINAGENT_STREAM": "maybe"}, tmp_path, tmp_path)
