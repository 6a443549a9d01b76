"""How run_command runs a command, once the deny rules (guard.py) and the user (permissions.py) allow it.

In the workspace root, with the user's environment minus the API key, without stdin, in a process group of its
own so that a timeout or a Ctrl-C kills everything it started (not only the shell, leaving a server running
behind the user's back), tethered to the agent so that it ends when the agent is killed (lifetime.py), and with its
output bounded while it runs (`yes` for a minute must not fill the memory): the head and the tail are kept, the
API key redacted before the cut is marked. The model gets OUTPUT_MAX_BYTES of it, the mark saying how many lines
it did not see; the user may see more (/show): what was kept, up to SHOWN_MAX_BYTES, is left with the workspace
(`Workspace.uncut`) when the model's copy was cut.

On Windows the shell is cmd.exe, the command gets a process group of its own (CREATE_NEW_PROCESS_GROUP: the
console's Ctrl-C is the agent's, not the command's), and its tree is killed with `taskkill /T /F`; there is no
tether there, so a command still running when the agent is killed hard goes on.
"""

from __future__ import annotations

import errno
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.commands.landlock import Boundary
from harness.commands.refusal_notes import refusal_note
from harness.commands.seccomp import seccomp_program
from harness.common.programs import find_program, tether_python
from harness.files.workspace import Workspace

OUTPUT_MAX_BYTES = 20_000  # run_command output the model gets (half from the start, half from the end)
SHOWN_MAX_BYTES = 2_000_000  # ... and the user can see with /show when the model's copy was cut
WINDOWS = os.name == "nt"
WINDOWS_WAIT_SLICE = 0.1  # seconds: how soon a Ctrl-C is taken while a command runs, on Windows
TETHER = Path(__file__).with_name("lifetime.py")
VENV_NAMES = (".venv", "venv")  # a project's own virtual environment, at the workspace's root
STOP_WAIT = 5  # seconds the tether has to end what a stopped command started, before its group is killed
# Read once, as the agent starts, and run with -c: a command that changed lifetime.py on disk (`if boundary:` made
# `if False:`) would otherwise have run every later command outside the walls.
TETHER_SOURCE = TETHER.read_text(encoding="utf-8")
# How a result that is not a plain success begins. A command that succeeded is shown as its output alone, unless
# the output begins like this: then its "exit code 0:" goes first, so no output can pass for a failure.
STATUS_LINE = re.compile(r"exit code \d|killed after |killed by signal ")


