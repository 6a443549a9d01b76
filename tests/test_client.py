"""The HTTP client, tested at the wire with `responses`: what is sent, and what each failure becomes."""

import gzip
import json
import random
import socket
import threading
import time
import zlib
from email.utils import formatdate

import pytest
import requests
import responses
from fake_endpoint import FakeEndpoint, stream_events
from fake_endpoint import completion as fake_completion

from harness.common.seam_types import ChatError
from harness.model.bare import chat_url
from harness.model.client import Client, retry_after

BASE = "https://api.example.com/v1"
URL = BASE + "/chat/completions"
MESSAGES = [{"role": "user", "content": "hi"}]


def make_client(**options) -> tuple[Client, list[float]]:
    sleeps: list[float] = []
    options.setdefault("api_key", "sk-test")
    client = Client(options.pop("base_url", BASE), options.pop("api_key"), options.pop("model", "gpt-4o"),
                    sleep=sleeps.append, **options)
    return client, sleeps


def completion(content, finish_reason="stop"):
    return {"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3}}


@pytest.mark.parametrize("base, expected", [
    ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
    ("https://api.openai.com/v1/", "https://api.openai.com/v1/chat/completions"),
    ("https://openrouter.ai/api/v1/chat/completions", "https://openrouter.ai/api/v1/chat/completions"),
    ("http://localhost:11434/v1/chat/completions/", "http://localhost:11434/v1/chat/completions"),
    ("https://api.deepseek.com", "https://api.deepseek.com/chat/completions"),  # never adds /v1
    ("https://ark.example.com/api/v3", "https://ark.example.com/api/v3/chat/completions"),
    # Azure-style: the path before the query, which stays at the end
    ("https://r.openai.azure.com/openai/deployments/gpt4o?api-version=2024-10-21",
     "https://r.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21"),
    ("http://localhost:8080/v1/?a=1&b=2", "http://localhost:8080/v1/chat/completions?a=1&b=2"),
    ("http://localhost:8080/v1/chat/completions?a=1", "http://localhost:8080/v1/chat/completions?a=1"),
    # a fragment never reaches a server: it goes, and the path is not lost behind it
    ("http://localhost:8080/v1#models", "http://localhost:8080/v1/chat/completions"),
    ("http://localhost:8080/v1?a=1#x", "http://localhost:8080/v1/chat/completions?a=1"),
])
def test_base_url_rule(base, expected):
    assert chat_url(base) == expected


@responses.activate
def test_a_base_url_with_a_query_posts_to_the_path_and_keeps_the_query():
    responses.post("https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21",
                   json=completion("hi"))
    client, _ = make_client(base_url="https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21")
    assert client.chat(MESSAGES).text == "hi"
    assert responses.calls[0].request.url == (
        "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21")


SECRETS = ("hunter2pass", "s3cr3t-query-key", "tok-77")


@pytest.mark.parametrize("item, start", [
    ({"status": 404, "body": {"error": {"message": "no such model"}}}, "404 from {url}: check the model name"),
    ({"status": 401, "body": {"error": {"message": "bad key"}}},
     "401 from {url}: the user and password in OPENAI_BASE_URL were refused (they are sent in place of OPENAI_API_KEY)"),
    ({"status": 503, "body": "<html>down</html>"}, "503 from {url}: Body: <html>down</html>"),
    ({"drop": True}, "The connection to {url} broke before the whole response arrived."),
    ({"body": "not json"}, "200 from {url} but the body is not JSON"),
], ids=["404", "401", "503", "drop", "not-json"])
def test_credentials_in_the_base_url_are_sent_but_never_printed(item, start):
    with FakeEndpoint([item] * 4) as endpoint:
        base = endpoint.url.replace("http://", "http://admin:hunter2pass@") + "?key=s3cr3t-query-key&api-version=1"
        lines: list[str] = []
        client, _ = make_client(base_url=base, api_key="", log=lines.append, max_retries=1)
        with pytest.raises(ChatError) as raised:
            client.chat(MESSAGES)
    shown = endpoint.url.replace("http://", "http://[REDACTED]@") + "/chat/completions?key=[REDACTED]&api-version=1"
    assert client.url == shown  # what every line names, the REPL's banner too
    assert str(raised.value).startswith(start.format(url=shown))
    assert not any(secret in text for secret in SECRETS for text in [str(raised.value), *lines])
    assert endpoint.received[0].path == "/v1/chat/completions?key=s3cr3t-query-key&api-version=1"
    assert endpoint.received[0].headers["Authorization"].startswith("Basic ")  # the URL's user and password


def test_a_url_that_cannot_be_requested_names_it_without_its_credentials():
    client, _ = make_client(base_url="http://admin:hunter2pass@127.0.0.1:99999/v1?token=tok-77", api_key="")
    with pytest.raises(ChatError) as raised:
        client.chat(MESSAGES)
    assert str(raised.value).startswith("Request to http://[REDACTED]@127.0.0.1:99999/v1/chat/completions?token="
                                        "[REDACTED] failed: ")
    assert not any(secret in str(raised.value) for secret in SECRETS)


@responses.activate
def test_switching_models_recomputes_the_parameters_each_one_is_sent():
    """/model sets client.model: `stop` goes to the models that take it, whichever came before."""
    responses.post(URL, json=completion("ok"))
    client, _ = make_client(model="gpt-4o", stop=["\ntool_result("])
    for model in ("gpt-4o", "o3-mini", "gpt-4o", "gpt-5", "gpt-4.1"):
        client.model = model
        client.chat(MESSAGES)
    bodies = [json.loads(call.request.body) for call in responses.calls]
    assert [(body["model"], "stop" in body) for body in bodies] == [
        ("gpt-4o", True), ("o3-mini", False), ("gpt-4o", True), ("gpt-5", False), ("gpt-4.1", True)]


@responses.activate
def test_a_parameter_one_model_rejected_is_still_sent_to_the_others():
    refusal = {"error": {"message": "Unsupported parameter: 'stop' is not supported with this model."}}
    responses.post(URL, status=400, json=refusal, match=[responses.matchers.json_params_matcher(
        {"model": "picky", "messages": MESSAGES, "stop": ["x"]})])
    responses.post(URL, json=completion("ok"))
    lines: list[str] = []
    client, _ = make_client(model="picky", stop=["x"], log=lines.append)
    for model in ("picky", "other", "picky", "other"):
        client.model = model
        assert client.chat(MESSAGES).text == "ok"
    bodies = [json.loads(call.request.body) for call in responses.calls]
    assert [(body["model"], "stop" in body) for body in bodies] == [
        ("picky", True), ("picky", False), ("other", True), ("picky", False), ("other", True)]
    assert lines == ["picky rejects the 'stop' parameter; sending requests without it"]


@responses.activate
def test_sends_model_messages_stop_and_key():
    responses.post(URL, json=completion("hello"))
    client, _ = make_client(stop=["\ntool_result("])
    reply = client.chat(MESSAGES)
    assert reply.text == "hello" and reply.finish_reason == "stop"
    assert reply.usage == {"prompt_tokens": 7, "completion_tokens": 3}
    sent = responses.calls[0].request
    assert sent.url == URL
    assert sent.headers["Authorization"] == "Bearer sk-test"
    assert sent.headers["Content-Type"] == "application/json"
    assert json.loads(sent.body) == {"model": "gpt-4o", "messages": MESSAGES, "stop": ["\ntool_result("]}


@responses.activate
def test_no_key_means_no_authorization_header():
    responses.post("http://localhost:11434/v1/chat/completions", json=completion("hi"))
    client, _ = make_client(base_url="http://localhost:11434/v1", api_key="")
    client.chat(MESSAGES)
    assert "Authorization" not in responses.calls[0].request.headers


@pytest.mark.parametrize("model", ["o1", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "openai/o3"])
@responses.activate
def test_stop_is_not_sent_to_models_that_reject_it(model):
    responses.post(URL, json=completion("hi"))
    client, _ = make_client(model=model, stop=["\ntool_result("])
    client.chat(MESSAGES)
    assert "stop" not in json.loads(responses.calls[0].request.body)


@responses.activate
def test_400_naming_stop_retries_once_without_it_and_remembers():
    responses.post(URL, status=400, json={"error": {"message": "Unsupported parameter: 'stop' is not supported"}})
    responses.post(URL, json=completion("first"))
    responses.post(URL, json=completion("second"))
    client, _ = make_client(stop=["\ntool_result("])
    assert client.chat(MESSAGES).text == "first"
    assert client.chat(MESSAGES).text == "second"
    bodies = [json.loads(call.request.body) for call in responses.calls]
    assert ["stop" in body for body in bodies] == [True, False, False]


@pytest.mark.parametrize("content, text", [
    (None, ""),
    ([{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}, {"type": "text", "text": "b"}], "ab"),
    ("plain", "plain"),
])
@responses.activate
def test_content_shapes(content, text):
    responses.post(URL, json=completion(content))
    client, _ = make_client()
    assert client.chat(MESSAGES).text == text


@responses.activate
def test_reasoning_fields_are_not_part_of_the_text():
    body = completion("answer")
    body["choices"][0]["message"]["reasoning_content"] = "tool: run_command({\"command\": \"rm -rf /\"})"
    responses.post(URL, json=body)
    client, _ = make_client()
    assert client.chat(MESSAGES).text == "answer"


@pytest.mark.parametrize("status, body, expected", [
    (401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}},
     f"401 from {URL}: the API key was refused; check OPENAI_API_KEY. Incorrect API key provided (invalid_api_key)"),
    (403, {"error": {"message": "forbidden"}}, f"403 from {URL}: the API key was refused; check OPENAI_API_KEY. forbidden"),
    (400, {"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}},
     f"400 from {URL}: This model's maximum context length is 8192 tokens (context_length_exceeded)"),
    (422, {"detail": "Field required: messages"}, f"422 from {URL}: Field required: messages"),
    (404, {"error": {"message": "The model `gpt-9` does not exist"}},
     f"404 from {URL}: check the model name 'gpt-4o' (OPENAI_MODEL) and the base URL (OPENAI_BASE_URL). "
     "The model `gpt-9` does not exist"),
    (429, {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}},
     f"429 from {URL}: quota or credit exhausted; check your plan and billing. You exceeded your current quota (insufficient_quota)"),
    (400, {"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}},
     f"400 from {URL}: check the model name 'gpt-4o' (OPENAI_MODEL). The model `gpt-9` does not exist (model_not_found)"),
])
@responses.activate
def test_final_errors_are_one_line_and_not_retried(status, body, expected):
    responses.post(URL, status=status, json=body)
    client, sleeps = make_client()
    with pytest.raises(ChatError) as error:
        client.chat(MESSAGES)
    assert str(error.value) == expected
    assert len(responses.calls) == 1 and sleeps == []


