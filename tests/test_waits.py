"""The waits (issue 26): how long plainagent waits on the endpoint is settable (flag > environment > .env, a
project's .env only shorter), a streamed reply's first byte has a shorter wait than a whole reply, and the
spinner's line says what it waits for. Servers that accept a request and say nothing are real local sockets;
the waits are set to a fraction of a second."""

import socket
import sys
import threading
import time
from types import SimpleNamespace

import pytest
from fake_endpoint import FakeEndpoint, stream_events
from test_agent import args
from test_e2e import agent_here
from test_e2e_terminal import Screen
from test_stream import MESSAGES, make_client

from harness.cli.config import Config, ConfigError, load_config
from harness.common.seam_types import ChatError

WAIT = 0.3  # seconds: the wait a test sets, a fraction of a second


# --- the client ---


def test_a_stream_whose_first_byte_never_comes_ends_after_the_first_bytes_wait():
    with FakeEndpoint([{"events": stream_events("late"), "hold": True}]) as endpoint:  # accepts, says nothing
        client, lines = make_client(endpoint, first_byte_timeout=WAIT, read_timeout=30, max_retries=2)
        started = time.monotonic()
        with pytest.raises(ChatError) as raised:
            client.chat(MESSAGES)
        assert time.monotonic() - started < 3  # the first byte's wait, not the read timeout's 30 s
    assert str(raised.value) == (f"Timed out talking to {endpoint.url}/chat/completions: no first byte of the reply "
                                 f"within {WAIT:g} s (a longer wait: --first-byte-timeout or "
                                 "PLAINAGENT_FIRST_BYTE_TIMEOUT). Is the server overloaded? Try again later.")
    assert len(endpoint.received) == 1 and lines == []  # a silent server is an answer: not asked again


def test_once_the_first_byte_came_a_stream_may_be_silent_for_the_read_timeout():
    later = threading.Event()  # a comment at once, then silence for twice the first byte's wait
    events = [": keep-alive", *stream_events("slow to write", pieces=2)]
    with FakeEndpoint([{"events": events, "hold": later, "hold_at": 1}]) as endpoint:
        client, _ = make_client(endpoint, first_byte_timeout=WAIT, read_timeout=30)
        threading.Timer(2 * WAIT, later.set).start()
        assert client.chat(MESSAGES).text == "slow to write"


def test_a_whole_reply_waits_the_read_timeout_and_says_which_setting():
    with FakeEndpoint([{"body": {}, "hold": True}]) as endpoint:
        client, _ = make_client(endpoint, stream=False, first_byte_timeout=30, read_timeout=WAIT)
        with pytest.raises(ChatError, match=r"no answer within 0.3 s \(a longer wait: --read-timeout or "
                                            "PLAINAGENT_READ_TIMEOUT\\)"):
            client.chat(MESSAGES)


def test_the_client_says_what_each_attempt_waits_for():
    seen = []
    with FakeEndpoint([{"events": stream_events("Hi.")}]) as endpoint:
        client, _ = make_client(endpoint, first_byte_timeout=45)
        client.chat(MESSAGES, lambda kind, text: seen.append((kind, text)))
    host = endpoint.url.split("/")[2]
    assert seen[0] == ("waiting", f"waiting for the first byte from {host} (up to 45 s)")
    assert [kind for kind, _ in seen[1:]] == ["text"] * len(seen[1:])


# --- the settings ---


def waits(config: Config) -> tuple[float, float, float]:
    return config.connect_timeout, config.first_byte_timeout, config.read_timeout


def load(tmp_path, own: str = "", environ=None, project: str | None = None, **flags) -> Config:
    install, workspace = tmp_path / "install", tmp_path / "project"
    install.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    (install / ".env").write_text("OPENAI_MODEL=m\nOPENAI_BASE_URL=http://localhost:8080/v1\n" + own)
    if project is not None:
        (workspace / ".env").write_text(project)
    return load_config(args(cwd=str(workspace), **flags), environ or {}, tmp_path, install, lambda text, q: "y")


