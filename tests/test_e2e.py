"""End to end: `python agent.py` as a user runs it, against a local OpenAI-compatible server on a real socket;
what is the loop's and not the process's (exit codes, one-line errors, the REPL's input) with main() run in this
process against the same server (in_process.py)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint, completion
from frames import read_message
from in_process import run_agent

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-e2e-secret-0123456789"


def agent(install, project, endpoint, *argv, key=KEY, stdin=None, timeout=60):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
    env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "fake-model", "PYTHONUNBUFFERED": "1"})
    if key is not None:
        env["OPENAI_API_KEY"] = key
    return subprocess.run([sys.executable, str(install / "agent.py"), *argv], cwd=project, env=env, input=stdin,
                          capture_output=True, text=True, timeout=timeout)


def agent_here(home, project, endpoint, *argv, key=KEY, stdin=None, extra_env=None):
    """agent(), with main() run in this process (in_process.py): for what is the loop's, not the process's."""
    env = {"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "fake-model"} | ({"OPENAI_API_KEY": key} if key else {})
    env |= extra_env or {}
    return run_agent(home, project, list(argv), env, stdin)


def test_a_session_lists_reads_and_edits_on_one_connection(install, project):
    script = [
        "I'll look around.\ntool: list_files()",
        'tool: read_file({"path": "greet.py"})',
        'tool: edit_file({"path": "greet.py", "old_str": "\\"Helo, \\"", "new_str": "\\"Hello, \\""})',
        "Fixed the greeting typo in greet.py.",
    ]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "fix the typo in greet.py", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Fixed the greeting typo in greet.py.\n"
    assert (project / "greet.py").read_bytes() == b'def greet(name):\r\n    return "Hello, " + name\r\n'
    assert len(endpoint.received) == 4
    assert endpoint.n_connections == 1  # one keep-alive connection for the whole session
    first, last = endpoint.received[0], endpoint.received[-1]
    assert first.path == "/v1/chat/completions"
    assert first.headers["Authorization"] == f"Bearer {KEY}"
    assert first.body["model"] == "fake-model" and first.body["stop"] == ["\ntool_result("]
    assert [m["role"] for m in last.body["messages"]] == ["system", "user"] + ["assistant", "user"] * 3
    assert [m["content"] for m in last.body["messages"][2::2]] == script[:3]  # the model sees its own calls
    sent = [request.body["messages"] for request in endpoint.received]  # what providers' prompt caches need:
    assert all(later[:len(earlier)] == earlier for earlier, later in zip(sent, sent[1:]))  # each extends the last
    assert read_message(last.body["messages"][3]["content"]) == ([], [{"tool": "list_files", "ok": True, "output": "greet.py"}])
    assert "→ edit_file(" in done.stderr and KEY not in done.stderr + done.stdout
    assert all(KEY not in json.dumps(r.body) for r in endpoint.received)


def test_survives_a_429_with_retry_after(agent_home, project):
    """The wait itself is the client's (test_client.py, with its sleep in the test's hands): here the user sees
    the 429 and the retry, on the same connection. Retry-After: 0, so the run waits for nothing."""
    script = [{"status": 429, "headers": {"Retry-After": "0"},
               "body": {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}}, "All good."]
    with FakeEndpoint(script) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "hi")
    assert done.returncode == 0 and done.stdout == "All good.\n"
    assert "429 from" in done.stderr and "retrying in 0.0 s (attempt 2 of 4)" in done.stderr
    assert len(endpoint.received) == 2 and endpoint.n_connections == 1


def test_a_bad_key_is_one_line_and_exit_1(agent_home, project):
    script = [{"status": 401, "body": {"error": {"message": "Incorrect API key provided: sk-e2e***789.",
                                                 "code": "invalid_api_key"}}}]
    with FakeEndpoint(script) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "hi")
    assert done.returncode == 1 and done.stdout == ""
    header, commands, *lines = done.stderr.strip().splitlines()  # the header names the endpoint; then the one line
    assert header.startswith(f"plainagent: fake-model at {endpoint.url} (from the environment), workspace {project}")
    assert commands.startswith("commands: ")  # what the kernel lets commands do
    assert len(lines) == 1 and lines[0].startswith("plainagent: 401 from http://127.0.0.1:")
    assert "check OPENAI_API_KEY" in lines[0] and "Traceback" not in done.stderr


def test_a_server_echoing_the_key_does_not_get_it_printed(agent_home, project):
    with FakeEndpoint([{"status": 401, "body": {"error": {"message": f"bad key {KEY}"}}}]) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "hi")
    assert done.returncode == 1 and KEY not in done.stderr and "bad key [REDACTED]" in done.stderr


def test_no_server_is_one_line_and_exit_1(agent_home, project):
    with FakeEndpoint([]) as endpoint:
        pass  # closed: nothing listens on its port any more
    done = agent_here(agent_home, project, endpoint, "-p", "hi")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines()[2:] == [f"plainagent: Could not connect to {endpoint.url}/chat/completions: "
                                        "is the server running and OPENAI_BASE_URL right?"]


def test_task_from_stdin_and_writes_refused_without_a_terminal(agent_home, project):
    script = ['tool: edit_file({"path": "new.txt", "old_str": "", "new_str": "x"})', "I could not write the file."]
    with FakeEndpoint(script) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "-", stdin="create new.txt")
    assert done.returncode == 3 and done.stdout == "I could not write the file.\n"  # 3: not done as asked
    assert not (project / "new.txt").exists()
    assert endpoint.received[0].body["messages"][1] == {"role": "user", "content": "create new.txt"}
    result = endpoint.received[1].body["messages"][-1]["content"]
    assert "not running at a terminal" in result and "--yes" in result


def test_step_limit_exits_1(agent_home, project):
    with FakeEndpoint(["tool: list_files()", 'tool: read_file({"path": "greet.py"})']) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "loop", "--max-steps", "2")
    assert done.returncode == 1 and "Stopped after 2 model call(s) (--max-steps 2)" in done.stderr and done.stdout == ""


def test_a_step_limit_from_the_environment_is_named_as_it_was_set(agent_home, project):
    with FakeEndpoint(["tool: list_files()", 'tool: read_file({"path": "greet.py"})']) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "loop", extra_env={"PLAINAGENT_MAX_STEPS": "2"})
    assert done.returncode == 1 and "--max-steps 2" not in done.stderr
    assert "Stopped after 2 model call(s) (PLAINAGENT_MAX_STEPS=2, in the environment) without a final answer. Say " \
           "how to go on, or raise PLAINAGENT_MAX_STEPS (or give --max-steps)." in done.stderr


def test_local_server_without_a_key_sends_no_authorization(agent_home, project):
    with FakeEndpoint(["hi"]) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "hi", key=None)
    assert done.returncode == 0 and "Authorization" not in endpoint.received[0].headers


def test_usage_error_exits_2(install, project):
    with FakeEndpoint([]) as endpoint:
        done = agent(install, project, endpoint, "--max-steps", "many")
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_repl_runs_tasks_until_exit(install, project):
    with FakeEndpoint(["First answer.", "Second answer."]) as endpoint:
        done = agent(install, project, endpoint, stdin="hello\n\nagain\nexit\n")
    assert done.returncode == 0
    assert "First answer.\n" in done.stdout and "Second answer.\n" in done.stdout
    assert len(endpoint.received) == 2 and endpoint.n_connections == 1
    messages = endpoint.received[1].body["messages"]
    assert [m["content"] for m in messages[1:]] == ["hello", "First answer.", "again"]  # one conversation


@pytest.mark.parametrize("typed", ["", "quit\n", "exit\n"])
def test_repl_leaves_on_end_of_input_quit_and_exit(agent_home, project, typed):
    with FakeEndpoint([]) as endpoint:
        done = agent_here(agent_home, project, endpoint, stdin=typed + "never sent\n" if typed else "")
    assert done.returncode == 0 and "Traceback" not in done.stderr and endpoint.received == []


def test_ctrl_c_during_a_request_exits_130_without_a_traceback(install, project):
    with FakeEndpoint([{"body": completion("late"), "hold": True}]) as endpoint:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
        env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": KEY})
        process = subprocess.Popen([sys.executable, str(install / "agent.py"), "-p", "hi"], cwd=project, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        endpoint.wait_for_requests(1)  # the model is thinking, and will be until the endpoint closes
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 130 and "Interrupted." in err and "Traceback" not in err and out == ""


def wait_until_asleep(process, timeout: float = 15, poll: float = 0.001) -> None:
    """Wait until the program's main thread sleeps, as /proc shows it on Linux: at the REPL, before any task,
    only reading the next line puts it to sleep. (Elsewhere this returns at once; a Ctrl-C that lands before
    the prompt ends the run the same way.)"""
    stat = Path(f"/proc/{process.pid}/task/{process.pid}/stat")
    if not stat.parent.is_dir():
        return
    wchan = stat.parent / "wchan"  # where in the kernel it sleeps: on its input, not on a lock another thread holds
    deadline = time.monotonic() + timeout
    while stat.read_text().rpartition(")")[2].split()[0] != "S" or not waiting_for_input(wchan):
        assert time.monotonic() < deadline and process.poll() is None, "the program never waited for input"
        time.sleep(poll)


def waiting_for_input(wchan: Path) -> bool:
    """Whether a sleeping thread sleeps for something other than a lock (a futex: Python's GIL, which another
    thread of the program holds for an instant, is one); True where the kernel does not say."""
    try:
        return "futex" not in wchan.read_text()
    except OSError:
        return True


def read_or_fail(process, read, timeout: float = 20):
    """`read()` from one of the process's pipes, or a failure (the process killed) if nothing comes in time: a
    program that writes elsewhere than the test expects must fail the test, not hang it."""
    got = []
    reader = threading.Thread(target=lambda: got.append(read()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not got:
        process.kill()
        raise AssertionError(f"nothing came within {timeout} s")
    return got[0]


def start_repl(install, project, endpoint):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
    env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": KEY, "PYTHONUNBUFFERED": "1"})
    process = subprocess.Popen([sys.executable, str(install / "agent.py")], cwd=project, env=env, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    banner = read_or_fail(process, lambda: "".join(process.stderr.readline() for _ in range(3)))
    assert "Type a task" in banner
    return process


def test_ctrl_c_at_the_repl_prompt_leaves_cleanly(install, project):
    with FakeEndpoint([]) as endpoint:
        process = start_repl(install, project, endpoint)
        wait_until_asleep(process)  # reading the first task
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 130 and "Traceback" not in err


def test_ctrl_c_during_a_repl_task_returns_to_the_prompt(install, project):
    with FakeEndpoint([{"body": completion("too late"), "hold": True}, "Second answer."]) as endpoint:
        process = start_repl(install, project, endpoint)
        process.stdin.write("slow task\n")
        process.stdin.flush()
        endpoint.wait_for_requests(1)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate("next task\nexit\n", timeout=20)
    assert process.returncode == 0 and "Interrupted." in err and "Traceback" not in err
    assert out.endswith("Second answer.\n")
    contents = [m["content"] for m in endpoint.received[-1].body["messages"][1:]]
    assert contents == ["slow task", "(The user interrupted that task.)", "next task"]


def test_a_closed_stdout_is_not_a_traceback(install, project):
    """`python agent.py -p ... | head -0`: the reader is gone before the answer is printed."""
    with FakeEndpoint(["x" * 100_000]) as endpoint:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
        env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": KEY})
        process = subprocess.Popen([sys.executable, str(install / "agent.py"), "-p", "hi"], cwd=project, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        process.stdout.close()
        err = process.stderr.read()
        process.wait(timeout=20)
    assert process.returncode == 1 and "Traceback" not in err
