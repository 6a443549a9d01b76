"""Where POSIX is missing, as on Windows: agent.py -p runs a task end to end, a command timeout included, in a
Python that has no termios, fcntl or readline, no os.killpg, os.setsid, O_NOFOLLOW or dir_fd, and no SIGALRM.
(No Windows here: the POSIX calls are taken away from a real agent.py process, which must not need them.)"""

import json
import os
import subprocess
import sys
import time

import pytest
from fake_endpoint import FakeEndpoint

from harness.commands import shell

# Run agent.py the way `python agent.py` would, after taking away what Windows does not have. Only what the
# agent's own code could reach: subprocess's POSIX half still needs signal.SIGKILL, as its Windows half does not.
WITHOUT_POSIX = """
import os, runpy, signal, sys
for module in ("termios", "fcntl", "readline", "tty", "pty"):
    sys.modules[module] = None  # import fails, as on Windows
for name in ("killpg", "setsid", "getpgid", "fchown", "fchmod", "mkfifo", "ttyname", "O_NOFOLLOW", "O_DIRECTORY",
             "O_NOCTTY"):
    if hasattr(os, name):
        delattr(os, name)
os.supports_dir_fd.clear()  # no call takes dir_fd
os.supports_fd.clear()
for name in ("SIGALRM", "setitimer", "ITIMER_REAL", "SIGHUP"):
    if hasattr(signal, name):
        delattr(signal, name)
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name="__main__")
"""


def test_a_task_with_a_command_timeout_runs_without_posix(install, project):
    (project / "notes.txt").write_bytes(b"first\r\nsecond\r\n")
    script = [
        'tool: list_files({})',
        'tool: read_file({"path": "notes.txt"})',
        'tool: edit_file({"path": "notes.txt", "old_str": "second", "new_str": "2nd"})',
        'tool: search_files({"pattern": "2nd"})',
        # exec: without process groups the shell alone is killed, so the command must be the shell itself here
        # (on Windows, taskkill /T takes the whole tree)
        "tool: run_command(" + json.dumps({"command": "echo started; exec sleep 30", "timeout": 1}) + ")",
        "Done.",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
    with FakeEndpoint(script) as endpoint:
        env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "fake-model", "OPENAI_API_KEY": "sk-test-key"})
        done = subprocess.run([sys.executable, "-c", WITHOUT_POSIX, str(install / "agent.py"), "-p", "tidy up",
                               "--yes"], cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Done.\n" and "Traceback" not in done.stderr
    results = [json.dumps(request.body["messages"][-1]["content"]) for request in endpoint.received[1:]]
    assert "notes.txt" in results[0] and "first" in results[1] and "Edited notes.txt" in results[2]
    assert "notes.txt:2: 2nd" in results[3]
    assert "killed after 1 s (timeout); the output so far:\\nstarted\\n" in results[4]
    assert (project / "notes.txt").read_bytes() == b"first\r\n2nd\r\n"


def test_on_windows_a_command_is_waited_for_in_slices_a_ctrl_c_can_come_between(monkeypatch):
    """Windows' wait for a process does not return for a Ctrl-C: the agent waits 0.1 s at a time instead, and
    still times out when it should and returns as soon as the command ends."""
    monkeypatch.setattr(shell, "WINDOWS", True)
    monkeypatch.setattr(shell, "WINDOWS_WAIT_SLICE", 0.02)
    waits = []
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    real_wait = sleeper.wait
    monkeypatch.setattr(sleeper, "wait", lambda timeout: waits.append(timeout) or real_wait(timeout=timeout))
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        shell.wait(sleeper, 0.2)
    assert 0.2 <= time.monotonic() - started < 2 and len(waits) > 3 and max(waits) <= 0.02
    sleeper.kill()
    real_wait()
    quick = subprocess.Popen([sys.executable, "-c", "pass"])
    shell.wait(quick, 30)
    assert quick.returncode == 0
