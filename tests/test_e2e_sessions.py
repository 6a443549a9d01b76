"""End to end, long sessions: the agent under a small context budget, against a server that refuses what
passes its window, killed with kill -9 in the middle of a task and resumed. The long sessions are
bench/long_session.py's scenarios, whole; their model (reader_model.py) answers right only from what its
request holds. A run that is killed, or holds a session while another tries it, is `python agent.py`; the
others run main() in this process (in_process.py), against the same server and the same transcripts."""

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint, completion, llama_cpp
from reader_model import ReaderModel, ask, collect, expected_answers, write_files
from test_e2e import KEY, agent_here


def run_long_session(home, project, tmp_path, *, one_task: bool, n_files: int, budget: int | None,
                     window: int | None) -> dict:
    """The REPL asked about each of `n_files` files in turn (or one task reading them all), against a model
    that answers only from what its request holds and a server that refuses requests over `window` tokens."""
    write_files(project, n_files)
    model = ReaderModel(window=window)
    argv = ["--context-tokens", str(budget)] if budget else []
    if one_task:
        argv += ["-p", collect(n_files), "--max-steps", str(n_files + 5)]
    stdin = "" if one_task else "".join(ask(n) + "\n" for n in range(1, n_files + 1)) + "exit\n"
    with FakeEndpoint([model] * 1000) as endpoint:
        done = agent_here(home, project, endpoint, *argv, stdin=stdin)
    entries = [json.loads(line) for line in transcripts(tmp_path)[0].read_text().splitlines()]
    answers = [line for line in done.stdout.splitlines() if line.strip()]
    return {"returncode": done.returncode, "stderr": done.stderr, "answers": answers,
            "right": answers == expected_answers("one-task" if one_task else "repl", n_files),
            "refused": model.n_refused, "largest": max(model.requests),
            "compactions": sum(entry["type"] == "compaction" for entry in entries),
            "transcript": transcripts(tmp_path)[0]}


def test_thirty_repl_tasks_under_8000_tokens_each_answered_right(agent_home, project, tmp_path):
    result = run_long_session(agent_home, project, tmp_path, one_task=False, n_files=30, budget=8000, window=8000)
    assert result["returncode"] == 0, result["stderr"]
    assert result["right"], result["answers"]
    assert result["refused"] == 0 and result["largest"] <= 8000  # the fake server refuses anything over 8,000
    assert result["compactions"] >= 5 and "Context compacted:" in result["stderr"]
    assert "Traceback" not in result["stderr"] and KEY not in result["transcript"].read_text()


def test_one_long_task_reading_twenty_files_keeps_the_models_notes(agent_home, project, tmp_path):
    result = run_long_session(agent_home, project, tmp_path, one_task=True, n_files=20, budget=8000, window=8000)
    assert result["returncode"] == 0, result["stderr"]
    assert result["right"], result["answers"]
    assert result["refused"] == 0 and result["largest"] <= 8000 and result["compactions"] >= 3


def test_a_server_refusing_requests_over_its_window_is_survived(agent_home, project, tmp_path):
    result = run_long_session(agent_home, project, tmp_path, one_task=False, n_files=8, budget=None,  # 32,000
                              window=4096)
    assert result["returncode"] == 0, result["stderr"]
    assert result["right"], result["answers"]
    assert result["refused"] == 1 and result["largest"] <= 4096
    assert "refused the request as too long for the model's context window of 4,096 tokens" in result["stderr"]
    budget_lines = [json.loads(line) for line in result["transcript"].read_text().splitlines()
                    if '"type": "budget"' in line]
    assert [line["tokens"] for line in budget_lines] == [4096]


def transcripts(tmp_path) -> list[Path]:
    return sorted((tmp_path / "state" / "plainagent" / "sessions").glob("*.jsonl"))


def test_resume_after_a_clean_exit_carries_the_history_with_one_system_prompt(agent_home, project, tmp_path):
    with FakeEndpoint(['tool: read_file({"path": "greet.py"})', "It greets."]) as endpoint:
        first = agent_here(agent_home, project, endpoint, "-p", "what does greet.py do?")
    assert first.returncode == 0 and len(transcripts(tmp_path)) == 1
    with FakeEndpoint(["It has a typo."]) as endpoint:
        again = agent_here(agent_home, project, endpoint, "--resume", "-p", "anything wrong with it?")
    assert again.returncode == 0 and again.stdout == "It has a typo.\n"
    assert "Resumed " in again.stderr
    sent = endpoint.received[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in sent[1:3]] == ["what does greet.py do?", 'tool: read_file({"path": "greet.py"})']
    assert sent[4:] == [{"role": "assistant", "content": "It greets."},
                        {"role": "user", "content": "anything wrong with it?"}]
    assert len(transcripts(tmp_path)) == 1  # the session went on in its own file


