"""What a command leaves behind stays inside the walls (lifetime.py, landlock.py's Boundary.walls), on this kernel,
both ways: in namespaces of its own where the kernel makes them, and without them (Boundary(namespaces=False), and a
process whose unshare(2) really fails).

Every target is under tmp_path, HOME included (conftest); attack strings are Python strings, never a shell
here-document. Processes are found by a marker on their command line: inside a PID namespace a command knows
itself by other numbers."""

import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from test_landlock import ABI, PYTHON, Tree
from test_shell import alive, host_pid, wait_for

from harness.commands import landlock, seccomp
from harness.commands.namespaces import close, namespaces_work
from harness.commands.shell import SOCKET_VARIABLES, command_environment
from harness.files.workspace import Workspace

pytestmark = pytest.mark.skipif(not ABI, reason="this kernel offers no Landlock")
NAMESPACES = bool(ABI) and namespaces_work()
needs_namespaces = pytest.mark.skipif(not NAMESPACES, reason="this kernel makes no namespaces for this user")
BOTH = pytest.mark.parametrize("namespaces", [pytest.param(True, marks=needs_namespaces), False],
                               ids=["namespaces", "subreaper"])
GIT = "git -c user.name=t -c user.email=t@t -c init.defaultBranch=main -c commit.gpgsign=false"


def sleeper(marker: str, seconds: int = 30) -> str:
    """A process that sleeps with `marker` on its command line (sh -c stays the shell: dash does not exec)."""
    return f"sh -c 'sleep {seconds}' {marker}"


def running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes() and alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


# --- 2. a command's processes end with it ---


@BOTH
@pytest.mark.parametrize("shape", [
    "nohup {sleeper} >/dev/null 2>&1 &",
    "setsid {sleeper} &",
    "( setsid {sleeper} & ) ; true",  # a double fork: its parent is gone before the command ends
    "{python} -c 'import os, subprocess; os.fork() or (os.setsid(), subprocess.Popen({argv}))'",
])
def test_nothing_a_command_starts_runs_on_after_it(tmp_path, namespaces, shape):
    marker = f"outlive-{uuid.uuid4().hex}"
    argv = ["sh", "-c", "sleep 30", marker]
    output = Tree(tmp_path, namespaces=namespaces).run(shape.replace("{sleeper}", sleeper(marker)).replace(
        "{argv}", json.dumps(argv)))
    assert running(marker) == []
    assert re.search(r"^\(plainagent: \d+ background process(es were| was) ended with the command: nothing a command "
                     r"starts outlives it\. A server is the user's to start in their terminal\.\)$", output), output


@BOTH
def test_a_timeout_ends_what_left_the_process_group(tmp_path, namespaces):
    marker = f"timeout-{uuid.uuid4().hex}"
    tree = Tree(tmp_path, namespaces=namespaces)
    output = landlock_run(tree, f"setsid {sleeper(marker)} & echo started; sleep 30", timeout=0.5)
    assert output.startswith("killed after 0.5 s (timeout); the output so far:\nstarted")
    assert wait_for(lambda: running(marker) == [], seconds=5)


def landlock_run(tree: Tree, command: str, timeout: float) -> str:
    from harness.commands.shell import run_shell

    return run_shell(tree.ws, command, timeout, tree.boundary)


@BOTH
def test_waiting_for_its_own_background_work_is_ordinary(tmp_path, namespaces):
    output = Tree(tmp_path, namespaces=namespaces).run("(sleep 0.1; echo child) & wait; echo parent")
    assert output == "child\nparent"  # no note: nothing was left to end


@BOTH
def test_a_fork_loop_is_ended_and_the_agent_goes_on(tmp_path, namespaces):
    marker = f"loop-{uuid.uuid4().hex}"
    tree = Tree(tmp_path, namespaces=namespaces)
    output = landlock_run(tree, f"for i in $(seq 150); do setsid {sleeper(marker, 25)} & done; sleep 30", timeout=2)
    assert output.startswith("killed after 2 s (timeout)")
    assert wait_for(lambda: running(marker) == [], seconds=10)
    thread = threading.Thread(target=lambda: None)  # the agent can still start a thread (it could not: issue 31)
    thread.start(), thread.join()
    assert tree.run("echo still here") == "still here"


