"""End to end on the wire: `python agent.py` against a local server that compresses, chunks and sends shapes no
test of ours produced (after the first session, main() in this process, whose client reads the same socket:
in_process.py); the files must end with exactly the bytes intended. (A dropped connection is retried
after a backoff the client waits out: that test is test_client.py's, where the test holds the client's sleep.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint, completion
from in_process import run_agent

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-e2e-wire-0123456789"


# Variables that would send the agent's requests elsewhere than the local endpoint, or change how TLS is checked.
ROUTING = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"}


def agent(install, project, endpoint, *argv, timeout=60):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "PLAINAGENT_")) and k.upper() not in ROUTING}
    env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "fake-model", "OPENAI_API_KEY": KEY,
                "PYTHONUNBUFFERED": "1"})
    return subprocess.run([sys.executable, str(install / "agent.py"), *argv], cwd=project, env=env,
                          capture_output=True, text=True, timeout=timeout)


def agent_here(home, project, endpoint, *argv):
    """agent(), with main() run in this process (in_process.py): the same client on the same socket."""
    env = {"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "fake-model", "OPENAI_API_KEY": KEY}
    return run_agent(home, project, list(argv), env)


def test_a_session_over_gzip_and_chunked_replies_edits_exactly(install, project):
    """Every reply compressed or chunked (small chunks cut UTF-8 characters), as CDN-fronted APIs send them."""
    def reply(text, encoding, chunked):
        return {"body": completion(text), "encoding": encoding, "chunked": chunked}

    script = [
        reply("Let me look – first the files.\ntool: list_files()", "gzip", 16),
        reply('tool: read_file({"path": "greet.py"})', "deflate", None),
        reply('tool: edit_file({"path": "greet.py", "old_str": "\\"Helo, \\"", "new_str": "\\"Grüße, \\""})',
              None, 3),
        reply("Fixed the greeting in greet.py ✓", "gzip", 5),
    ]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "fix the greeting", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Fixed the greeting in greet.py ✓\n"
    assert (project / "greet.py").read_bytes() == 'def greet(name):\r\n    return "Grüße, " + name\r\n'.encode()
    assert len(endpoint.received) == 4 and endpoint.n_connections == 1
    messages = endpoint.received[-1].body["messages"]
    assert messages[2]["content"] == "Let me look – first the files.\ntool: list_files()"  # decoded, not bytes
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("item, line", [
    ({"status": 401, "encoding": "gzip", "body": {"error": {"message": "Incorrect API key", "code": "invalid_api_key"}}},
     "401 from {url}: the API key was refused; check OPENAI_API_KEY. Incorrect API key (invalid_api_key)"),
    ({"body": {"choices": [{"message": "hello"}]}, "chunked": 4},
     '200 from {url} but choices[0].message is a string, not an object: {{"choices": [{{"message": "hello"}}]}}'),
    ({"body": b"\x00\x01\x02\x1b[2J\xff\xfe" * 20, "headers": {"Content-Type": "application/json"}},
     "200 from {url} but the body is not JSON: (180 bytes that are not text)"),
    ({"headers": {"Content-Encoding": "gzip"}, "body": "<html>not gzip</html>"},
     "200 from {url} with a body that is not valid gzip data (its Content-Encoding); "
     "the server or a proxy in between sent it broken."),
], ids=["gzip-401", "message-a-string", "binary", "not-gzip"])
def test_what_cannot_be_read_is_one_line_and_exit_1(agent_home, project, item, line):
    with FakeEndpoint([item]) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "hi")
    url = endpoint.url + "/chat/completions"
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines()[2:] == [f"plainagent: {line.format(url=url)}"]


def test_editing_a_regex_holding_think_tags_in_a_crlf_file_over_gzip_writes_the_intended_bytes(agent_home, project):
    """The issue's own scenario: reasoning first, then an edit whose arguments hold <think> and </think>."""
    (project / "strip.py").write_bytes(b'import re\r\nTHINK = re.compile(r"<thinking>.*?</thinking>")\r\n')
    old = 'r"<thinking>.*?</thinking>"'
    new = 'r"<think>.*?</think>", re.DOTALL'
    call = json.dumps({"path": "strip.py", "old_str": old, "new_str": new})
    script = [
        {"body": completion(f"<think>The tag is <think>, not <thinking>.</think>\ntool: edit_file({call})"),
         "encoding": "gzip", "chunked": 7},
        {"body": completion("The pattern now matches <think> blocks."), "encoding": "gzip"},
    ]
    with FakeEndpoint(script) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "match <think> blocks", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The pattern now matches <think> blocks.\n"
    assert (project / "strip.py").read_bytes() == (
        b'import re\r\nTHINK = re.compile(r"<think>.*?</think>", re.DOTALL)\r\n')
