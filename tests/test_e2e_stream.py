"""End to end with streamed replies: agent.py as a process against a local server that streams server-sent
events, in a pipe and at a pseudo-terminal, and the REPL's input and slash commands (those, and what is not the
process's, with main() run in this process against the same server: in_process.py)."""

import json
import os
import signal
import subprocess
import sys

import pytest
from fake_endpoint import FakeEndpoint, llama_cpp_python, stream_events
from frames import read_results
from test_e2e import KEY, agent, agent_here, read_or_fail
from test_e2e_terminal import Screen

from harness.history.transcript import load

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminals as Linux has them")


def streamed(text: str, **options) -> dict:
    return {"events": stream_events(text, pieces=options.pop("pieces", 4), **options.pop("events", {})), **options}


def write(path: str, old: str, new: str) -> str:
    return "tool: edit_file(" + json.dumps({"path": path, "old_str": old, "new_str": new}) + ")"


CREATE_NOTES = write("notes.md", "", "hi\n")


# --- one task, stdout a pipe ---


def test_a_pipe_gets_exactly_the_answer_and_stderr_the_live_text(install, project):
    script = [streamed(f"Let me create it.\n{CREATE_NOTES}", events={"reasoning": "thinking..."}),
              streamed("Created notes.md with 中文 and\u2028a line separator.", split=5)]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "write notes", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Created notes.md with 中文 and\u2028a line separator.\n"
    assert done.stderr.split("\n", 2)[2].startswith("Let me create it.\n→ edit_file(path=\"notes.md\", old_str=\"\", new_str=\"hi\\n\")\n")
    assert "Created notes.md with 中文 and\\u2028a line separator.\n" in done.stderr  # shown, escaped, live
    assert "tool: edit_file" not in done.stderr and "thinking" not in done.stderr  # no raw call, no reasoning in a log
    assert "(estimated)" not in done.stderr and "tokens so far, estimated)" in done.stderr  # no usage was streamed
    assert all(request.body["stream"] is True and request.body["stream_options"] == {"include_usage": True}
               for request in endpoint.received)
    assert endpoint.received[1].body["messages"][2]["content"] == f"Let me create it.\n{CREATE_NOTES}"
    assert (project / "notes.md").read_bytes() == b"hi\n"


@pytest.mark.parametrize("argv, env_file", [(["--no-stream"], ""), ([], "PLAINAGENT_STREAM=off\n")])
def test_streaming_can_be_turned_off(agent_home, project, argv, env_file):
    (agent_home / ".env").write_text(env_file)  # the user's own
    with FakeEndpoint(["Whole."]) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "hi", *argv)
    assert done.returncode == 0 and done.stdout == "Whole.\n"
    assert "stream" not in endpoint.received[0].body


def test_a_session_past_a_llama_cpp_python_servers_window_compacts_and_goes_on(agent_home, project):
    """That server answers a streamed request past its window with a 200 stream that ends before its first
    event; asked without streaming, it says 400 and states the window, and the history is fitted to it."""
    (project / "big.log").write_text("".join(f"line {n:04d}: " + "x" * 60 + "\n" for n in range(200)) + "OK\n")

    def model(body: dict) -> str:
        return 'tool: read_file({"path": "big.log"})' if body["messages"][-1]["content"] == "check the log" \
            else "The log ends with OK."

    with FakeEndpoint([llama_cpp_python(2500, model)] * 5) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "check the log")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The log ends with OK.\n"
    url = endpoint.url + "/chat/completions"
    assert (f"the stream from {url} ended before its first event; asking once more without streaming, for the "
            "server's own answer\n") in done.stderr
    assert ("The server refused the request as too long for the model's context window of 2,500 tokens; the context "
            "budget is now 2,500 tokens. Compacting and sending it again.\n") in done.stderr
    assert [request.body.get("stream", False) for request in endpoint.received] == [True, True, False, True]
    assert "broke" not in done.stderr and "retrying" not in done.stderr and "Traceback" not in done.stderr