def run_shell(ws: Workspace, command: str, timeout: int, boundary: Boundary | None = None) -> str:
    """Run `command` with sh (cmd.exe on Windows), inside `boundary` if given; returns its output, after a status
    line unless it succeeded, as run_command's result."""
    env = command_environment(os.environ, ws, network=boundary is None or boundary.network)
    confine = []  # the tether's arguments that put the command inside the boundary: the ruleset, the seccomp
    # program, the namespaces' walls
    if boundary is not None and boundary.abi:
        unix = boundary.network or boundary.namespaces  # without namespaces no socket file outside can be told apart
        confine = [str(boundary.ruleset()), seccomp_program(boundary.network, unix).hex(), *boundary.walls()]
        env["TMPDIR"] = str(boundary.tmpdir)  # the one temp folder it may write in: tempfile, mktemp, pytest use it
    if ws.git_history is not None:
        ws.git_history.before_command()  # at the first command, the history as it was (git_history.py)
    if ws.look is not None:
        ws.look.before()  # the files that act later, as they are (look.py)
    process, tether, report = start(command, ws.root, env, confine)
    output = HeadAndTail(SHOWN_MAX_BYTES)
    # Read as it comes, keeping only the start and the end: `yes` for a minute must not fill the memory.
    reader = threading.Thread(target=output.read_all, args=(process.stdout,), daemon=True)
    reader.start()
    try:
        wait(process, timeout)
        status = exit_status(process.returncode)
    except subprocess.TimeoutExpired:
        stop(process, tether)
        tether, status = None, f"killed after {timeout} s (timeout); the output so far"
    except BaseException:  # Ctrl-C while waiting: do not leave the command running behind the user's back
        stop(process, tether)
        tether = None
        ended_with(report)
        if ws.look is not None:  # what it wrote that acts later is put back, nobody asked
            ws.look.after(ask=False)
        raise
    finally:
        if tether is not None:  # the command has ended (or been killed): the tether has nothing left to hold
            os.close(tether)
    reader.join(timeout=5)  # a grandchild that left the process group may hold the pipe open; stop waiting
    if confine and boundary.search is not None:  # what it made is looked for while the model answers
        boundary.search.refresh_later()
    # A command's last newline tells the model nothing, and the frame puts one before its end marker anyway.
    text = output.text(ws.redact, OUTPUT_MAX_BYTES).removesuffix("\n")
    note = refusal_note(boundary, text, status, command) if confine else None  # a wall, not a glitch to try again
    if n_ended := ended_with(report):
        ended = f"(plainagent: {n_ended} background process{'es were' if n_ended > 1 else ' was'} ended with the " \
                "command: nothing a command starts outlives it. A server is the user's to start in their terminal.)"
        note = f"{note}\n{ended}" if note else ended
    for after in ([ws.git_history.after_command] if ws.git_history else []) + ([ws.look.after] if ws.look else []):
        if put_back := after():  # the history, then what acts later: put back, and the model told
            note = f"{note}\n{put_back}" if note else put_back
    result = as_result(status, "\n".join(filter(None, [text, note])))
    if output.is_cut(OUTPUT_MAX_BYTES):  # the user can see what the model did not: /show
        whole = output.text(ws.redact).removesuffix("\n")
        ws.uncut = (result, as_result(status, "\n".join(filter(None, [whole, note]))))
    return result


def as_result(status: str, text: str) -> str:
    """run_command's result: the output, after a status line unless the command succeeded."""
    if status == "exit code 0" and not STATUS_LINE.match(text):  # success goes unsaid, as in the frame and a shell
        return text or "(no output)"
    return f"{status}:\n{text}" if text else f"{status.removesuffix('; the output so far')}; no output"


# Variables that lead a program to a daemon's socket outside the walls (an ssh-agent that signs with the user's key,
# a tmux server that runs a line outside, Docker's root): without the network, a command is not shown the way.
SOCKET_VARIABLES = {"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "TMUX", "TMUX_PANE", "STY", "DOCKER_HOST",
                    "CONTAINER_HOST", "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS", "DISPLAY",
                    "WAYLAND_DISPLAY", "XAUTHORITY", "PULSE_SERVER", "KITTY_LISTEN_ON", "WEZTERM_UNIX_SOCKET",
                    "NVIM", "NVIM_LISTEN_ADDRESS", "VSCODE_IPC_HOOK_CLI", "ZELLIJ", "ZELLIJ_SESSION_NAME"}


# Variables whose names say they hold a credential (Codex CLI's default leaves out *KEY*, *SECRET*, *TOKEN*):
# an exported AWS_SECRET_ACCESS_KEY or GITHUB_TOKEN reached the model through `env | base64`; so did MYSQL_PWD,
# SSHPASS, GH_PAT, NPM_AUTH, BW_SESSION (it unlocks a Bitwarden vault), AZURE_STORAGE_CONNECTION_STRING, CI_JOB_JWT,
# SLACK_WEBHOOK_URL and SENTRY_DSN. The user passes one by name with PLAINAGENT_SANDBOX_ENV.
CREDENTIAL_NAME = re.compile(r"(?i)KEY|SECRET|TOKEN|PASS|CREDENTIAL|AUTH(?!OR)|_PWD$|(?:^|_)PAT(?:_|$)|JWT|WEBHOOK"
                             r"|CONN(?:ECTION)?_?STR|(?:^|_)DSN(?:_|$)|COOKIE|^(?:BW|OP)_SESSION")