@pytest.mark.parametrize("key", ["sk-abc…", "sk-\u00a0abc", "sk-abc\n", "sk-ключ"])
def test_a_key_that_cannot_go_in_a_header_is_named_at_once(key):
    with pytest.raises(ValueError, match="^OPENAI_API_KEY contains a character that cannot be sent") as error:
        Client(BASE, key, "gpt-4o")
    assert key.strip() not in str(error.value)


@responses.activate
@pytest.mark.parametrize("base, suggested", [("http://localhost:11434", "http://localhost:11434/v1"),
                                              ("http://localhost:11434/?x=1", "http://localhost:11434/v1?x=1")])
def test_404_without_version_path_hints_at_v1(base, suggested):
    responses.post(chat_url(base), status=404, body="404 page not found")
    client, _ = make_client(base_url=base, model="m")
    with pytest.raises(ChatError) as error:
        client.chat(MESSAGES)
    assert str(error.value) == (f"404 from {chat_url(base)}: check the model name 'm' (OPENAI_MODEL) and the base URL "
                                f"(OPENAI_BASE_URL); the base URL has no version path: did you mean {suggested}? "
                                "Body: 404 page not found")


@responses.activate
def test_html_from_a_proxy_shows_status_and_the_start_of_the_body():
    page = "<html><head><title>502 Bad Gateway</title></head><body>" + "x" * 500 + "</body></html>"
    responses.post(URL, status=502, body=page, content_type="text/html")
    client, sleeps = make_client(max_retries=1)
    with pytest.raises(ChatError) as error:
        client.chat(MESSAGES)
    message = str(error.value)
    assert message.startswith(f"502 from {URL}: Body: <html><head><title>502 Bad Gateway</title>")
    assert len(message) < 300 and "\n" not in message
    assert len(sleeps) == 1  # 502 is retried, then reported


