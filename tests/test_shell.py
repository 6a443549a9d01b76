"""run_command's processes: the status a command ends with, and a command that ends with the agent (lifetime.py) when
the agent is killed, checked on a real agent.py process against the local endpoint. The waits poll, bounded."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint

from harness.commands import shell
from tools import Workspace, run_tool

POSIX = os.name == "posix"


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    return Workspace(root)


def command(ws, line: str, timeout: int = 30) -> str:
    return run_tool(ws, "run_command", {"command": line, "timeout": timeout}).output


def wait_for(condition, seconds: float = 20, every: float = 0.02):
    """The first true value of `condition()`, asked every `every` seconds; None after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(every)
    return None


def host_pid(marker: str) -> int | None:
    """The number, as this process sees it, of the process whose command line holds `marker` (a command in a PID
    namespace of its own knows itself by another)."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                return int(entry.name)
        except OSError:
            continue
    return None


def alive(pid: int) -> bool:
    """Whether the process runs: a zombie (ended, not yet reaped by a parent that has gone) does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): ask the kernel, which counts a zombie as alive
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# --- how a command ended, told as the shell's own ---


@pytest.mark.parametrize("line, status", [
    ("exit 3", "exit code 3; no output"),
    ("kill -9 $$", "killed by signal 9 (SIGKILL); no output"),
    ("kill 0", "killed by signal 15 (SIGTERM); no output"),  # the command's own group: the tether stays out of it
    ("yes | head -n 2", "y\ny"),  # `yes` ends on SIGPIPE, as in a terminal: no "Broken pipe"
])
def test_a_command_ends_with_its_own_status(ws, line, status):
    assert command(ws, line) == status


def test_a_commands_output_is_bounded_while_it_runs(ws):
    """`yes` writes without end: only the head and tail are kept, and the timeout still ends it. (run_shell, whose
    timeout can be shorter than run_command's least, 1 s: the model's timeout reaches it in test_windows.py.)"""
    output = shell.run_shell(ws, "yes", timeout=0.2)
    assert output.startswith("killed after 0.2 s (timeout); the output so far:\ny\ny\n")
    assert len(output) < shell.OUTPUT_MAX_BYTES + 200 and "bytes dropped" in output


def test_a_timeout_kills_the_whole_process_group(ws):
    """The command's own children go too, not only the shell: a server it started does not run on."""
    started = time.monotonic()
    output = shell.run_shell(ws, "echo started; (sleep 30; touch late.txt) & echo $!; sleep 30", timeout=0.2)
    assert time.monotonic() - started < 10
    head, pid = output.rsplit("\n", 1)  # the pid is the last line
    assert head == "killed after 0.2 s (timeout); the output so far:\nstarted"
    assert wait_for(lambda: not alive(int(pid))), "the command's background child outlived the timeout"


@pytest.mark.skipif(not POSIX, reason="the tether is POSIX's")
def test_a_command_leaves_no_process_of_the_tether_behind(ws):
    """The tether is the shell's parent and ends with it: nothing of it lingers, not even a zombie."""
    pid = int(command(ws, "echo $PPID"))  # the shell's parent: the tether
    assert not alive(pid) and not Path(f"/proc/{pid}").exists()


@pytest.mark.skipif(not POSIX, reason="the tether is POSIX's")
def test_without_an_interpreter_for_the_tether_a_command_still_leads_its_own_group(ws, monkeypatch):
    """Python embedded, with no sys.executable: the command runs as before, and a timeout still kills all of it."""
    monkeypatch.setattr(shell.sys, "executable", "")
    group, pid = command(ws, "ps -o pgid= -p $$; echo $$").split()
    assert group == pid


# --- the agent killed: its command ends with it ---


@pytest.mark.skipif(not POSIX, reason="Windows has no tether: a command outlives an agent killed hard (README)")
def test_a_command_ends_when_the_agent_is_killed(install, project):
    """kill -9 of agent.py while its approved command runs: the command, two processes down (sh, then python),
    goes too. Before the tether it ran on, reparented to init, for its whole 600 s."""
    # Found by a marker on its command line: inside a PID namespace of its own, its os.getpid() is another number.
    sleeper = (f"{sys.executable} -c \"import time; open('command.pid', 'w').write('started'); time.sleep(600)\" "
               f"marker-{os.getpid()}-kill")
    script = ["tool: run_command(" + json.dumps({"command": sleeper, "timeout": 600}) + ")"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
    env.update({"OPENAI_MODEL": "fake-model", "OPENAI_API_KEY": "sk-test-0123456789abcdef"})
    pid = None
    with FakeEndpoint(script) as endpoint:
        env["OPENAI_BASE_URL"] = endpoint.url
        agent = subprocess.Popen([sys.executable, str(install / "agent.py"), "-p", "run it", "--yes"], cwd=project,
                                 env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            written = wait_for(lambda: (project / "command.pid").is_file() and (project / "command.pid").read_text())
            assert written, agent.stderr.read1().decode() if agent.poll() is not None else "the command never started"
            pid = host_pid(f"marker-{os.getpid()}-kill")
            assert alive(pid)
            agent.send_signal(signal.SIGKILL)
            agent.wait()
            assert wait_for(lambda: not alive(pid)), "the command outlived the agent"
        finally:
            agent.kill()
            agent.wait()
            agent.stderr.close()
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)