def test_ctrl_c_mid_stream_in_one_shot_mode_exits_130(install, project):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
    slow = streamed("word " * 50, pieces=50, hold=True, hold_at=2)  # a role delta and a word, then nothing yet
    with FakeEndpoint([slow]) as endpoint:
        env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": KEY})
        process = subprocess.Popen([sys.executable, str(install / "agent.py"), "-p", "talk"], cwd=project, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The header, naming the endpoint, and what commands may do; then the live text has begun.
        first = read_or_fail(process, lambda: process.stderr.readline() and process.stderr.readline()
                             and process.stderr.read(5))
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    assert first == "word " and process.returncode == 130 and out == ""
    assert err.endswith("\nInterrupted.\n") and "Traceback" not in err


# --- at a terminal ---


@linux_only
def test_text_appears_as_it_is_written_and_ctrl_c_returns_to_a_working_prompt(install, project):
    # The first words, then the server holds the rest of the reply back until the endpoint closes.
    slow = streamed("First words, then a long wait " + "more " * 20, pieces=21, hold=True, hold_at=3)
    with FakeEndpoint([slow, streamed("Second answer.")]) as endpoint:
        screen = Screen(install, project, endpoint)
        screen.prompt()
        screen.type("talk\n")
        screen.expect("First words")  # while the rest of the reply is still to come
        screen.type("\x03")
        screen.expect("Interrupted.\n")  # at once: the rest of the reply never comes
        screen.prompt()
        screen.type("go on\n")
        screen.expect("Second answer.")
        screen.prompt()
        screen.type("/exit\n")
        assert screen.wait() == 0
    assert "Second answer." not in screen.text.split("Second answer.")[1]  # the answer once, not twice
    contents = [m["content"] for m in endpoint.received[-1].body["messages"][1:]]
    assert contents == ["talk", "(The user interrupted that task.)", "go on"]  # the partial reply not kept


@linux_only
def test_a_pasted_block_is_one_task_and_a_backslash_goes_on(install, project):
    trace = "Traceback (most recent call last):\n  File \"app.py\", line 3\nZeroDivisionError: division by zero"
    with FakeEndpoint([streamed("Seen the trace."), streamed("Seen both lines.")]) as endpoint:
        screen = Screen(install, project, endpoint)
        screen.prompt()
        screen.type(trace + "\n")  # arrives at once, as a paste does
        screen.expect("Seen the trace.")
        screen.prompt()
        screen.type("first part \\\n")
        screen.expect("... ")
        screen.type("second part\n")
        screen.expect("Seen both lines.")
        screen.prompt()
        screen.type("\x04")
        assert screen.wait() == 0
    assert [request.body["messages"][-1]["content"] for request in endpoint.received] == [
        trace, "first part \nsecond part"]
    history = (project.parent / "state" / "plainagent" / "history")
    assert history.is_file() and "division by zero" in history.read_text()


@linux_only
def test_undo_walks_back_several_writes_byte_for_byte(install, project):
    original = (project / "greet.py").read_bytes()
    script = [streamed(write("greet.py", "Helo", "Hello")), streamed("Fixed."),
              streamed(write("greet.py", "Hello", "Hi")), streamed("Shorter."),
              streamed(write("docs/new.md", "", "# Notes\n")), streamed("Created.")]
    with FakeEndpoint(script) as endpoint:
        screen = Screen(install, project, endpoint, "--yes")
        for task, answer in [("fix", "Fixed."), ("shorten", "Shorter."), ("document", "Created.")]:
            screen.prompt()
            screen.type(task + "\n")
            screen.expect(answer)
        assert (project / "docs" / "new.md").read_bytes() == b"# Notes\n"
        states = []
        for _ in range(4):
            screen.prompt()
            screen.type("/undo\n")
            screen.expect(".\n")
            states.append(((project / "greet.py").read_bytes(), (project / "docs").exists()))
        screen.prompt()
        screen.type("/exit\n")
        assert screen.wait() == 0
    after_fix = original.replace(b"Helo", b"Hello")
    assert states == [(after_fix.replace(b"Hello", b"Hi"), False), (after_fix, False), (original, False),
                      (original, False)]
    assert "Nothing to undo." in screen.text


def test_reset_tokens_model_and_an_unknown_command(agent_home, project):
    usage = {"prompt_tokens": 100, "completion_tokens": 7}
    script = [streamed("One.", events={"usage": usage}), streamed("Two."), streamed("Three.")]
    typed = "first\n/tokens\n/reset\nsecond\n/model other-model\nthird\n/tokens\n/nope\n/help\n"
    with FakeEndpoint(script) as endpoint:
        done = agent_here(agent_home, project, endpoint, stdin=typed)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "One.\nTwo.\nThree.\n"
    assert "1 request: 100 prompt + 7 completion tokens (as the server reported them)." in done.stderr
    assert "3 requests: " in done.stderr and "(2 of the requests estimated: the server reported none)." in done.stderr
    assert ("Unknown command /nope. Commands: /help, /reset, /undo, /diff, /show, /tokens, /model, /mode, /sandbox, "
            "/compact, /exit") in done.stderr
    assert "/model NAME: use model NAME for the next requests" in done.stderr
    second, third = endpoint.received[1].body, endpoint.received[2].body
    assert [m["content"] for m in second["messages"][1:]] == ["second"]  # a new conversation
    assert second["model"] == "fake-model" and third["model"] == "other-model"


@linux_only
def test_ctrl_c_during_a_tool_run_keeps_the_results_of_the_calls_that_ran(install, project):
    calls = 'tool: read_file({"path": "greet.py"})\n' + CREATE_NOTES
    with FakeEndpoint([streamed(calls), streamed("Next answer.")]) as endpoint:
        screen = Screen(install, project, endpoint)
        screen.prompt()
        screen.type("read then write\n")
        screen.expect("[a]lways: ")
        screen.type("\x03")
        screen.expect("Interrupted.\n")
        screen.prompt()
        screen.type("go on\n")
        screen.expect("Next answer.")
        screen.prompt()
        screen.type("\x04")
        assert screen.wait() == 0
    messages = endpoint.received[-1].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    results = read_results(messages[3]["content"])
    assert [(r["tool"], r["ok"]) for r in results] == [("read_file", True), ("edit_file", False)]
    assert "Helo" in results[0]["output"] and "the user interrupted the task" in results[1]["output"]
    assert (messages[4]["content"], messages[5]["content"]) == ("(The user interrupted that task.)", "go on")
    assert not (project / "notes.md").exists()


@linux_only
def test_one_task_at_a_terminal_shows_the_answer_once(install, project):
    with FakeEndpoint([streamed("The answer, live.", events={"reasoning": "hmm"})]) as endpoint:
        screen = Screen(install, project, endpoint, "-p", "question")
        assert screen.wait() == 0
    assert screen.text.count("The answer, live.") == 1
    # Reasoning shown; with TERM=dumb not dimmed, so marked, never to be taken for the answer.
    assert screen.text.split("\n", 2)[2].startswith("[thinking]\nhmm\n[end of thinking]\nThe answer, live.\n(")


def test_a_resumed_session_carries_on_from_the_reset(agent_home, project):
    with FakeEndpoint([streamed("One."), streamed("Two."), streamed("Three.")]) as endpoint:
        assert agent_here(agent_home, project, endpoint, stdin="first\n/reset\nsecond\n").returncode == 0
        resumed = agent_here(agent_home, project, endpoint, "--resume", "-p", "third")
    assert resumed.returncode == 0 and resumed.stdout == "Three.\n"
    assert [m["content"] for m in endpoint.received[-1].body["messages"][1:]] == ["second", "Two.", "third"]


def test_a_lone_surrogate_in_a_streamed_reply_is_repaired_as_in_a_whole_one(agent_home, project, tmp_path):
    """Issue 26/27: whole replies had lone surrogates repaired, streamed ones not, and the transcript line holding
    one could not be read back."""
    delta = '{"choices": [{"index": 0, "delta": {"content": "%s"}, "finish_reason": %s}]}'
    events = ["data: " + delta % ("Done: a\\ud800b", "null"), "data: " + delta % (" and \\ud83d\\ude00.", '"stop"'),
              "data: [DONE]"]
    log = tmp_path / "t.jsonl"
    with FakeEndpoint([{"events": events}]) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "hi", "--log", str(log))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Done: a\ufffdb and 😀.\n"
    log.read_bytes().decode("utf-8")  # every line of the transcript is UTF-8
    loaded = load(log)
    assert loaded.warnings == [] and loaded.messages[-1] == {"role": "assistant", "content": "Done: a\ufffdb and 😀."}


def test_with_no_stream_the_words_before_a_call_are_shown_too(install, project):
    """A whole reply is shown as its stream would have been: the words before a call, the call as its log line."""
    with FakeEndpoint([f"Let me create it.\n{CREATE_NOTES}", "Created notes.md."]) as endpoint:
        done = agent(install, project, endpoint, "-p", "write notes", "--yes", "--no-stream")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Created notes.md.\n"
    assert "\nLet me create it.\n→ edit_file(path=\"notes.md\", old_str=\"\", new_str=\"hi\\n\")\n" in done.stderr
    assert "tool: edit_file" not in done.stderr