# --- 6. metadata outside: modes, times, owners ---


@needs_namespaces
def test_outside_the_workspace_no_mode_or_time_changes(tmp_path):
    tree = Tree(tmp_path)
    before = {path: (path.stat().st_mode, path.stat().st_mtime_ns) for path in
              [tree.home / ".bashrc", tree.victim / "notes.txt", tree.victim, tmp_path]}
    output = tree.run("chmod 666 ~/.bashrc; chmod 777 ../victim; touch -d 2001-01-01 ../victim/notes.txt; "
                      "chmod 777 ..; chown 0 ../victim/notes.txt")
    assert output.count("Read-only file system") == 5, output
    assert "(plainagent: the kernel sandbox refused writing " in output
    assert "outside, nothing changes, not even a file's mode or times" in output
    assert {path: (path.stat().st_mode, path.stat().st_mtime_ns) for path in before} == before
    assert tree.run("chmod 600 app.py && stat -c %a app.py") == "600"  # inside, as ever


def test_without_namespaces_the_start_line_says_modes_outside_may_change(tmp_path):
    tree = Tree(tmp_path, namespaces=False)
    assert tree.boundary.afterwards() == (
        "after a command: what it left running is ended (a subreaper); what it changed that acts later (git's "
        "hooks and config, AGENTS.md) put back and asked about; the repository's history kept; no namespaces here "
        "(this kernel or its settings refuse them to this user), so modes and times outside the workspace may "
        "change; no Unix socket can be used at all")


# --- 5. Unix sockets outside, without the network ---


class SocketServer:
    """A Unix socket server in a file outside the workspace (a Docker daemon's, an ssh-agent's): who reached it."""

    def __init__(self, path: Path):
        self.path, self.reached = path, []
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen()
        self.server.settimeout(0.05)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.done.is_set():
            try:
                connection, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            self.reached.append(connection.recv(100))
            connection.close()

    def close(self):
        self.done.set()
        self.thread.join()
        self.server.close()


CONNECT = "{python} -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{path}\"); s.sendall(b\"in\")'"


# A socket server run apart: in a network namespace of its own (a daemon this /proc/net/unix does not list), or
# bound by a relative name after a chdir (listed without its folder). It prints "ready", then counts what reaches it.
SERVE_APART = """
import os, socket, sys
os.chdir(sys.argv[1])
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[2])
server.listen()
print("ready", flush=True)
connection, _ = server.accept()
print("reached", flush=True)
"""