def test_an_undo_just_before_exit_is_told_to_the_model_after_a_resume(agent_home, project, tmp_path):
    """From issue 34: /undo then /exit, and the resumed model believed its change was still there."""
    edit = 'tool: edit_file({"path": "greet.py", "old_str": "Helo", "new_str": "Hello"})'
    with FakeEndpoint([edit, "Fixed."]) as endpoint:
        first = agent_here(agent_home, project, endpoint, "--yes", stdin="fix the typo\n/undo\n/exit\n")
    assert first.returncode == 0, first.stderr
    assert project.joinpath("greet.py").read_bytes() == b'def greet(name):\r\n    return "Helo, " + name\r\n'
    with FakeEndpoint(["It has a typo."]) as endpoint:
        again = agent_here(agent_home, project, endpoint, "--resume", "-p", "is it fixed?", "--yes")
    assert again.returncode == 0, again.stderr
    last = endpoint.received[0].body["messages"][-1]["content"]
    assert last.startswith("(The user ran /undo: ") and "greet.py" in last and last.endswith("is it fixed?")
    with FakeEndpoint(["Still."]) as endpoint:  # said once: the task after it carried it
        agent_here(agent_home, project, endpoint, "--resume", "-p", "and now?", "--yes")
    assert "/undo" not in endpoint.received[0].body["messages"][-1]["content"]


def start_agent(install, project, endpoint, *argv):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
    env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": KEY})
    return subprocess.Popen([sys.executable, str(install / "agent.py"), *argv], cwd=project, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_killed_while_waiting_for_the_model_resumes_from_the_last_complete_message(install, agent_home, project, tmp_path):
    script = ['tool: read_file({"path": "greet.py"})', {"body": completion("too late"), "hold": True}]
    with FakeEndpoint(script) as endpoint:
        process = start_agent(install, project, endpoint, "-p", "fix greet.py")
        endpoint.wait_for_requests(2)
        process.kill()  # SIGKILL: nothing gets to clean up
        process.communicate(timeout=20)
    before = endpoint.received[1].body["messages"]  # what the model was last sent
    with FakeEndpoint(["Fixed."]) as endpoint:
        resumed = agent_here(agent_home, project, endpoint, "--resume", "-p", "go on")
    assert resumed.returncode == 0 and resumed.stdout == "Fixed.\n", resumed.stderr
    sent = endpoint.received[0].body["messages"]
    assert sent[:4] == before
    assert sent[4:] == [{"role": "assistant", "content": "(The previous run of this session stopped abruptly "
                                                         "(it was killed or crashed).)"},
                        {"role": "user", "content": "go on"}]


def test_killed_while_a_tool_runs_resumes_saying_the_calls_may_not_have_run(install, agent_home, project, tmp_path):
    os.mkfifo(project / "running")  # the command says it has begun by writing a line into it
    running = os.open(project / "running", os.O_RDONLY | os.O_NONBLOCK)
    command = 'tool: run_command({"command": "echo > running; sleep 5"})'
    with FakeEndpoint([command]) as endpoint:
        process = start_agent(install, project, endpoint, "-p", "wait a bit", "--yes")
        assert select.select([running], [], [], 20)[0], "the command never began"
        process.kill()
        process.communicate(timeout=20)
    os.close(running)
    with FakeEndpoint(["I will check first."]) as endpoint:
        resumed = agent_here(agent_home, project, endpoint, "--resume", "-p", "go on", "--yes")  # its mode: no note on modes
    assert resumed.returncode == 0, resumed.stderr
    sent = endpoint.received[0].body["messages"]
    assert [m["content"] for m in sent[1:]] == [
        "wait a bit", command,
        "(The previous run of this session stopped abruptly (it was killed or crashed). The tool calls in your "
        "last reply may not all have run.)\n\ngo on"]


def test_a_torn_last_line_is_skipped_with_one_warning(agent_home, project, tmp_path):
    with FakeEndpoint(["Hello."]) as endpoint:
        agent_here(agent_home, project, endpoint, "-p", "hi")
    with open(transcripts(tmp_path)[0], "ab") as file:
        file.write(b'{"type": "message", "message": {"role": "assistant", "con')
    with FakeEndpoint(["Again."]) as endpoint:
        resumed = agent_here(agent_home, project, endpoint, "--resume", "-p", "again")
    assert resumed.returncode == 0 and "the last line is incomplete" in resumed.stderr
    assert [m["content"] for m in endpoint.received[0].body["messages"][1:]] == ["hi", "Hello.", "again"]
    with FakeEndpoint(["Once more."]) as endpoint:
        later = agent_here(agent_home, project, endpoint, "--resume", "-p", "once more")
    assert later.returncode == 0 and "incomplete" not in later.stderr  # said once, not at every resume


@pytest.mark.parametrize("content, message", [
    (None, "no session to resume for"),
    ("print('not a transcript')\n", "not a plainagent transcript"),
])
def test_resume_without_a_session_is_one_line_and_exit_2(agent_home, project, tmp_path, content, message):
    argv = ["--resume"]
    if content is not None:
        (tmp_path / "x.py").write_text(content)
        argv.append(str(tmp_path / "x.py"))
    with FakeEndpoint([]) as endpoint:
        done = agent_here(agent_home, project, endpoint, *argv, "-p", "hi")
    assert done.returncode == 2 and endpoint.received == []
    header, _, line = done.stderr.splitlines()  # the header names the endpoint, then what commands may do; the line
    assert header.startswith("plainagent: fake-model at ") and message in line and "Traceback" not in done.stderr


def test_log_writes_the_named_file_and_never_the_workspace(agent_home, project, tmp_path):
    with FakeEndpoint(["Hi."]) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "hi", "--log", str(tmp_path / "mine.jsonl"))
        again = agent_here(agent_home, project, endpoint, "-p", "hi", "--log", str(tmp_path / "mine.jsonl"))
    assert done.returncode == 0 and json.loads((tmp_path / "mine.jsonl").read_text().splitlines()[0])["model"] == "fake-model"
    assert again.returncode == 2 and "the file exists" in again.stderr
    assert transcripts(tmp_path) == [] and sorted(p.name for p in project.iterdir()) == ["greet.py"]