@pytest.mark.parametrize("body, fragment", [
    ({"error": {"message": "upstream model overloaded"}}, "carrying an error: upstream model overloaded"),
    ({"error": "model 'llama9' not found"}, "carrying an error: model 'llama9' not found"),
    ({"id": "x", "choices": []}, "with no choices in the reply"),
    ({"id": "x"}, "with no choices in the reply"),
    ([1, 2], "not a JSON object"),
])
@responses.activate
def test_200_that_is_not_a_completion(body, fragment):
    responses.post(URL, json=body)
    client, _ = make_client()
    with pytest.raises(ChatError, match=fragment):
        client.chat(MESSAGES)


@responses.activate
def test_200_with_non_json_body():
    responses.post(URL, body="<html>login required</html>", content_type="text/html")
    client, _ = make_client()
    with pytest.raises(ChatError, match="200 from .* but the body is not JSON: <html>login required</html>"):
        client.chat(MESSAGES)


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
@responses.activate
def test_retryable_statuses_are_retried_with_backoff(status):
    responses.post(URL, status=status, json={"error": {"message": "busy"}})
    responses.post(URL, status=status, json={"error": {"message": "busy"}})
    responses.post(URL, json=completion("done"))
    client, sleeps = make_client()
    assert client.chat(MESSAGES).text == "done"
    assert len(responses.calls) == 3
    assert 0.375 <= sleeps[0] <= 0.5 and 0.75 <= sleeps[1] <= 1.0  # exponential, with up to 25% jitter


