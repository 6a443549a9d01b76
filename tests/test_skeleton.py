"""The skeleton stands alone: agent.py's loop with bare parts — a client without streaming or retries, a toolbox
that asks nothing, a history that is a plain list — finishes a real task against a local endpoint on a real
socket. This is the path the README's tour walks; everything in harness/ is armour around it."""

import inspect
import re
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint
from frames import read_results

import agent
from agent import BareHistory, run_task
from harness.common.seam_types import ChatError
from harness.files.workspace import Workspace
from harness.model.bare import BareModel
from prompt import render_system_prompt
from tools import TOOLS, Toolbox


def test_the_loop_with_bare_parts_fixes_a_file_against_a_real_endpoint(tmp_path):
    (tmp_path / "app.py").write_bytes(b"print('helo')\r\n")  # CRLF: the edit keeps it
    script = ['Let me look.\ntool: read_file({"path": "app.py"})',
              'tool: edit_file({"path": "app.py", "old_str": "helo", "new_str": "hello"})',
              "Fixed the typo in app.py."]
    with FakeEndpoint(script) as endpoint:
        model = BareModel(endpoint.url, None, "some-model")
        tools = Toolbox(Workspace(tmp_path))
        history = BareHistory(render_system_prompt(TOOLS))
        answer = run_task("Fix the typo in app.py.", model, tools, history)
    assert answer == "Fixed the typo in app.py."
    assert (tmp_path / "app.py").read_bytes() == b"print('hello')\r\n"
    assert [message["role"] for message in history.messages] == [
        "system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert history.messages[2]["content"] == script[0]  # the model's own calls stay in the history
    assert read_results(history.messages[5]["content"])[0]["output"].startswith("Edited app.py")
    # What went over the wire is the history as it was at each step: plain JSON, every message each time.
    sent = [request.body for request in endpoint.received]
    assert [body["messages"] for body in sent] == [history.messages[:2], history.messages[:4], history.messages[:6]]
    assert all(body["model"] == "some-model" and "stream" not in body for body in sent)


def test_a_failing_call_is_a_result_the_model_reads_not_a_crash(tmp_path):
    with FakeEndpoint(['tool: read_file({"path": "missing.py"})', "There is no missing.py."]) as endpoint:
        history = BareHistory("SYSTEM")
        answer = run_task("Read missing.py.", BareModel(endpoint.url, None, "m"),
                          Toolbox(Workspace(tmp_path)), history)
    assert answer == "There is no missing.py."
    assert read_results(history.messages[3]["content"]) == [
        {"tool": "read_file", "ok": False, "output": "missing.py does not exist. Use list_files to see what exists."}]


def test_the_loop_is_short_and_talks_to_the_four_seams_only():
    """run_task and run_calls together stay under 60 lines, and use nothing of the session's armour."""
    source = inspect.getsource(agent.run_task) + inspect.getsource(agent.run_calls)
    assert len(source.splitlines()) <= 60
    for armour in ("session", "context", "transcript", "budget", "display", "permissions", "workspace", "log("):
        assert armour not in source


def test_the_card_stays_a_card_and_no_module_grows_past_what_a_reader_takes_in():
    """A smoke alarm, not a target (issue 25): agent.py well under 330 lines, every module under 440 (files hold one
    idea each; when one nears this, split it by meaning or leave it), and the armour never reaching into the card."""
    root = Path(__file__).resolve().parent.parent  # agent.__file__ is the tests' stand-in (conftest.py)
    assert len((root / "agent.py").read_text(encoding="utf-8").splitlines()) <= 330
    for module in [root / "agent.py", root / "tools.py", root / "prompt.py", *sorted((root / "harness").rglob("*.py"))]:
        source = module.read_text(encoding="utf-8")
        assert len(source.splitlines()) <= 440, module
        if "harness" in module.parts:
            assert not re.search(r"^\s*(from|import) (agent|tools)\b", source, re.MULTILINE), module


def test_layers_run_one_way():
    """The user's side (harness/cli) sits on top: nothing under the seams imports it, not even for a type; the
    small shared helpers (harness/common) import nothing of plainagent's but each other."""
    root = Path(__file__).resolve().parent.parent / "harness"
    for module in sorted(root.rglob("*.py")):
        source = module.read_text(encoding="utf-8")
        if module.parent.name in ("sandbox", "history", "parser", "model", "common"):
            assert not re.search(r"^\s*(from|import) harness\.cli\b", source, re.MULTILINE), module
        if module.parent.name == "common":
            assert not re.search(r"^\s*(from|import) (harness(?!\.common)|agent|tools|prompt)\b", source, re.M), module


def test_the_bare_client_posts_the_conversation_and_reads_the_reply_or_says_why_not():
    with FakeEndpoint(["Hello.", {"status": 401, "body": {"error": {"message": "bad key"}}}]) as endpoint:
        client = BareModel(endpoint.url, "sk-bare-0123456789", "m")
        reply = client.chat([{"role": "user", "content": "hi"}])
        with pytest.raises(ChatError, match=r"^401 from http://127\.0\.0\.1:\d+/v1/chat/completions: .*bad key"):
            client.chat([{"role": "user", "content": "again"}])
    assert (reply.text, reply.finish_reason) == ("Hello.", "stop")
    request = endpoint.received[0]
    assert request.body == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert request.headers["Authorization"] == "Bearer sk-bare-0123456789"