def test_compact_in_the_repl_summarizes_and_the_next_task_goes_on(agent_home, project, tmp_path):
    one = "One." + " In detail:" * 100  # long enough that a summary is shorter
    script = [one, "Two.", "Summary: the user said one and two.", "Three."]
    with FakeEndpoint(script) as endpoint:
        done = agent_here(agent_home, project, endpoint, stdin="one\ntwo\n/compact\nthree\nexit\n")
    assert done.returncode == 0 and done.stdout == one + "\nTwo.\nThree.\n"
    assert "Context compacted: 2 older messages replaced by a summary" in done.stderr
    assert done.stderr.count("Context compacted:") == 1  # said once, not by compact() and /compact both
    summary_request, last = endpoint.received[2].body["messages"], endpoint.received[3].body["messages"]
    assert summary_request[0]["content"].startswith("You keep the notes of a coding agent")
    assert [m["content"] for m in last[1:]][1:] == ["(Understood: I will carry on from this summary.)", "two", "Two.",
                                                    "three"]
    assert last[1]["content"].endswith("Summary: the user said one and two.")


@pytest.mark.parametrize("value", ["1000", "many"])
def test_a_bad_context_budget_is_a_usage_error(agent_home, project, value):
    with FakeEndpoint([]) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "hi", "--context-tokens", value)
    assert done.returncode == 2 and "Traceback" not in done.stderr and endpoint.received == []


def test_a_session_in_use_cannot_be_resumed_by_a_second_run(install, agent_home, project, tmp_path):
    with FakeEndpoint(["Hello."]) as endpoint:
        agent_here(agent_home, project, endpoint, "-p", "hi")
    path = transcripts(tmp_path)[0]
    with FakeEndpoint([{"body": completion("A done."), "hold": True}, "B done."]) as endpoint:
        first = start_agent(install, project, endpoint, "--resume", str(path), "-p", "task A")
        endpoint.wait_for_requests(1)  # A holds the session, waiting for the model
        second = agent_here(agent_home, project, endpoint, "--resume", str(path), "-p", "task B")
        plain = agent_here(agent_home, project, endpoint, "--resume", "-p", "task B")
        first.kill()
        first.communicate(timeout=20)
    assert second.returncode == 2 and second.stderr.split("\n", 2)[2] == (
        f"plainagent: --resume {path}: this session is in use by another plainagent that is still running; wait "
        "for it to end, or start a new session without --resume.\n")
    assert plain.returncode == 2 and "is in use by another plainagent" in plain.stderr
    assert len(endpoint.received) == 1
    entries = [json.loads(line) for line in path.read_text().splitlines()]  # B wrote nothing
    assert [entry["message"]["content"] for entry in entries if entry["type"] == "message"
            and entry["message"]["role"] != "system"] == ["hi", "Hello.", "task A"]