# ... but these, which say where things are, not what opens them: the ssh agent's socket (without the network,
# namespaces.py's SOCKET_VARIABLES leaves it out too), the working folders. (AUTHOR: git's GIT_AUTHOR_NAME, and
# X's XAUTHORITY, a file's path.)
NOT_CREDENTIALS = {"SSH_AUTH_SOCK", "PWD", "OLDPWD", "GPG_AGENT_INFO", "KEYTIMEOUT"}
URL_PASSWORD = re.compile(r"://[^/\s:@]*:[^/\s@]+@")  # a URL with a password in it: DATABASE_URL, REDIS_URL


def withheld_variables(environ: dict[str, str] | os._Environ, passed: frozenset[str] = frozenset()) -> list[str]:
    """The variables commands are not given because their names say credentials, or their values are URLs with a
    password in them, but those the user passes (the API key is not among them: it is never passed, whatever the
    settings say)."""
    return sorted(name for name, value in environ.items() if name not in passed and name != "OPENAI_API_KEY" and (
        (CREDENTIAL_NAME.search(name) and name not in NOT_CREDENTIALS) or URL_PASSWORD.search(value)))


def command_environment(environ: dict[str, str] | os._Environ, ws: Workspace, network: bool = True) -> dict[str, str]:
    """The environment a command runs with: the user's, as their own shell in the workspace would have it. Not
    the key, nor any variable that holds it or whose name says it holds a credential (withheld_variables); without
    the network, none that leads to a daemon's socket; and not
    plainagent's own virtual environment (the Quick start activates it): the project's `python -m pytest` ran
    plainagent's Python, and a `pip install` would have gone there. A venv that is the workspace's own stays:
    that one is the project's."""
    withheld = set(withheld_variables(environ, ws.passed_env))
    env = {name: value for name, value in environ.items() if name != "OPENAI_API_KEY" and not ws.leaks(value)
           and (network or name not in SOCKET_VARIABLES) and name not in withheld}
    venv = env.get("VIRTUAL_ENV", "")
    if venv and os.path.realpath(venv) == os.path.realpath(sys.prefix) and not ws.contains(Path(venv).resolve()):
        scripts = os.path.join(venv, "Scripts" if WINDOWS else "bin")
        env["PATH"] = os.pathsep.join(entry for entry in env.get("PATH", "").split(os.pathsep)
                                      if os.path.realpath(entry) != os.path.realpath(scripts))
        for name in ("VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "PYTHONHOME"):
            env.pop(name, None)
    if own := project_venv(ws.root, environ):  # as an activated venv has it: its scripts first on PATH
        scripts = str(own / ("Scripts" if WINDOWS else "bin"))
        env["PATH"] = os.pathsep.join([scripts, *(entry for entry in env.get("PATH", "").split(os.pathsep)
                                                  if entry and entry != scripts)])
        env["VIRTUAL_ENV"] = str(own)
        for name in ("VIRTUAL_ENV_PROMPT", "PYTHONHOME"):
            env.pop(name, None)
    return env


def project_venv(root: Path, environ: dict[str, str] | os._Environ) -> Path | None:
    """The workspace's own virtual environment, which commands run with, as uv and VS Code pick it: `.venv` or
    `venv` at its root, with a pyvenv.cfg. None when it has none, or when plainagent was started with another
    project's venv active: the user chose that one (plainagent's own, which the Quick start may activate, is no
    choice of the project's)."""
    active = environ.get("VIRTUAL_ENV", "")
    if active and os.path.realpath(active) != os.path.realpath(sys.prefix):
        return None
    return next((root / name for name in VENV_NAMES if (root / name / "pyvenv.cfg").is_file()), None)


def start(command: str, cwd: Path, env: dict[str, str], confine: list[str] = ()) -> tuple[subprocess.Popen, int | None,
                                                                                         int | None]:
    """The command, started in a process group of its own; and, on POSIX, the agent's end of its tether (lifetime.py),
    which only this process holds: when the agent ends, however it ends, the kernel closes it; and the read end of
    the tether's report (how many processes it ended with the command). `confine`: the tether's arguments that put
    the command inside a kernel boundary (landlock.py)."""
    options = {"cwd": cwd, "env": env, "stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE,
               "stderr": subprocess.STDOUT}
    if WINDOWS:
        return subprocess.Popen(command, shell=True, creationflags=subprocess.CREATE_NEW_PROCESS_GROUP,
                                **options), None, None
    # No process group to kill (which is what the tether does), or no interpreter to run it with (Python embedded,
    # or one a command may have replaced, off Linux: programs.py).
    python = tether_python()
    if python is None or not hasattr(os, "killpg"):
        if confine:  # the tether is what enters the boundary: without it the command would run outside
            raise OSError(errno.ENOEXEC, "no Python to start the command inside the kernel sandbox with" if not
                          sys.executable else f"no Python to start the tether with: {sys.executable} lies in a folder "
                          "commands may write, and only Linux can run this process's own binary instead")
        return subprocess.Popen(command, shell=True, start_new_session=True, **options), None, None
    watch, tether = os.pipe()  # neither end is inherited, but the ones passed on (pass_fds)
    report, told = os.pipe()
    try:
        # argv[0] stays the name Python was started by, so the tether's Python finds its standard library as ours.
        process = subprocess.Popen([sys.executable or python, "-I", "-S", "-c", TETHER_SOURCE, str(watch), str(told),
                                    command, *confine], executable=python,
                                   pass_fds=(watch, told, *map(int, confine[:1])), start_new_session=True, **options)
    except BaseException:
        os.close(tether), os.close(report)
        raise
    finally:
        os.close(watch), os.close(told)
    return process, tether, report


def stop(process: subprocess.Popen, tether: int | None) -> None:
    """Stop a command before its end (a timeout, Ctrl-C): its tether, told by its pipe closing, kills everything
    below it (what left the process group too); then the group, and the tree on Windows."""
    if tether is not None:
        os.close(tether)
        try:
            process.wait(timeout=STOP_WAIT)
        except subprocess.TimeoutExpired:
            pass
    kill_tree(process)
    process.wait()


def ended_with(report: int | None) -> int:
    """How many processes the tether ended with the command (0 without a tether)."""
    if report is None:
        return 0
    try:
        with os.fdopen(report, "rb") as file:  # the tether has ended: its end is closed, so this does not wait
            return sum(int(line) for line in file.read(1000).split() if line.isdigit())
    except (OSError, ValueError):
        return 0


def wait(process: subprocess.Popen, timeout: float) -> None:
    """process.wait(timeout), woken the moment the process ends where Linux offers a pidfd (Popen's own wait
    polls, with sleeps that double up to 50 ms: a command done in 21 ms was seen at 36); on Windows it waits in
    slices: a Ctrl-C does not interrupt a wait there, and Python takes it only between two."""
    if WINDOWS:
        deadline = time.monotonic() + timeout
        while True:
            try:
                process.wait(timeout=min(WINDOWS_WAIT_SLICE, max(0.0, deadline - time.monotonic())))
                return
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    raise
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux, or before 5.3: Popen's own wait
        pidfd = None
    if pidfd is not None:
        try:
            if not select.select([pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(process.args, timeout)
        finally:
            os.close(pidfd)
    process.wait(timeout=timeout)


def failed(output: str) -> bool:
    """Whether run_command's result is of a command that failed: exited non-zero, or was killed."""
    return bool(STATUS_LINE.match(output)) and not output.startswith("exit code 0")


def exit_status(code: int) -> str:
    """How the command ended: its exit code, or (POSIX) the signal that ended it, which Popen gives as -N."""
    if code >= 0:
        return f"exit code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:  # a real-time signal, which has no name of its own
        return f"killed by signal {-code}"
    return f"killed by signal {-code} ({name})"


class HeadAndTail:
    """A command's output, bounded: the first and last `limit // 2` bytes, and a count of those between."""

    def __init__(self, limit: int):
        self.half = limit // 2
        self.head, self.tail, self.n_dropped = bytearray(), bytearray(), 0
        self.n_breaks, self.n_dropped_breaks, self.ends_in_break = 0, 0, True  # line breaks: all, and dropped

    def read_all(self, stream) -> None:
        while chunk := stream.read1(65536):
            self.n_breaks += chunk.count(b"\n")
            self.ends_in_break = chunk.endswith(b"\n")
            room = self.half - len(self.head)
            self.head += chunk[:room]
            self.tail += chunk[max(room, 0):]
            if len(self.tail) > self.half:
                excess = len(self.tail) - self.half
                self.n_dropped += excess
                self.n_dropped_breaks += self.tail.count(b"\n", 0, excess)
                del self.tail[:excess]

    def is_cut(self, limit: int) -> bool:
        """Whether text(..., limit) leaves something out."""
        return self.n_dropped > 0 or len(self.head) + len(self.tail) > limit

    def text(self, redact: Callable[..., str], limit: int | None = None) -> str:
        """The output kept, or its first and last `limit // 2` bytes, redacted by `redact` (Workspace.redact)
        before the cut is marked: a key the cut went through is blanked on both sides of it. The mark says how
        many bytes and lines were left out."""
        kept = self.head + self.tail  # with n_dropped bytes between head and tail, if any
        half = self.half if limit is None or not self.is_cut(limit) else limit // 2
        if not self.n_dropped and len(kept) <= 2 * half:
            return redact(kept.decode("utf-8", errors="replace"))
        head, tail = kept[:half], kept[len(kept) - half:]
        # Whole lines on both sides of the cut, unless a line is most of what is kept: "22" left of line 2222
        # would read as a line of its own.
        if (end := head.rfind(b"\n")) >= 3 * half // 4:
            head = head[:end + 1]
        if 0 <= (start := tail.find(b"\n")) < half // 4:
            tail = tail[start + 1:]
        n_dropped = self.n_dropped + len(kept) - len(head) - len(tail)
        n_dropped_breaks = self.n_dropped_breaks + kept.count(b"\n", len(head), len(kept) - len(tail))
        n_lines = self.n_breaks + (not self.ends_in_break)
        lines = f": about {n_dropped_breaks:,} of the {n_lines:,} lines" if n_dropped_breaks else ""
        head = redact(head.decode("utf-8", errors="replace"), cut_after=True)
        tail = redact(tail.decode("utf-8", errors="replace"), cut_before=True)
        return f"{head.removesuffix(chr(10))}\n[... {n_dropped:,} bytes dropped{lines} ...]\n{tail}"


CUT_MARK = re.compile(r"\n\[\.\.\. [\d,]+ bytes dropped: about [\d,]+ of the ([\d,]+) lines \.\.\.\]\n")


def cut_lines(result: str) -> tuple[int, int, int] | None:
    """How run_command's result was cut for the model, by its mark: (lines in all, the first seen, the last
    seen); None when it was not cut (or inside one long line)."""
    found = CUT_MARK.search(result)
    if found is None:
        return None
    head = result[:found.start()]
    n_first = head.count("\n") + 1 - bool(STATUS_LINE.match(head) and failed(head))
    return int(found[1].replace(",", "")), n_first, result[found.end():].count("\n") + 1


def kill_tree(process: subprocess.Popen) -> None:
    """Kill the command and everything it started: its process group on POSIX, its process tree on Windows."""
    if WINDOWS:  # no process group to signal: taskkill walks the tree down from the shell
        taskkill = find_program("taskkill")  # not one a command left in the workspace (Windows looks there first)
        try:
            if taskkill is not None:
                subprocess.run([taskkill, "/T", "/F", "/PID", str(process.pid)], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        except (OSError, subprocess.TimeoutExpired):  # no taskkill: the shell at least
            pass
        process.kill()  # nothing, when taskkill ended it
    elif hasattr(os, "killpg"):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:  # it ended on its own meanwhile
            pass
    else:  # a system without process groups: the shell only
        process.kill()