def test_the_defaults_and_the_precedence_flag_environment_dotenv(tmp_path):
    assert waits(load(tmp_path)) == (10, 120, 300)
    own = "PLAINAGENT_CONNECT_TIMEOUT=5\nPLAINAGENT_FIRST_BYTE_TIMEOUT=600\nPLAINAGENT_READ_TIMEOUT=900\n"
    assert waits(load(tmp_path, own)) == (5, 600, 900)
    environ = {"PLAINAGENT_FIRST_BYTE_TIMEOUT": "30", "PLAINAGENT_READ_TIMEOUT": "0.5"}
    assert waits(load(tmp_path, own, environ)) == (5, 30, 0.5)
    assert waits(load(tmp_path, own, environ, first_byte_timeout=2.5)) == (5, 2.5, 0.5)
    assert load(tmp_path, own, environ).waits() == {"connect_timeout": 5, "first_byte_timeout": 30,
                                                    "read_timeout": 0.5, "deadline": 600}
    assert load(tmp_path, own).waits()["deadline"] == 1500  # a stream may take its waits whole


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf", "nan", "", "1e10", "86401"])
def test_a_wait_that_is_no_number_of_seconds_is_a_configuration_error(tmp_path, value):
    if value:
        with pytest.raises(ConfigError, match=f"PLAINAGENT_READ_TIMEOUT='{value}': give a number of seconds"):
            load(tmp_path, environ={"PLAINAGENT_READ_TIMEOUT": value})
    with pytest.raises(ConfigError, match="--first-byte-timeout"):
        load(tmp_path, first_byte_timeout=float(value) if value not in ("soon", "") else 0)
    assert load(tmp_path, environ={"PLAINAGENT_READ_TIMEOUT": "86400"}).waits()["read_timeout"] == 86400


def test_a_projects_dotenv_may_make_a_wait_shorter_never_longer(tmp_path):
    config = load(tmp_path, project="PLAINAGENT_FIRST_BYTE_TIMEOUT=5\nPLAINAGENT_READ_TIMEOUT=3600\n")
    assert waits(config) == (10, 5, 300)
    assert "PLAINAGENT_READ_TIMEOUT not used: it waits longer than you do (300 s)" in " ".join(config.notes)
    own = "PLAINAGENT_READ_TIMEOUT=7200\n"  # yours is longer still: its own is within it
    assert waits(load(tmp_path, own, project="PLAINAGENT_READ_TIMEOUT=3600\n"))[2] == 3600


def test_a_projects_own_endpoint_brings_its_waits(tmp_path):
    project = "OPENAI_BASE_URL=http://localhost:9999/v1\nOPENAI_MODEL=slow-local\nPLAINAGENT_FIRST_BYTE_TIMEOUT=900\n"
    assert waits(load(tmp_path, project=project)) == (10, 900, 300)


# --- end to end ---


def test_a_silent_server_fails_after_the_wait_set_in_the_environment(agent_home, project):
    with FakeEndpoint([{"events": stream_events("late"), "hold": True}]) as endpoint:
        started = time.monotonic()
        done = agent_here(agent_home, project, endpoint, "-p", "hi", "--first-byte-timeout", str(WAIT))
    assert done.returncode == 1 and time.monotonic() - started < 5
    assert done.stderr.splitlines()[-1] == (
        f"plainagent: Timed out talking to {endpoint.url}/chat/completions: no first byte of the reply within "
        f"{WAIT:g} s (a longer wait: --first-byte-timeout or PLAINAGENT_FIRST_BYTE_TIMEOUT). Is the server "
        "overloaded? Try again later.")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminals as Linux has them")
def test_the_spinner_says_what_it_waits_for_at_a_terminal(install, project):
    with FakeEndpoint([{"events": stream_events("late"), "hold": True}]) as endpoint:
        screen = Screen(install, project, endpoint, "-p", "hi",
                        env={"TERM": "xterm", "PLAINAGENT_FIRST_BYTE_TIMEOUT": "0.8"})
        host = endpoint.url.split("/")[2]
        screen.expect(f"0 s  waiting for the first byte from {host} (up to 0.8 s)")
        screen.expect("no first byte of the reply within 0.8 s")
        assert screen.process.wait(10) == 1


CLOSE_DELIMITED = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                   b'data: {"choices": [{"delta": {"content": "Hel"}}]}\n\n')


def test_a_stream_that_ends_when_the_server_closes_keeps_the_wait_between_its_pieces():
    """No length and not chunked (the body ends when the server closes): http.client lets the connection's socket
    go, and the wait between pieces was not set on it; a user waited the first byte's 15 s, told "no data for 3 s"."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    done = threading.Event()

    def answer():
        connection, _ = server.accept()
        connection.recv(65536)
        connection.sendall(CLOSE_DELIMITED)
        done.wait(10)  # then silence, until the test is over
        connection.close()

    threading.Thread(target=answer, daemon=True).start()
    endpoint = SimpleNamespace(url=f"http://127.0.0.1:{server.getsockname()[1]}/v1")
    client, _ = make_client(endpoint, first_byte_timeout=30, read_timeout=WAIT, max_retries=1)
    started = time.monotonic()
    try:
        with pytest.raises(ChatError, match=r"no data for 0.3 s while reading"):
            client.chat(MESSAGES)
        assert time.monotonic() - started < 5  # the wait between pieces, not the first byte's 30 s
    finally:
        done.set()
        server.close()