def test_resuming_in_another_workspace_is_refused(agent_home, project, tmp_path):
    with FakeEndpoint(["Hello."]) as endpoint:
        agent_here(agent_home, project, endpoint, "-p", "hi")
    path = transcripts(tmp_path)[0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with FakeEndpoint([]) as endpoint:
        done = agent_here(agent_home, elsewhere, endpoint, "--resume", str(path), "-p", "go on")
    assert done.returncode == 2 and endpoint.received == []
    assert done.stderr.split("\n", 2)[2] == (f"plainagent: --resume {path}: that session worked in {project}, not in {elsewhere}; "
                           f"resume it there (-C {project}), or start a new session here.\n")


# --- a small local window: the answer needs room too (issue 26) ---


LONG_ANSWER = "The report lists the figures of every month; " + "month after month the numbers hold. " * 50


def reading_model(body: dict) -> str:
    """Reads two parts of the report, one call a reply, then answers at length."""
    n_read = sum(message["content"].startswith("tool: read_file") for message in body["messages"])
    return f'tool: read_file({{"path": "part{n_read + 1}.txt"}})' if n_read < 2 else LONG_ANSWER


def test_a_reply_cut_at_a_full_window_is_asked_again_after_compacting(agent_home, project):
    """llama.cpp at n_ctx 4096, no usage in its stream, --context-tokens 4096 as the docs advise: the history was
    fitted to the window by an estimate that counted too few tokens, the answer found no room and was cut after a
    few words, and the task failed blaming the output token limit."""
    for part in (1, 2):
        (project / f"part{part}.txt").write_text("".join(f"{n:04d} figures: " + "x" * 70 + "\n" for n in range(40)))
    with FakeEndpoint([llama_cpp(4096, reading_model)] * 6) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "summarize the report", "--context-tokens", "4096")
    assert done.returncode == 0, done.stderr
    assert done.stdout == LONG_ANSWER.strip() + "\n"
    assert "cut off: the context window is full" in done.stderr
    assert "output token limit" not in done.stderr and "Traceback" not in done.stderr
    # The two reads, the answer cut off, and the same turn asked again, smaller.
    sizes = [len(json.dumps(request.body["messages"])) for request in endpoint.received]
    assert len(sizes) == 4 and sizes[3] < sizes[2] and all(request.body["stream"] for request in endpoint.received)
    assert endpoint.received[3].body["messages"][-1] == endpoint.received[2].body["messages"][-1]


def test_a_window_full_after_every_try_says_so_not_output_limit(agent_home, project):
    """An answer no window of 4096 holds: the last line names the window, not the output token limit."""
    huge = "word " * 5000
    with FakeEndpoint([llama_cpp(4096, lambda body: huge)] * 6) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "write a lot", "--context-tokens", "4096")
    assert done.returncode == 1
    assert "the context window is full" in done.stderr and "output token limit" not in done.stderr
    assert len(endpoint.received) <= 3


def test_a_stream_that_reports_its_usage_corrects_the_estimate_before_the_window_is_full(agent_home, project):
    """The same session against a server that reports usage at the end of a stream (asked for with
    stream_options.include_usage): the estimate is corrected from the first reply on, and no reply is cut."""
    for part in (1, 2):
        (project / f"part{part}.txt").write_text("".join(f"{n:04d} figures: " + "x" * 70 + "\n" for n in range(40)))
    with FakeEndpoint([llama_cpp(4096, reading_model, stream_usage=True)] * 6) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "summarize the report", "--context-tokens", "4096")
    assert done.returncode == 0, done.stderr
    assert done.stdout == LONG_ANSWER.strip() + "\n" and "cut off" not in done.stderr
    assert len(endpoint.received) == 3 and "estimated" not in done.stderr


def test_a_local_server_cutting_at_its_window_is_known_without_context_tokens(agent_home, project):
    """The default budget (32,000) and llama.cpp at n_ctx 4096, which reports no usage in its stream: a local
    server's own output limit is seldom set, so its cut is taken for the window's end, learnt, and the turn asked
    again, with a reply limit of what the window leaves; a reply that runs to that too has filled the window, and
    the last line names it. (A user found the output limit blamed unless --context-tokens was set.)"""
    huge = "word " * 5000
    with FakeEndpoint([llama_cpp(4096, lambda body: huge)] * 6) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "write a lot")
    assert done.returncode == 1
    assert "cut off: the context window is full" in done.stderr and "output token limit" not in done.stderr
    assert [request.body["max_tokens"] < 4096 for request in endpoint.received] == [False, True]