@needs_namespaces
@pytest.mark.parametrize("apart", ["relative name", "another network namespace"])
def test_a_socket_the_kernel_lists_elsewhere_or_by_a_relative_name_is_covered_too(tmp_path, apart):
    tree = Tree(tmp_path)
    folder = tmp_path / "srv/a/b/c/d/e"  # deeper than the walk of /tmp goes
    folder.mkdir(parents=True)
    name = "rel.sock" if apart == "relative name" else str(folder / "other-netns.sock")
    prefix = ["unshare", "-n"] if apart == "another network namespace" else []
    server = subprocess.Popen([*prefix, sys.executable, "-c", SERVE_APART, str(folder), name], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert server.stdout.readline() == "ready\n"
        path = folder / "rel.sock" if apart == "relative name" else Path(name)
        output = tree.run(CONNECT.replace("{path}", str(path)))
    finally:
        server.kill()
        reached = server.communicate()[0]
    assert output.startswith("exit code 1:") and "ConnectionRefusedError" in output, output
    assert "reached" not in reached


@BOTH
def test_no_unix_socket_outside_is_reached_without_the_network(tmp_path, namespaces):
    tree = Tree(tmp_path, namespaces=namespaces)
    server = SocketServer(tmp_path / "docker.sock")
    try:
        output = tree.run(CONNECT.replace("{path}", str(server.path)))
        with_network = Tree(tmp_path / "on", network=True, namespaces=namespaces).run(
            CONNECT.replace("{path}", str(server.path)))
    finally:
        server.close()
    refusal = "ConnectionRefusedError" if namespaces else "PermissionError"
    assert output.startswith("exit code 1:") and refusal in output, output
    assert with_network == "(no output)" and server.reached == [b"in"]  # the user's network: sockets come back


@needs_namespaces
@pytest.mark.parametrize("where", ["app.sock", "$TMPDIR/app.sock"])
def test_a_socket_a_command_makes_for_itself_works(tmp_path, where):
    serve = ("{python} -c 'import os, socket, sys; path = os.path.expandvars(sys.argv[1]); s = socket.socket("
             "socket.AF_UNIX); s.bind(path); s.listen(); c = socket.socket(socket.AF_UNIX); c.connect(path); "
             "c.sendall(b\"hi\"); print(s.accept()[0].recv(2).decode())' " + where)
    assert Tree(tmp_path).run(serve) == "hi"


@BOTH
def test_socketpair_and_multiprocessing_work(tmp_path, namespaces):
    tree = Tree(tmp_path, namespaces=namespaces)
    pair = "{python} -c 'import socket; a, b = socket.socketpair(); a.sendall(b\"ok\"); print(b.recv(2).decode())'"
    assert tree.run(pair) == "ok"
    pool = ("{python} -c 'import multiprocessing as m\nif __name__ == \"__main__\":\n    with m.get_context(\"METHOD\")"
            ".Pool(1) as pool: print(pool.apply(abs, (-3,)))'")
    assert tree.run(pool.replace("METHOD", "fork")) == "3"
    forkserver = tree.run(pool.replace("METHOD", "forkserver"))  # Python 3.14's default: a Unix socket of its own
    assert (forkserver == "3") if namespaces else ("PermissionError" in forkserver), forkserver


def test_variables_that_lead_to_a_daemon_are_not_passed_without_the_network(tmp_path):
    ws = Workspace(tmp_path)
    environ = {"SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1", "TMUX": "/tmp/tmux-0/default,1,0", "DOCKER_HOST": "unix:///x",
               "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/0/bus", "DISPLAY": ":0", "PATH": "/usr/bin",
               "HOME": str(tmp_path)}
    assert command_environment(environ, ws, network=False) == {"PATH": "/usr/bin", "HOME": str(tmp_path)}
    assert command_environment(environ, ws, network=True) == environ
    assert {"SSH_AUTH_SOCK", "TMUX", "DOCKER_HOST", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY"} <= SOCKET_VARIABLES


# --- 3. what acts later, in the workspace's repository and the one around it: read-only to commands ---


def repository(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(f"{GIT} init -q && echo one > one.txt && {GIT} add one.txt && {GIT} commit -qm one", shell=True,
                   cwd=folder, check=True)
    (folder / ".git/hooks/pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (folder / ".git/hooks/pre-commit").chmod(0o755)
    return folder


@needs_namespaces
@pytest.mark.parametrize("attack", [
    "echo 'touch {marker}' >> .git/hooks/pre-commit",
    "git config core.fsmonitor 'touch {marker}'",
    "git config alias.st '!touch {marker}'",
    "git config core.hooksPath .husky",
    "printf '[filter \"x\"]\\n\\tclean = touch {marker}\\n' >> .git/config",
    "rm .git/config",
    "mv .git/hooks .git/old-hooks",
    "echo 'touch {marker}' > AGENTS.md",
])
def test_a_command_cannot_change_what_git_or_an_agent_runs_later(tmp_path, attack):
    tree = Tree(tmp_path)
    repository(tree.workspace)
    (tree.workspace / "AGENTS.md").write_text("Be brief.\n")
    watched = [tree.workspace / ".git/config", tree.workspace / ".git/hooks/pre-commit", tree.workspace / "AGENTS.md"]
    before = [path.read_bytes() for path in watched]
    marker = tmp_path / "ran-later"
    output = tree.run(attack.replace("{marker}", str(marker)))
    assert output.startswith("exit code "), output
    assert [path.read_bytes() for path in watched] == before
    subprocess.run(f"{GIT} status && {GIT} st; {GIT} commit -qam two --allow-empty", shell=True,
                   cwd=tree.workspace, capture_output=True)
    assert not marker.exists()


@needs_namespaces
def test_the_note_for_gits_config_says_no_setting_opens_it(tmp_path):
    tree = Tree(tmp_path)
    repository(tree.workspace)
    output = tree.run("git config core.pager less; git config user.name me")
    config = os.path.realpath(tree.workspace / ".git/config")
    assert f"(plainagent: the kernel sandbox refused writing {config}: git's hooks and config" in output
    assert "the user can run it in their own terminal.)" in output and "PLAINAGENT_SANDBOX" not in output


@needs_namespaces
@pytest.mark.parametrize("package", ["", "packages/app"])  # the workspace's repository, or the one around it
def test_ordinary_git_work_goes_on(tmp_path, package):
    top = repository(tmp_path / "repo")
    tree = Tree(tmp_path)
    workspace = top / package
    workspace.mkdir(parents=True, exist_ok=True)
    tree.boundary = landlock.Boundary(workspace, tree.boundary.hidden)
    tree.ws = Workspace(workspace, boundary=tree.boundary)
    work = (f"echo a > a.txt && {GIT} add a.txt && {GIT} commit -qm a && {GIT} checkout -qb side && echo b > b.txt "
            f"&& {GIT} add b.txt && {GIT} commit -qm b && {GIT} checkout -q main && {GIT} merge -q --no-edit side && "
            f"{GIT} branch topic && echo c > c.txt && {GIT} stash -u -q && {GIT} stash pop -q && {GIT} checkout -q "
            f"topic && {GIT} rebase -q main >/dev/null && {GIT} log --format=%s")
    assert tree.run(work).endswith("\nb\na\none")


# --- /dev/shm and the session's temp folder: gone when the session ends ---


@BOTH
def test_what_a_command_leaves_in_dev_shm_or_tmpdir_goes_with_the_session(tmp_path, namespaces):
    tree = Tree(tmp_path, namespaces=namespaces)
    name = f"plainagent-test-{uuid.uuid4().hex}"
    assert tree.run(f"echo x > /dev/shm/{name} && mkdir -p $TMPDIR/d/e && chmod 000 $TMPDIR/d/e $TMPDIR/d && "
                    "echo made") == "made"
    assert os.path.exists(f"/dev/shm/{name}") == (not namespaces)  # in the namespaces, the session's own /dev/shm
    session = tree.boundary.tmpdir.parent
    close(tree.boundary.held, session, tree.boundary.shm_before)
    assert not session.exists() and not os.path.exists(f"/dev/shm/{name}")


# --- both paths: where unshare(2) really fails ---


REFUSE_UNSHARE = r'''
import ctypes, struct, sys
sys.path.insert(0, sys.argv[1])
from harness.commands import seccomp
numbers = {"x86_64": 272, "aarch64": 97}
libc = ctypes.CDLL(None, use_errno=True)
op = seccomp.op
program = b"".join([op(0x20, 0), op(0x15, numbers[__import__("os").uname().machine], 0, 1),
                    op(0x06, 0x00050000 | 1), op(0x06, 0x7FFF0000)])  # unshare: EPERM; everything else allowed
buffer = ctypes.create_string_buffer(program)
fprog = struct.pack("HxxxxxxQ", len(program) // 8, ctypes.addressof(buffer))
assert libc.prctl(38, 1, 0, 0, 0) == 0 and libc.prctl(22, 2, ctypes.c_char_p(fprog), 0, 0) == 0
from harness.commands import landlock
from harness.commands.shell import run_shell
from harness.files.workspace import Workspace
from pathlib import Path
workspace = Path(sys.argv[2])
boundary = landlock.Boundary(workspace, [])
print(boundary.namespaces)
print(boundary.afterwards())
print(run_shell(Workspace(workspace, boundary=boundary), "setsid sh -c 'sleep 30' " + sys.argv[3] + " & echo ran", 20,
                boundary))
'''


@pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"), reason="the filter is written for these")
def test_where_the_kernel_refuses_namespaces_the_session_goes_on_and_says_so(tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    marker = f"refused-{uuid.uuid4().hex}"
    done = subprocess.run([sys.executable, "-c", REFUSE_UNSHARE, str(Path(__file__).parent.parent), str(workspace),
                           marker], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    namespaces, afterwards, output = done.stdout.split("\n", 2)
    assert namespaces == "False" and "no namespaces here" in afterwards
    assert re.match(r"ran\n\(plainagent: \d+ background process(es were| was) ended with the command", output)
    assert running(marker) == []


# --- an ordinary user, where unprivileged user namespaces work ---


NOBODY = r'''
import os, sys
sys.path.insert(0, sys.argv[1])
from harness.commands import landlock
from harness.commands.shell import run_shell
from harness.files.workspace import Workspace
from pathlib import Path
workspace = Path(sys.argv[2])
boundary = landlock.Boundary(workspace, [])
print(boundary.namespaces)
run = lambda line: run_shell(Workspace(workspace, boundary=boundary), line, 20, boundary)
print(run("echo in > inside.txt && cat inside.txt; chmod 777 " + sys.argv[3] + "; setsid sh -c 'sleep 30' "
          + sys.argv[4] + " & echo $(id -u)"))
'''


@needs_namespaces
@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="needs root and setpriv")
def test_as_an_ordinary_user_the_same_walls_hold(tmp_path):
    import tempfile

    checkout = Path(__file__).resolve().parent.parent
    if not all(os.stat(folder).st_mode & stat.S_IXOTH for folder in [checkout, *checkout.parents]):
        pytest.skip("the checkout is not readable by an ordinary user here")
    top = Path(tempfile.mkdtemp(prefix="plainagent-nobody-"))  # tmp_path's folders are root's alone
    try:
        workspace, victim = top / "project", top / "victim"
        workspace.mkdir(), victim.mkdir()
        os.chown(workspace, 65534, 65534), os.chown(victim, 65534, 65534)
        os.chmod(top, 0o755)
        marker = f"nobody-{uuid.uuid4().hex}"
        python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable  # root's may be shut
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", python,
                               "-I", "-c", NOBODY, str(checkout), str(workspace), str(victim), marker],
                              capture_output=True, text=True, timeout=60, cwd=top, env={"PATH": os.environ["PATH"],
                                                                               "HOME": str(top)})
        if "Permission denied" in done.stderr and "python" in done.stderr.lower():
            pytest.skip("this Python is not an ordinary user's to run")
        assert done.returncode == 0, done.stderr
        namespaces, output = done.stdout.split("\n", 1)
        assert namespaces == "True"
        assert output.startswith(f"in\nchmod: changing permissions of '{victim}': Read-only file system\n65534\n")
        assert stat.S_IMODE(victim.stat().st_mode) != 0o777 and running(marker) == []
    finally:
        subprocess.run(["rm", "-rf", str(top)])


def test_seccomp_refuses_unix_sockets_only_where_no_namespace_tells_them_apart():
    assert seccomp.seccomp_program(False, unix=True) != seccomp.seccomp_program(False, unix=False)
    assert seccomp.seccomp_program(True, unix=False) == seccomp.seccomp_program(True, unix=True)