@pytest.mark.parametrize("headers, wait", [
    ({"Retry-After": "3"}, 3.0),
    ({"Retry-After": "1.5"}, 1.5),
    ({"retry-after-ms": "250", "Retry-After": "9"}, 0.25),
])
@responses.activate
def test_retry_after_is_honoured(headers, wait):
    responses.post(URL, status=429, headers=headers, json={"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}})
    responses.post(URL, json=completion("ok"))
    client, sleeps = make_client()
    assert client.chat(MESSAGES).text == "ok"
    assert sleeps == [wait]


@responses.activate
def test_a_429_after_the_last_retry_says_what_to_do():
    for _ in range(4):
        responses.post(URL, status=429, json={"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}})
    client, sleeps = make_client()
    with pytest.raises(ChatError) as error:
        client.chat(MESSAGES)
    assert str(error.value) == (f"429 from {URL}: the server still limits the rate after 4 attempts; wait a minute "
                                "and try again, or check your plan's rate limits. Rate limit reached (rate_limit_exceeded)")
    assert len(sleeps) == 3


@responses.activate
def test_retry_after_as_http_date():
    responses.post(URL, status=503, headers={"Retry-After": formatdate(time.time() + 20, usegmt=True)})
    responses.post(URL, json=completion("ok"))
    client, sleeps = make_client()
    client.chat(MESSAGES)
    assert 17 <= sleeps[0] <= 20


@responses.activate
def test_retry_after_over_the_cap_fails_at_once():
    responses.post(URL, status=429, headers={"Retry-After": "3600"}, json={"error": {"message": "slow down"}})
    client, sleeps = make_client(retry_after_cap=60)
    with pytest.raises(ChatError, match="asks to wait 3600 s before retrying; try again later. slow down"):
        client.chat(MESSAGES)
    assert sleeps == [] and len(responses.calls) == 1


@responses.activate
def test_gives_up_after_max_retries_with_the_last_error():
    for _ in range(3):
        responses.post(URL, status=503, json={"error": {"message": "overloaded"}})
    client, sleeps = make_client(max_retries=2)
    with pytest.raises(ChatError, match=f"^503 from {URL}: overloaded$"):
        client.chat(MESSAGES)
    assert len(responses.calls) == 3 and len(sleeps) == 2


@responses.activate
def test_a_timeout_is_reported_at_once_not_waited_out_again():
    """Four attempts of a 300 s read timeout would hold the user for twenty minutes."""
    responses.post(URL, body=requests.ReadTimeout("read timed out"))
    responses.post(URL, json=completion("back"))
    client, sleeps = make_client()
    with pytest.raises(ChatError, match=f"Timed out talking to {URL}"):
        client.chat(MESSAGES)
    assert sleeps == [] and len(responses.calls) == 1


@responses.activate
def test_a_connect_timeout_names_the_setting_that_lengthens_it():
    responses.post(URL, body=requests.ConnectTimeout("timed out"))
    client, _ = make_client()
    with pytest.raises(ChatError) as raised:
        client.chat(MESSAGES)
    assert str(raised.value) == (f"Timed out connecting to {URL}: is the server running and OPENAI_BASE_URL right? "
                                 "(A longer wait: --connect-timeout or PLAINAGENT_CONNECT_TIMEOUT.)")


@pytest.mark.parametrize("status", [301, 302, 308])
@responses.activate
def test_a_redirect_is_not_followed_and_names_the_new_address(status):
    responses.post(URL, status=status, headers={"Location": "https://api.example.com/v2/chat/completions"})
    client, _ = make_client()
    with pytest.raises(ChatError, match=f"{status} from {URL}: the server redirects to "
                                        "https://api.example.com/v2/chat/completions; set OPENAI_BASE_URL"):
        client.chat(MESSAGES)
    assert len(responses.calls) == 1


@responses.activate
def test_a_401_without_a_key_says_one_is_needed():
    responses.post(URL, status=401, json={"error": {"message": "Unauthorized"}})
    with pytest.raises(ChatError, match="the server wants an API key and none is set; set OPENAI_API_KEY"):
        Client(BASE, "", "m", max_retries=0).chat(MESSAGES)


@responses.activate
def test_a_json_body_after_a_byte_order_mark_is_read():
    responses.post(URL, body=b"\xef\xbb\xbf" + json.dumps(completion("fine")).encode(), content_type="application/json")
    assert Client(BASE, "k", "m").chat(MESSAGES).text == "fine"


def test_a_server_that_never_answers_hits_the_deadline():
    """A real socket that accepts and then says nothing: the read timeout ends the wait, no hang."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    client, _ = make_client(base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1", read_timeout=0.1,
                            max_retries=0)
    started = time.monotonic()
    with pytest.raises(ChatError) as error:
        client.chat(MESSAGES)
    assert str(error.value) == (f"Timed out talking to {client.url}: no answer within 0.1 s (a longer wait: "
                                "--read-timeout or PLAINAGENT_READ_TIMEOUT). Is the server overloaded? Try again later.")
    assert time.monotonic() - started < 5
    listener.close()


def serve_once(*responders) -> str:
    """A raw socket server: for each responder in turn it accepts a connection, reads the request, and hands
    the socket to the responder; then it closes that connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve():
        for respond in responders:
            connection, _ = listener.accept()
            connection.recv(65536)
            try:
                respond(connection)
            except OSError:  # the client gave up and closed the connection
                pass
            connection.close()
        listener.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


def test_a_server_that_drips_bytes_forever_hits_the_overall_deadline():
    """Each byte arrives within the read timeout, so only the per-request deadline can end this."""
    def drip(connection):
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(100):
            connection.sendall(b" ")
            time.sleep(0.05)

    client, _ = make_client(base_url=serve_once(drip), read_timeout=1, deadline=0.2, max_retries=0)
    started = time.monotonic()
    with pytest.raises(ChatError, match="no complete response within 0.2 s"):
        client.chat(MESSAGES)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("then, message", [
    ("say nothing", "Timed out talking to"),  # headers, then silence past the read timeout
    ("hang up", "The connection to .* broke before the whole response arrived"),
])
def test_failures_while_reading_the_body_are_one_line(then, message):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"choices\": ["

    def start_then_stop(connection):
        connection.sendall(head)
        while then == "say nothing" and connection.recv(65536):  # until the client gives up and hangs up
            pass

    client, _ = make_client(base_url=serve_once(start_then_stop), read_timeout=0.1, max_retries=0)
    with pytest.raises(ChatError, match=message):
        client.chat(MESSAGES)


# --- the wire: compressed and chunked bodies, on a real socket ---

# Multi-byte UTF-8 characters of every length, so small chunks cut through some of them.
TEXT = "Grüße – “quoted” ✓ 😀 done\n" * 3
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


def chunk(data: bytes) -> bytes:
    """One piece of a Transfer-Encoding: chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


@pytest.mark.parametrize("encoding", [None, "gzip", "deflate"])
@pytest.mark.parametrize("chunked", [None, 1, 7])
def test_compressed_and_chunked_bodies_are_decoded(encoding, chunked):
    with FakeEndpoint([{"body": completion(TEXT), "encoding": encoding, "chunked": chunked}]) as endpoint:
        client, _ = make_client(base_url=endpoint.url)
        reply = client.chat(MESSAGES)
    assert reply.text == TEXT and reply.usage == {"prompt_tokens": 7, "completion_tokens": 3}
    assert endpoint.received[0].headers["Accept-Encoding"] == "gzip, deflate"  # what the client asks for


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compressed_error_bodies_are_read(encoding):
    error = {"error": {"message": "maximum context length is 8192 tokens – you sent 9000",
                       "code": "context_length_exceeded"}}
    with FakeEndpoint([{"status": 400, "body": error, "encoding": encoding, "chunked": 5}]) as endpoint:
        client, _ = make_client(base_url=endpoint.url)
        with pytest.raises(ChatError) as raised:
            client.chat(MESSAGES)
    assert str(raised.value) == (f"400 from {client.url}: maximum context length is 8192 tokens – you sent 9000 "
                                 "(context_length_exceeded)")


def test_a_compressed_html_page_shows_its_text():
    page = "<html><title>502 Bad Gateway</title></html>"
    with FakeEndpoint([{"status": 502, "body": page, "encoding": "gzip"}]) as endpoint:
        client, _ = make_client(base_url=endpoint.url, max_retries=0)
        with pytest.raises(ChatError) as raised:
            client.chat(MESSAGES)
    assert str(raised.value) == f"502 from {client.url}: Body: {page}"


def test_a_body_that_is_not_what_its_content_encoding_says_is_one_line():
    with FakeEndpoint([{"headers": {"Content-Encoding": "gzip"}, "body": b"\x1f\x8b this is not gzip"}]) as endpoint:
        client, sleeps = make_client(base_url=endpoint.url)
        with pytest.raises(ChatError) as raised:
            client.chat(MESSAGES)
    assert str(raised.value) == (f"200 from {client.url} with a body that is not valid gzip data (its "
                                 "Content-Encoding); the server or a proxy in between sent it broken.")
    assert sleeps == []


GZIPPED = gzip.compress(json.dumps(completion("hi")).encode())


@pytest.mark.parametrize("status, headers, data, expected", [
    # gzip sent without saying so: the bytes are not JSON, and they are not text either
    (200, {}, GZIPPED, f" but the body is not JSON: ({len(GZIPPED)} bytes that are not text)"),
    (502, {"Content-Type": "application/octet-stream"}, bytes(range(256)), ": Body: (256 bytes that are not text)"),
    # an encoding the client did not ask for, and cannot decode
    (200, {"Content-Encoding": "br"}, bytes(range(128, 256)), " but the body is not JSON: (128 bytes that are not text, Content-Encoding: br)"),
], ids=["undeclared-gzip", "bytes", "brotli"])
def test_a_binary_body_does_not_reach_the_screen(status, headers, data, expected):
    with FakeEndpoint([{"status": status, "headers": headers, "body": data}]) as endpoint:
        client, _ = make_client(base_url=endpoint.url, max_retries=0)
        with pytest.raises(ChatError) as raised:
            client.chat(MESSAGES)
    assert str(raised.value) == f"{status} from {client.url}{expected}"


def test_a_body_larger_than_any_completion_is_refused():
    """A few kilobytes of gzip can unpack to gigabytes; reading stops at the limit."""
    with FakeEndpoint([{"body": completion(" " * 3_000_000), "encoding": "gzip"}]) as endpoint:
        client, _ = make_client(base_url=endpoint.url, max_body=2**20)
        with pytest.raises(ChatError) as raised:
            client.chat(MESSAGES)
    assert str(raised.value) == (f"The response from {client.url} is larger than 1 MB; no chat completion is. "
                                 "Is OPENAI_BASE_URL right?")


def test_the_body_is_decoded_as_it_arrives():
    """The read path a streaming reader will use: gzip bytes come out decoded while the rest is on its way."""
    compressor = zlib.compressobj(wbits=31)  # the gzip format
    first = compressor.compress(b'{"choices": [') + compressor.flush(zlib.Z_SYNC_FLUSH)
    rest = compressor.compress(b'{"message": {"content": "hi"}}]}') + compressor.flush()
    first_arrived = threading.Event()

    def respond(connection):
        connection.sendall(HEAD + b"Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(first))
        first_arrived.wait(5)  # only once the client has decoded the first part
        connection.sendall(chunk(rest) + chunk(b""))

    client, _ = make_client(base_url=serve_once(respond))
    response = client.session.post(client.url, json={}, stream=True)
    pieces = client._read_body(response, time.monotonic() + 10, {})
    assert next(pieces) == b'{"choices": ['
    first_arrived.set()
    assert b"".join(pieces) == b'{"message": {"content": "hi"}}]}'


def test_a_server_dripping_a_gzip_header_forever_hits_the_deadline():
    """urllib3 waits inside read1 until the compressed bytes decode to something: a gzip header whose
    comment never ends decodes to nothing, so only the deadline timer can end this."""
    def drip(connection):
        connection.sendall(HEAD + b"Content-Encoding: gzip\r\nContent-Length: 100000\r\n\r\n")
        connection.sendall(b"\x1f\x8b\x08\x10\x00\x00\x00\x00\x00\xff")  # FCOMMENT: a comment follows
        for _ in range(100):
            connection.sendall(b"a")
            time.sleep(0.05)

    client, _ = make_client(base_url=serve_once(drip), read_timeout=1, deadline=0.2, max_retries=0)
    started = time.monotonic()
    with pytest.raises(ChatError, match="no complete response within 0.2 s"):
        client.chat(MESSAGES)
    assert time.monotonic() - started < 3


# --- a connection made and then lost is not a server that is not running ---


def close_unanswered(connection):
    pass  # serve_once closes it


def answer(connection):
    data = json.dumps(completion("back")).encode()
    connection.sendall(HEAD + b"Content-Length: %d\r\n\r\n%s" % (len(data), data))


@pytest.mark.parametrize("respond", [
    close_unanswered,
    lambda connection: connection.sendall(HEAD + b"Content-Length: 500\r\n\r\n{\"choices\": ["),  # half a body
    lambda connection: connection.sendall(HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + chunk(b'{"cho')),
    lambda connection: connection.sendall(b"HTTP/1.1 2"),  # half a status line
], ids=["closed-unanswered", "half-a-body", "half-the-chunks", "half-a-status-line"])
def test_a_connection_that_breaks_says_so(respond):
    client, _ = make_client(base_url=serve_once(respond), max_retries=0)
    with pytest.raises(ChatError) as raised:
        client.chat(MESSAGES)
    assert str(raised.value) == f"The connection to {client.url} broke before the whole response arrived. Try again."


def test_a_broken_connection_is_retried_and_logged_as_broken():
    lines: list[str] = []
    client, sleeps = make_client(base_url=serve_once(close_unanswered, answer), log=lines.append)
    assert client.chat(MESSAGES).text == "back"
    assert len(sleeps) == 1 and lines == [f"connection broke talking to {client.url}; retrying in {sleeps[0]:.1f} s"]


def test_a_dropped_connection_is_retried_and_named():
    """A server that takes the request and closes the connection unanswered, then answers over gzip. (An
    end-to-end test once: in a process of its own the client would really wait out its backoff.)"""
    lines: list[str] = []
    with FakeEndpoint([{"drop": True}, {"body": completion("All good."), "encoding": "gzip"}]) as endpoint:
        client, sleeps = make_client(base_url=endpoint.url, log=lines.append)
        assert client.chat(MESSAGES).text == "All good."
    assert len(sleeps) == 1 and lines == [f"connection broke talking to {client.url}; retrying in {sleeps[0]:.1f} s"]
    assert lines[0].startswith("connection broke talking to http://127.0.0.1:") and len(endpoint.received) == 2


def test_a_429_on_the_wire_is_waited_out_as_retry_after_says_on_the_same_connection():
    """What the end-to-end 429 test leaves to the client: the wait itself, taken from the header."""
    refusal = {"status": 429, "headers": {"Retry-After": "1"},
               "body": {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}}
    lines: list[str] = []
    with FakeEndpoint([refusal, "All good."]) as endpoint:
        client, sleeps = make_client(base_url=endpoint.url, log=lines.append)
        assert client.chat(MESSAGES).text == "All good."
    assert sleeps == [1.0] and lines == [f"429 from {client.url}; retrying in 1.0 s (attempt 2 of 4)"]
    assert len(endpoint.received) == 2 and endpoint.n_connections == 1


def test_nothing_listening_is_could_not_connect_at_once():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # the port is free: connecting is refused
    lines: list[str] = []
    client, sleeps = make_client(base_url=f"http://127.0.0.1:{port}/v1", log=lines.append)
    with pytest.raises(ChatError) as raised:
        client.chat(MESSAGES)
    assert str(raised.value) == f"Could not connect to {client.url}: is the server running and OPENAI_BASE_URL right?"
    assert sleeps == [] and lines == []  # a refusal is an answer: no retries, no lines before the one line


def test_https_to_a_plain_http_server_names_the_secure_connection():
    with FakeEndpoint([]) as endpoint:
        client, sleeps = make_client(base_url=endpoint.url.replace("http://", "https://"))
        with pytest.raises(ChatError) as raised:
            client.chat(MESSAGES)
    assert str(raised.value).startswith(f"Could not make a secure connection to {client.url}: ")
    assert str(raised.value).isprintable() and endpoint.received == [] and sleeps == []


@pytest.mark.parametrize("error", [requests.ConnectionError("refused"), requests.exceptions.SSLError("bad cert")])
@responses.activate
def test_a_refusal_is_not_retried(error):
    responses.post(URL, body=error)
    client, sleeps = make_client()
    with pytest.raises(ChatError):
        client.chat(MESSAGES)
    assert len(responses.calls) == 1 and sleeps == []


def test_a_host_that_is_not_found_is_named(monkeypatch):
    def no_such_host(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)  # no DNS in tests: fail the lookup here
    client, sleeps = make_client(base_url="https://api.example.invalid/v1")
    with pytest.raises(ChatError) as raised:
        client.chat(MESSAGES)
    assert str(raised.value) == ("Could not connect to https://api.example.invalid/v1/chat/completions: "
                                 "the host name api.example.invalid was not found; check OPENAI_BASE_URL.")
    assert sleeps == []


# --- every shape a server can send is data ---


def with_message(message) -> dict:
    return {"choices": [{"message": message, "finish_reason": "stop"}]}


def with_content(content) -> dict:
    return with_message({"role": "assistant", "content": content})


@pytest.mark.parametrize("body, text", [
    (with_content([{"type": "text", "text": None}, {"type": "text", "text": "hi"}]), "hi"),  # a null part
    (with_content(["a", None, {"type": "image_url", "image_url": {}}, {"type": "text"}, {"text": "b"}]), "ab"),
    (with_content([]), ""),
    (with_message(None), ""),
    ({"choices": [{"finish_reason": "content_filter"}]}, ""),  # no message at all
    (with_message({"content": None, "refusal": "I can't help with that."}), "I can't help with that."),
    (with_message({"content": "", "refusal": None}), ""),
])
@responses.activate
def test_odd_but_readable_shapes(body, text):
    responses.post(URL, json=body)
    client, _ = make_client()
    assert client.chat(MESSAGES).text == text


@pytest.mark.parametrize("body, problem", [
    (with_message("hi"), "choices[0].message is a string, not an object"),
    (with_message(["hi"]), "choices[0].message is a list, not an object"),
    (with_message(""), "choices[0].message is a string, not an object"),
    (with_message(True), "choices[0].message is true or false, not an object"),
    ({"choices": ["hi"]}, "choices[0] is a string, not an object"),
    ({"choices": [None]}, "choices[0] is null, not an object"),
    ({"choices": {"0": {"message": {"content": "hi"}}}}, "choices is an object, not a list"),
    ({"choices": "hi"}, "choices is a string, not a list"),
    (with_content(42), "choices[0].message.content is an integer, not text"),
    (with_content({"type": "text", "text": "hi"}), "choices[0].message.content is an object, not text"),
    (with_content([{"type": "text", "text": 7}]), "choices[0].message.content has a part that is an integer, not text"),
    (with_content([["nested"]]), "choices[0].message.content has a part that is a list, not text"),
    (with_content([{"type": "text", "text": {"value": "hi"}}]),
     "choices[0].message.content has a part that is an object, not text"),
])
@responses.activate
def test_shapes_that_cannot_be_read_are_one_line(body, problem):
    responses.post(URL, json=body)
    client, _ = make_client()
    with pytest.raises(ChatError) as raised:
        client.chat(MESSAGES)
    assert str(raised.value) == f"200 from {URL} but {problem}: {json.dumps(body)}"


@pytest.mark.parametrize("finish_reason, usage, read_reason, read_usage", [
    ("length", {"prompt_tokens": 7, "completion_tokens": 3}, "length", {"prompt_tokens": 7, "completion_tokens": 3}),
    (None, None, None, {}),
    (["length"], "lots", None, {}),
    ({"type": "stop"}, [1, 2], None, {}),
    (7, {"prompt_tokens": "12", "completion_tokens": 3, "cached": True, "details": {"cached_tokens": 1},
         "total_tokens": 1.5}, None, {"completion_tokens": 3}),
])
@responses.activate
def test_metadata_in_odd_shapes_reads_as_unknown(finish_reason, usage, read_reason, read_usage):
    """finish_reason and usage describe the reply; one we cannot read must not cost the reply itself."""
    responses.post(URL, json={"choices": [{"message": {"content": "hi"}, "finish_reason": finish_reason}],
                              "usage": usage})
    client, _ = make_client()
    reply = client.chat(MESSAGES)
    assert (reply.text, reply.finish_reason, reply.usage) == ("hi", read_reason, read_usage)


@pytest.mark.parametrize("status, body, expected", [
    (200, "[" * 100_000 + "]" * 100_000, " but the body is not JSON: " + "[" * 200),  # too deep for Python
    (500, "[" * 100_000 + "]" * 100_000, ": Body: " + "[" * 200),
    (200, "", " but the body is not JSON: (an empty body)"),
    (400, json.dumps({"error": {"message": "bad\u001b[2J request\nsecond line\u0007\u202e"}}),
     ": bad[2J request second line"),  # escape codes, a bell, a direction override: not for the terminal
    (400, json.dumps({"error": {"message": ["a", "list"], "code": {"x": 1}}}), ': {"message": ["a", "list"], "code": {"x": 1}}'),
    (400, json.dumps({"error": 42}), ": 42"),
], ids=["too-deep", "too-deep-error", "empty", "control-characters", "message-not-text", "error-a-number"])
@responses.activate
def test_server_words_reach_the_screen_as_one_printable_line(status, body, expected):
    responses.post(URL, status=status, body=body, content_type="application/json")
    client, _ = make_client(max_retries=0)
    with pytest.raises(ChatError) as raised:
        client.chat(MESSAGES)
    assert str(raised.value) == f"{status} from {URL}{expected}"


@pytest.mark.parametrize("headers", [{"Retry-After": "nan"}, {"Retry-After": "inf"}, {"retry-after-ms": "nan"},
                                     {"Retry-After": "soon"}])
@responses.activate
def test_a_retry_after_that_is_no_number_falls_back_to_backoff(headers):
    responses.post(URL, status=503, headers=headers)
    responses.post(URL, json=completion("ok"))
    client, sleeps = make_client()
    assert client.chat(MESSAGES).text == "ok"
    assert 0.375 <= sleeps[0] <= 0.5


def test_retry_after_reads_any_header_as_a_wait_or_nothing():
    generator = random.Random(7)
    pieces = ["1", "0", "9", ".", "-", "+", "e", "nan", "inf", "Infinity", " ", ",", "GMT", "Wed", "Oct", "2015",
              ":", "07", "\u00e9", "1e400", "0x10", "_"]
    for _ in range(3000):
        value = "".join(generator.choice(pieces) for _ in range(generator.randint(1, 8)))
        for name in ("Retry-After", "retry-after-ms"):
            response = requests.Response()
            response.headers[name] = value
            wait = retry_after(response)
            assert wait is None or 0 <= wait < float("inf"), (name, value, wait)


@responses.activate
def test_native_tool_calls_are_named_in_the_reply():
    message = {"role": "assistant", "content": None,
               "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    responses.post(URL, json=body)
    reply = Client(BASE, "sk-test", "m").chat([{"role": "user", "content": "hi"}])
    assert (reply.text, reply.finish_reason, reply.native_calls) == ("", "tool_calls", ["read_file"])


@responses.activate
def test_a_lone_surrogate_in_a_reply_becomes_a_replacement_character():
    responses.post(URL, body=b'{"choices": [{"message": {"content": "bad \\ud800 end"}, "finish_reason": "stop"}]}',
                   content_type="application/json")
    assert Client(BASE, "sk-test", "m").chat([{"role": "user", "content": "hi"}]).text == "bad \ufffd end"


@responses.activate
def test_a_refusal_carries_the_servers_json_so_a_stated_window_can_be_read():
    error = {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                       "type": "exceed_context_size_error", "n_prompt_tokens": 4384, "n_ctx": 4096}}
    responses.post(URL, status=400, json=error)
    with pytest.raises(ChatError) as failed:
        Client(BASE, "k", "m").chat(MESSAGES)
    assert (failed.value.status, failed.value.body) == (400, error)


def test_a_server_on_this_machine_is_reached_whatever_proxy_the_environment_names(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    with FakeEndpoint(["Direct."]) as endpoint:
        assert Client(endpoint.url, "", "m").chat(MESSAGES).text == "Direct."


# --- a stream that ends before its first event: llama-cpp-python's server asked past its window ---

PAST_THE_WINDOW = {"status": 400, "body": {"error": {
    "message": "This model's maximum context length is 1024 tokens. However, you requested 1543 tokens (1531 in the "
               "messages, 12 in the completion). Please reduce the length of the messages or completion.",
    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}}


@pytest.mark.parametrize("empty", [
    {"events": [], "headers": {"Content-Type": "text/event-stream; charset=utf-8"}},  # what the real server sends
    {"events": [], "hang_up": True},  # the connection closed instead
    {"events": [": ping", ": ping"]},  # comments only: no event yet
], ids=["ended", "hung-up", "comments-only"])
def test_a_stream_that_ends_before_its_first_event_is_asked_again_once_without_streaming(empty):
    with FakeEndpoint([empty, PAST_THE_WINDOW]) as endpoint:
        lines: list[str] = []
        client, sleeps = make_client(base_url=endpoint.url, api_key="", model="m", stream=True, log=lines.append)
        seen: list[tuple[str, str]] = []
        with pytest.raises(ChatError) as raised:
            client.chat(MESSAGES, lambda kind, text: seen.append((kind, text)))
    url = endpoint.url + "/chat/completions"
    assert lines == [f"the stream from {url} ended before its first event; asking once more without streaming, "
                     "for the server's own answer"]
    assert [request.body for request in endpoint.received] == [
        {"model": "m", "messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}},
        {"model": "m", "messages": MESSAGES}]
    assert raised.value.status == 400 and "maximum context length is 1024 tokens" in raised.value.detail
    assert str(raised.value).startswith(f"400 from {url}: This model's maximum context length is 1024 tokens.")
    assert [kind for kind, _ in seen] == ["waiting", "waiting"] and sleeps == []  # nothing shown, nothing slept
    assert seen[1][1].startswith("waiting for the reply from ")  # asked again, whole: the reply's wait


def test_the_whole_reply_asked_without_streaming_is_the_reply_and_the_next_request_streams_again():
    script = [{"events": []}, {"body": fake_completion("Whole.")}, {"events": stream_events("Streamed.")}]
    with FakeEndpoint(script) as endpoint:
        client, _ = make_client(base_url=endpoint.url, api_key="", stream=True)
        first, second = client.chat(MESSAGES), client.chat(MESSAGES)
    assert (first.text, first.streamed, second.text, second.streamed) == ("Whole.", False, "Streamed.", True)
    assert ["stream" in request.body for request in endpoint.received] == [True, False, True]


def test_the_request_without_streaming_is_retried_as_any_other_and_never_streams_again():
    with FakeEndpoint([{"events": []}, {"drop": True}, {"status": 503, "body": "busy"}, "Fine."]) as endpoint:
        lines: list[str] = []
        client, sleeps = make_client(base_url=endpoint.url, api_key="", stream=True, log=lines.append)
        assert client.chat(MESSAGES).text == "Fine."
    assert ["stream" in request.body for request in endpoint.received] == [True, False, False, False]
    assert len(lines) == 3 and len(sleeps) == 2 and lines[0].endswith("for the server's own answer")


def test_a_stream_cut_after_its_first_event_is_asked_again_streaming():
    cut = {"events": stream_events("Half", finish_reason=None, done=False)[:1], "hang_up": True}  # the role delta only
    with FakeEndpoint([cut, {"events": stream_events("Whole.")}]) as endpoint:
        lines: list[str] = []
        client, _ = make_client(base_url=endpoint.url, api_key="", stream=True, log=lines.append)
        assert client.chat(MESSAGES).text == "Whole."
    assert ["stream" in request.body for request in endpoint.received] == [True, True]
    assert len(lines) == 1 and lines[0].startswith("connection broke talking to ")


def test_a_server_that_answers_every_request_with_an_empty_stream_is_asked_without_streaming_only_once():
    with FakeEndpoint([{"events": []}] * 5) as endpoint:
        client, sleeps = make_client(base_url=endpoint.url, api_key="", stream=True, max_retries=1)
        with pytest.raises(ChatError) as raised:
            client.chat(MESSAGES)
    assert ["stream" in request.body for request in endpoint.received] == [True, False, False]
    assert str(raised.value) == (f"The connection to {endpoint.url}/chat/completions broke before the whole response "
                                 "arrived. Try again.") and len(sleeps) == 1


def test_a_base_url_with_a_user_and_password_works_and_shows_neither():
    """A proxy with basic auth, as the docs allow: every task crashed (urlsplit took "[REDACTED]" for an address)."""
    seen = []
    with FakeEndpoint([{"events": stream_events("Hi.")}]) as endpoint:
        host = endpoint.url.split("//")[1].split("/")[0]
        client = Client(endpoint.url.replace("//", "//me:password1@"), None, "m", stream=True, log=lambda line: None)
        assert client.chat(MESSAGES, lambda kind, text: seen.append((kind, text))).text == "Hi."
        assert endpoint.received[0].headers["Authorization"].startswith("Basic ")
    assert ("waiting", f"waiting for the first byte from {host} (up to 120 s)") in seen
    assert "password1" not in repr(seen)
