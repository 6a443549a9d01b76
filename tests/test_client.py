"""The HTTP client, tested at the wire with `responses`: what is sent, and what each failure becomes."""

import json
import time
from email.utils import formatdate

import pytest
import requests
import responses

from client import ChatError, Client, chat_url

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
])
def test_base_url_rule(base, expected):
    assert chat_url(base) == expected


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
])
@responses.activate
def test_final_errors_are_one_line_and_not_retried(status, body, expected):
    responses.post(URL, status=status, json=body)
    client, sleeps = make_client()
    with pytest.raises(ChatError) as error:
        client.chat(MESSAGES)
    assert str(error.value) == expected
    assert len(responses.calls) == 1 and sleeps == []


@responses.activate
def test_404_without_version_path_hints_at_v1():
    responses.post("http://localhost:11434/chat/completions", status=404, body="404 page not found")
    client, _ = make_client(base_url="http://localhost:11434")
    with pytest.raises(ChatError, match=r"did you mean http://localhost:11434/v1\?") as error:
        client.chat(MESSAGES)
    assert "Body: 404 page not found" in str(error.value)


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
def test_connection_errors_are_retried_then_reported():
    responses.post(URL, body=requests.ConnectionError("refused"))
    responses.post(URL, json=completion("back"))
    client, sleeps = make_client()
    assert client.chat(MESSAGES).text == "back"
    assert len(sleeps) == 1

    responses.reset()
    responses.post(URL, body=requests.ConnectionError("refused"))
    client, sleeps = make_client(max_retries=1)
    with pytest.raises(ChatError, match=f"Could not connect to {URL}: is the server running"):
        client.chat(MESSAGES)


@responses.activate
def test_timeouts_are_reported():
    responses.post(URL, body=requests.ReadTimeout("read timed out"))
    client, _ = make_client(max_retries=0)
    with pytest.raises(ChatError, match=f"Timed out talking to {URL}"):
        client.chat(MESSAGES)


def test_a_server_that_never_answers_hits_the_deadline():
    """A real socket that accepts and then says nothing: the read timeout ends the wait, no hang."""
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    client, _ = make_client(base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1", read_timeout=0.3,
                            max_retries=0)
    started = time.monotonic()
    with pytest.raises(ChatError, match="Timed out"):
        client.chat(MESSAGES)
    assert time.monotonic() - started < 5
    listener.close()


def serve_once(respond) -> str:
    """A raw socket server: it accepts one connection, reads the request, and hands the socket to `respond`."""
    import socket
    import threading
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve():
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

    client, _ = make_client(base_url=serve_once(drip), read_timeout=1, deadline=0.5, max_retries=0)
    started = time.monotonic()
    with pytest.raises(ChatError, match="no complete response within 0.5 s"):
        client.chat(MESSAGES)
    assert time.monotonic() - started < 3


@pytest.mark.parametrize("then_wait, message", [
    (2.0, "Timed out talking to"),  # headers, then silence past the read timeout
    (0.0, "The connection to .* broke before the whole response arrived"),  # headers, then a hang-up
])
def test_failures_while_reading_the_body_are_one_line(then_wait, message):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"choices\": ["

    def start_then_stop(connection):
        connection.sendall(head)
        time.sleep(then_wait)

    client, _ = make_client(base_url=serve_once(start_then_stop), read_timeout=0.3, max_retries=0)
    with pytest.raises(ChatError, match=message):
        client.chat(MESSAGES)
