"""The kernel boundary around commands (harness/commands/landlock.py), on this kernel: what a command may not touch,
whatever its shape, and the ordinary work it still does.

Every target is under tmp_path, HOME included (conftest). The attack strings are Python strings, never a shell
here-document. Each write shape runs against a fresh copy of the same tree, and the tree outside the workspace
must be byte for byte what it was."""

import base64
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from harness.commands import landlock, seccomp, secret_search
from harness.commands.landlock import Boundary
from harness.commands.namespaces import namespaces_work
from harness.commands.refusal_notes import refusal_note
from harness.commands.secret_search import hidden_paths
from harness.commands.shell import run_shell
from harness.common.directories import config_dir, state_dir
from harness.files.workspace import Workspace

ABI = landlock.abi_version()
pytestmark = pytest.mark.skipif(not ABI, reason="this kernel offers no Landlock")
SECRET = b"SECRET-MARKER-7f3a\n"
KEY = "sk-test-landlock-0123456789"
NUMBERS = seccomp.SYSCALLS.get(os.uname().machine.lower(), {})  # keyctl and bpf, to call them by number
PYTHON = f"{sys.executable} -I -S"  # without site-packages: a quick start for a shape that needs only the stdlib


class Tree:
    """A home folder with secrets and a toolchain, plainagent's own folders, a victim next to the workspace."""

    def __init__(self, tmp_path: Path, network: bool = False, abi: int = ABI, namespaces: bool | None = None):
        self.root, self.home, self.workspace = tmp_path, tmp_path / "home", tmp_path / "project"
        self.program, self.victim = tmp_path / "program", tmp_path / "victim"
        files = {
            "home/.bashrc": b"export PATH=$PATH\n", "home/.ssh/id_ed25519": SECRET, "home/.ssh/config": SECRET,
            "home/.aws/credentials": SECRET, "home/.aws/config": b"[default]\nregion = x\n", "home/.netrc": SECRET,
            "home/.config/gh/hosts.yml": SECRET, "home/.cargo/bin/hello": b"#!/bin/sh\necho hello from cargo\n",
            "home/.cache/pip/note": b"cached\n", "home/code/other/.env": SECRET,
            "program/agent.py": b"print('plainagent')\n", "program/.env": b"OPENAI_API_KEY=" + SECRET,
            "state/plainagent/sessions/s.jsonl": SECRET, "config/plainagent/AGENTS.md": SECRET,
            "victim/notes.txt": b"keep me\n", "victim/sub/deep.txt": b"keep me too\n", "project/app.py": b"x = 1\n",
        }
        for name, data in files.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_bytes(data)
        (self.home / ".cargo/bin/hello").chmod(0o755)
        own = [self.program / ".env", state_dir(), config_dir()]
        self.boundary = Boundary(self.workspace, hidden_paths(self.home, self.workspace, own)[0],
                                 network=network, abi=abi, namespaces=namespaces)
        self.ws = Workspace(self.workspace, secret=KEY, boundary=self.boundary)

    def run(self, command: str, timeout: int = 20) -> str:
        return run_shell(self.ws, command.format(program=self.program, home=self.home, python=PYTHON,
                                                 pytest=sys.executable), timeout, self.boundary)

    def outside(self) -> dict[str, bytes | str]:
        """Every path under tmp_path but the workspace: a file's bytes, a link's target, a folder."""
        seen = {}
        for folder, dirs, names in os.walk(self.root):
            if Path(folder) == self.workspace or self.workspace in Path(folder).parents:
                continue
            for name in dirs + names:
                path = Path(folder, name)
                seen[str(path)] = os.readlink(path) if path.is_symlink() else "dir" if path.is_dir() else \
                    path.read_bytes()
        return seen


# Shapes that change what lies outside the workspace. No deny rule is needed for any of them to fail.
WRITES = [
    "rm -rf ${{PWD%/*}}",
    "rm -rf ~",
    "cd .. && rm -rf victim",
    "echo ../victim | xargs rm -rf",
    'f() {{ rm -rf "$1"; }}; f ../victim',
    "alias zap='rm -rf'\nzap ../victim",
    "a=r; b=m; $a$b -rf ../victim",
    "IFS=,; c=rm,-rf,../victim; $c",
    'ln -s "$(command -v rm)" zap && ./zap -rf ../victim',
    f"echo {base64.b64encode(b'rm -rf ../victim').decode()} | base64 -d | sh",
    "{python} -c 'import shutil; shutil.rmtree(\"../victim\")'",
    "perl -e 'unlink glob(\"../victim/*\")'",
    "awk 'BEGIN {{ system(\"rm -rf ../victim\") }}'",
    "mv ../victim ./taken",
    "mv ../victim/notes.txt .",
    "find .. -name notes.txt -delete",
    "echo owned >> ~/.bashrc",
    "mkdir -p ~/.ssh && echo 'ssh-ed25519 AAAA attacker' >> ~/.ssh/authorized_keys",
    "echo x > ../next-to-the-workspace.txt",
    "echo 'print(\"changed\")' > {program}/agent.py",
    "sed -i s/plainagent/owned/ {program}/agent.py",
    "truncate -s 0 ../victim/notes.txt",
    "{python} -c 'import os; os.truncate(\"../victim/notes.txt\", 0)'",
    ": > ../victim/notes.txt",
    "ln ../victim/notes.txt hard && echo changed >> hard",
    "git -C ../victim init -q",
    "cp -r . ../copy",
    "mkfifo ../fifo",
    "ln -s /etc/passwd ../link",
    "sh -c 'cd ~ && rm -rf .'",
    "{python} -c 'import os; os.rename(\"../victim\", \"../gone\")'",
    "dd if=/dev/zero of=../victim/notes.txt bs=1 count=1 conv=notrunc",
]


@pytest.mark.parametrize("command", WRITES)
def test_a_command_cannot_change_anything_outside_the_workspace(tmp_path, command):
    tree = Tree(tmp_path)
    before = tree.outside()
    output = tree.run(command)
    assert tree.outside() == before, output
    assert (tree.victim / "notes.txt").read_bytes() == b"keep me\n"


READS = [
    "cat ~/.ssh/id_ed25519",
    "base64 ~/.aws/credentials",
    "cat ~/.netrc ~/.ssh/config",
    "cat ~/.config/gh/hosts.yml",
    "cat ~/code/other/.env",
    "cat {program}/.env",
    "cat ../state/plainagent/sessions/*",
    "cat ../config/plainagent/AGENTS.md",
    "{python} -c 'print(open(\"{home}/.ssh/id_ed25519\").read())'",
    "cp ~/.ssh/id_ed25519 ./k; cat k",
    "ln -s ~/.ssh/id_ed25519 k && cat k",
    "ln ~/.netrc k && cat k",
    "tar cf - ~/.ssh ~/.aws 2>/dev/null | base64",
    "find ~ .. -type f -exec cat {{}} + 2>/dev/null | base64",
    "grep -r SECRET ~ .. 2>/dev/null",
]


@pytest.mark.parametrize("command", READS)
def test_a_command_cannot_read_a_secret_or_plainagents_own_files(tmp_path, command):
    output = Tree(tmp_path).run(command)
    assert SECRET.decode().strip() not in output and base64.b64encode(SECRET).decode()[:16] not in output, output


def test_what_is_not_secret_under_home_stays_readable_and_runs(tmp_path):
    tree = Tree(tmp_path)
    output = tree.run("cat ~/.bashrc ~/.aws/config ~/.cache/pip/note && ~/.cargo/bin/hello && ls -A ~")
    assert output.split("\n")[:5] == ["export PATH=$PATH", "[default]", "region = x", "cached", "hello from cargo"]
    assert ".ssh" in output.split("\n")[5:]  # a hidden folder is still listed, its files unread


ORDINARY = [
    ("echo hi > a.txt && cat a.txt && mkdir -p d/e && mv a.txt d/e/ && cp -r d d2 && rm -r d d2 && ln -s x y && "
     "rm y && truncate -s 0 app.py && echo done", "hi\ndone"),
    ("git init -q && git add app.py && git -c user.email=a@b.c -c user.name=n commit -qm first && git log --oneline "
     "| wc -l", "1"),
    ('t=$(mktemp) && echo x > "$t" && cat "$t" && rm "$t" && test -d "$(mktemp -d)" && echo "$TMPDIR" | grep -c '
     'plainagent-', "x\n1"),
    ("{python} -c 'import tempfile; f = tempfile.NamedTemporaryFile(); f.write(b\"x\"); print(\"ok\")'", "ok"),
    ("{python} -c 'import multiprocessing as m; print(m.Pool(2).map(abs, [-1, -2]))'", "[1, 2]"),
    ("echo x > /dev/null && head -c 4 /dev/urandom | wc -c && ls /usr/bin >/dev/null && echo ok", "4\nok"),
    ("printf 'def test_one():\\n    assert 1\\n' > test_x.py && {pytest} -m pytest -q -p no:cacheprovider "
     "--disable-plugin-autoload test_x.py | tail -1 | cut -c1-8",
     "1 passed"),
    ("sleep 5 & kill $!; wait; sh -c 'kill -TERM $$'; echo $?", "Terminated\n143"),  # its own processes: yes
]


@pytest.mark.parametrize("command, expected", ORDINARY)
def test_ordinary_work_in_the_workspace_still_works_inside(tmp_path, command, expected):
    assert Tree(tmp_path).run(command) == expected


class Listener:
    """A TCP and a UDP socket on 127.0.0.1 that count what reaches them."""

    def __init__(self):
        self.tcp, self.udp, self.reached = socket.socket(), socket.socket(type=socket.SOCK_DGRAM), []
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen()
        self.udp.bind(("127.0.0.1", 0))
        self.port, self.udp_port = self.tcp.getsockname()[1], self.udp.getsockname()[1]
        for target in (self.accept, self.receive):
            threading.Thread(target=target, daemon=True).start()

    def accept(self):
        try:
            while True:
                self.reached.append(self.tcp.accept()[0].recv(100))
        except OSError:
            pass

    def receive(self):
        try:
            while True:
                self.reached.append(self.udp.recv(100))
        except OSError:
            pass

    def close(self):
        self.tcp.close()
        self.udp.close()


NETWORK = [
    "{python} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port})).sendall(b\"key\")'",
    "{python} -c 'import socket; socket.socket(type=socket.SOCK_DGRAM).sendto(b\"key\", (\"127.0.0.1\", {udp}))'",
    "{python} -c 'import socket; socket.socket(socket.AF_INET6).connect((\"::1\", {port}))'",
    "{python} -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:{port}/\", timeout=2)'",
    "perl -MIO::Socket::INET -e 'IO::Socket::INET->new(\"127.0.0.1:{port}\") or die \"$@\"; print \"in\"'",
    "curl -sS http://127.0.0.1:{port}/",
    "git ls-remote http://127.0.0.1:{port}/x.git",
    "{python} -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); print(\"bound\")'",
]


@pytest.mark.parametrize("command", NETWORK)
def test_a_command_reaches_no_host_and_listens_on_no_port(tmp_path, command):
    listener = Listener()
    try:
        output = Tree(tmp_path).run(command.replace("{port}", str(listener.port)).replace("{udp}", str(listener.udp_port)),
                                    timeout=10)
    finally:
        listener.close()
    assert listener.reached == [] and "bound" not in output
    assert output.startswith("exit code ") and "(plainagent: the kernel sandbox refused the network: commands have " \
        "no network, localhost included." in output


def test_with_the_network_turned_on_a_command_connects(tmp_path):
    listener = Listener()
    try:
        output = Tree(tmp_path, network=True).run(NETWORK[0].replace("{port}", str(listener.port)))
        listener.close()
    finally:
        listener.close()
    assert output == "(no output)" and listener.reached == [b"key"]


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "Landlock alone"])
def test_a_command_cannot_signal_or_read_the_agent_it_runs_under(tmp_path, namespaces):
    """The agent here is the test's own process: outside the domain, so neither killed nor read; inside a PID
    namespace of its own, not even seen."""
    if namespaces and not namespaces_work():
        pytest.skip("this kernel makes no namespaces for this user")
    tree = Tree(tmp_path, namespaces=namespaces)
    output = tree.run(f"kill -0 {os.getpid()}; head -c 1 /proc/{os.getpid()}/mem; cat /proc/{os.getpid()}/fd/0")
    if namespaces:
        assert "kill: No such process" in output and output.count("No such file or directory") == 2, output
    else:
        assert output.count("Operation not permitted") == 1 and output.count("Permission denied") == 2, output


def test_a_refused_command_tells_the_model_why_and_who_may_allow_it(tmp_path):
    tree = Tree(tmp_path)
    note = f"the kernel sandbox refused writing {tree.home}/.bashrc: commands may write only inside the workspace"
    output = tree.run("echo owned >> ~/.bashrc")
    assert output.startswith("exit code 2:\n") and note in output
    assert "only the user can allow it (PLAINAGENT_SANDBOX_WRITE=DIR in their settings, then a restart)" in output
    assert f"refused writing {tree.victim}/" in tree.run("rm -rf ../victim")
    read = tree.run("cat ~/.ssh/id_ed25519")
    assert f"refused reading {tree.home}/.ssh/id_ed25519: commands may not read secret files" in read
    assert "(PLAINAGENT_SANDBOX=off in their settings" in read
    signal = Tree(tmp_path / "alone", namespaces=False).run(f"kill -0 {os.getpid()}")  # seen, but out of reach
    assert "refused a call on another process: commands may not look into, signal or change processes they did " \
        "not start" in signal
    assert "refused the network" in tree.run("{python} -c 'import socket; socket.create_connection((\"127.0.0.1\", 9))'")
    # A refusal inside the workspace is not the boundary's doing (a file the user made read-only): no note.
    assert refusal_note(tree.boundary, f"touch: cannot touch '{tree.workspace}/ro/x': Permission denied") is None
    assert refusal_note(tree.boundary, "rm: cannot remove 'ro/x': Permission denied") is None
    assert "kernel sandbox" not in tree.run("echo fine")
    # A command killed at its timeout: the network is named only where the command is one that reaches it.
    killed = "killed after 60 s (timeout); the output so far"
    assert refusal_note(tree.boundary, "", killed, "sleep 100") is None
    assert "refused the network, if that is what it waited for" in refusal_note(tree.boundary, "", killed,
                                                                                "pip install requests")


@pytest.mark.parametrize("abi", range(1, ABI + 1))
def test_every_abi_up_to_this_kernels_is_enforced_as_far_as_it_goes(tmp_path, abi):
    tree = Tree(tmp_path, abi=abi)
    output = tree.run("echo x >> ../victim/notes.txt; rm ../victim/sub/deep.txt; echo in > app.py; cat app.py")
    assert "\nin\n(plainagent: the kernel sandbox refused writing " in output
    truncated = tree.run("{python} -c 'import os; os.truncate(\"../victim/notes.txt\", 0)'") == "(no output)"
    # Landlock handles truncate(2) from ABI 3 on, and the start line says so; the namespaces' read-only mounts too
    assert truncated == (abi < 3 and not tree.boundary.namespaces)
    assert ("truncating a file anywhere" in tree.boundary.summary()) == (abi < 3 and not tree.boundary.namespaces)
    assert tree.outside()[str(tree.victim / "sub/deep.txt")] == b"keep me too\n"
    assert f"(Landlock ABI {abi})" in tree.boundary.summary()


def test_the_start_line_says_what_holds():
    workspace = Path("/w")
    assert Boundary(workspace, [], abi=7).summary() == (
        "commands: writes only inside the workspace and a private TMPDIR, no network, secrets unreadable (Landlock "
        "ABI 7)")
    assert Boundary(workspace, [], [Path("/c/go")], network=True, abi=4).summary() == (
        "commands: writes only inside the workspace, /c/go and a private TMPDIR, network allowed, secrets unreadable "
        "(Landlock ABI 4)")
    assert Boundary(workspace, [], abi=0).summary() == (
        "commands: no kernel sandbox here (Landlock unavailable); the guard rail only")


def test_secrets_are_found_under_home_but_not_in_the_workspace(tmp_path):
    tree = Tree(tmp_path)
    (tree.workspace / ".env").write_bytes(SECRET)  # the project's: the command's to read, like every file there
    hidden = set(tree.boundary.hidden)
    assert {tree.home / ".ssh", tree.home / ".aws/credentials", tree.home / ".netrc",
            tree.home / ".config/gh/hosts.yml", tree.home / "code/other/.env", tree.program / ".env"} <= hidden
    assert tree.home / ".aws/config" not in hidden and tree.workspace / ".env" not in hidden


def test_the_key_the_environment_gave_is_wiped_from_proc_environ(tmp_path):
    import subprocess

    script = ("import os, sys; sys.path.insert(0, sys.argv[1]); from harness.commands.landlock import "
              "wipe_from_environ_block as wipe; print(wipe('OPENAI_API_KEY'), os.environ['OPENAI_API_KEY'] == "
              f"'{KEY}', b'{KEY}' in open('/proc/self/environ', 'rb').read())")
    done = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent.parent)], capture_output=True, text=True,
                          env={**os.environ, "OPENAI_API_KEY": KEY}, timeout=20)
    assert done.stdout == "True True False\n", done.stderr  # gone from the file, kept in Python's copy


def test_a_workspace_holding_the_keys_env_keeps_it_from_commands(tmp_path):
    """plainagent's own folder as the workspace: its .env stays unread and whole; the folder takes no new file
    (Landlock could not grant that without granting the .env), its files and subfolders work as ever."""
    tree = Tree(tmp_path)
    (tree.program / "sub").mkdir()
    own = [tree.program / ".env", state_dir(), config_dir()]
    tree.boundary = Boundary(tree.program, hidden_paths(tree.home, tree.program, own)[0])
    tree.ws = Workspace(tree.program, secret=KEY, boundary=tree.boundary)
    assert f"(no new file in {tree.program}: it holds what commands may not read)" in tree.boundary.summary()
    for command in ["cat .env", "base64 .env", "cp .env sub/x; cat sub/x", "rm .env", "mv .env sub/", ": > .env"]:
        output = tree.run(command)
        assert "SECRET-MARKER" not in output and "U0VDUkVU" not in output, (command, output)
    assert (tree.program / ".env").read_bytes() == b"OPENAI_API_KEY=" + SECRET
    assert tree.run("echo y > sub/new.txt && cat sub/new.txt && echo z >> agent.py && tail -1 agent.py") == "y\nz"
    assert f"the kernel sandbox refused writing {tree.program}/new.txt: " in tree.run("echo x > new.txt")


def test_with_the_home_folder_as_workspace_its_secrets_stay_hidden(tmp_path):
    tree = Tree(tmp_path)
    tree.boundary = Boundary(tree.home, hidden_paths(tree.home, tree.home, [state_dir(), config_dir()])[0])
    tree.ws = Workspace(tree.home, secret=KEY, boundary=tree.boundary)
    for command in READS[:5]:
        assert "SECRET-MARKER" not in tree.run(command), command
    assert tree.run("echo more >> .bashrc && mkdir -p .cargo/new && echo x > .cargo/new/f && cat .cargo/new/f") == "x"
    # ~/code holds another project's .env: it takes no new folder either, and the note says where it was refused
    assert f"refused writing {tree.home}/code/new: " in tree.run("mkdir code/new")
    output = tree.run("rm -rf .ssh")
    assert (tree.home / ".ssh/id_ed25519").read_bytes() == SECRET
    assert f"(plainagent: the kernel sandbox refused reading {tree.home}/.ssh/config: commands may not read " in output


def test_what_is_hidden_but_not_there_shuts_no_folder(tmp_path):
    tree = Tree(tmp_path)
    boundary = Boundary(tree.workspace, [tree.workspace / ".env", tree.workspace / "state"])
    tree.ws = Workspace(tree.workspace, boundary=boundary)
    assert "no new file" not in boundary.summary()
    assert run_shell(tree.ws, "echo x > new.txt && cat new.txt", 10, boundary) == "x"


def test_the_search_for_secrets_looks_in_dot_folders_first_and_says_when_it_stopped(tmp_path, monkeypatch):
    tree = Tree(tmp_path)
    (tree.home / "Pictures").mkdir()
    for n in range(60):
        (tree.home / "Pictures" / f"{n}.jpg").touch()
    monkeypatch.setattr(secret_search, "HOME_MAX_ENTRIES", 50)
    hidden, searched = hidden_paths(tree.home, tree.workspace, [])
    assert not searched and {tree.home / ".ssh", tree.home / ".aws/credentials", tree.home / ".netrc"} <= set(hidden)
    assert "secrets unreadable where found (the home folder holds over 50 entries: the search stopped there)" in \
        Boundary(tree.workspace, hidden, searched=searched).summary()
    import shutil

    shutil.rmtree(tree.home / "Pictures")
    assert hidden_paths(tree.home, tree.workspace, [])[1] is True  # 50 is not reached without the pictures


def test_in_a_folder_of_a_repository_or_a_worktree_commits_still_work(tmp_path):
    Tree(tmp_path)  # the home folder and a victim beside the repository
    git = "git -c user.email=a@b.c -c user.name=n"
    repository = tmp_path / "repo"
    (repository / "package").mkdir(parents=True)
    (repository / "top.txt").write_text("top\n")
    import subprocess

    subprocess.run(f"git init -q && {git} commit -q --allow-empty -m root && git worktree add -q ../wt", shell=True,
                   cwd=repository, check=True)
    for workspace in (repository / "package", tmp_path / "wt"):
        boundary = Boundary(workspace, [])
        ws = Workspace(workspace, boundary=boundary)
        out = run_shell(ws, f"echo x > f && git add f && {git} commit -qm here && git log --oneline | wc -l", 10, boundary)
        assert out == "2", out
        assert f", its repository's {repository / '.git'}" in boundary.summary()
        assert "refused writing" in run_shell(ws, "echo y >> ../top.txt", 10, boundary)  # the rest stays outside
    assert (repository / "top.txt").read_text() == "top\n"


def test_a_command_holds_no_capability_and_changes_no_other_process(tmp_path):
    """As root too: uid 0 keeps its files' ownership, not the powers (a BPF tracer, a device node, an immutable
    file); and no process but the command's own is reniced, pinned or given limits (the agent hung at nofile=3)."""
    tree = Tree(tmp_path)
    assert tree.run("grep -h Cap /proc/self/status | cut -f2 | sort -u") == "0000000000000000"
    for command in ["mknod disk b 7 0", f"prlimit --pid {os.getpid()} --nofile=3:3", f"renice -n 5 -p {os.getpid()}",
                    f"taskset -p 1 {os.getpid()}", "chattr +i app.py", "hostname plainagent-was-here",
                    *[f"{{python}} -c 'import ctypes; exit(ctypes.CDLL(None).syscall({number}, 0, -3, 0) + 1)'"
                      for number in (NUMBERS["keyctl"], NUMBERS["bpf"]) if NUMBERS]]:
        assert tree.run(command).startswith("exit code "), command
    assert tree.run("nice -n 5 echo a && taskset -c 0 echo b && prlimit --nofile=100:100 echo c && ionice -c 3 echo d"
                    ) == "a\nb\nc\nd"  # on itself: as ever
    assert os.sched_getaffinity(0) and os.getpriority(os.PRIO_PROCESS, 0) == 0


def test_a_secret_behind_a_linked_folder_is_hidden_where_it_really_is(tmp_path):
    tree = Tree(tmp_path)
    (tmp_path / "data/app").mkdir(parents=True)
    (tmp_path / "data/app/.env").write_bytes(SECRET)
    (tree.home / "projects").symlink_to(tmp_path / "data")
    tree.boundary = Boundary(tree.workspace, hidden_paths(tree.home, tree.workspace, [])[0])
    tree.ws = Workspace(tree.workspace, boundary=tree.boundary)
    assert tmp_path / "data/app/.env" in tree.boundary.hidden
    for command in ["cat ~/projects/app/.env", f"cat {tmp_path}/data/app/.env"]:
        assert "SECRET-MARKER" not in tree.run(command)


@pytest.mark.parametrize("folder", ["~", "~/.local", ".."])
def test_a_folder_the_user_lets_commands_write_in_never_opens_what_is_hidden_in_it(tmp_path, folder):
    """PLAINAGENT_SANDBOX_WRITE=~/.local (the README's advice once) held the state folder: its transcripts and
    its record of allowed .env files stay unread and whole; its other entries are the command's."""
    tree = Tree(tmp_path)
    state = tree.home / ".local/state/plainagent"
    (tree.home / ".local/lib").mkdir(parents=True)
    state.mkdir(parents=True)
    (state / "allowed-env").write_bytes(SECRET)
    own = [tree.program / ".env", state]
    extra = Path(os.path.normpath(tree.workspace / os.path.expanduser(folder)))
    tree.boundary = Boundary(tree.workspace, hidden_paths(tree.home, tree.workspace, own)[0], [extra])
    tree.ws = Workspace(tree.workspace, boundary=tree.boundary)
    for command in ["cat ~/.local/state/plainagent/allowed-env", "echo '{{}}' >> ~/.local/state/plainagent/allowed-env",
                    "cat ~/.ssh/id_ed25519", f"base64 {tree.program}/.env", "rm -rf ~/.local/state"]:
        output = tree.run(command)
        assert "SECRET-MARKER" not in output and "U0VDUkVU" not in output, command
    assert (state / "allowed-env").read_bytes() == SECRET and (tree.program / ".env").exists()
    assert tree.run("echo x > ~/.local/lib/x && cat ~/.local/lib/x") == "x"


def test_a_hard_link_or_a_move_across_the_wall_is_explained(tmp_path):
    tree = Tree(tmp_path)
    for command in ["ln ../victim/notes.txt here", "mv ../victim/notes.txt .", "ln -s ../victim/notes.txt l && echo x >> l"]:
        assert f"refused writing {tree.victim}/notes.txt: " in tree.run(command), command


def test_a_temp_folder_left_by_a_killed_session_goes_at_the_next_start(tmp_path, monkeypatch):
    import subprocess
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()  # its number belongs to no process now
    for pid in (gone.pid, os.getpid()):
        (tmp_path / f"plainagent-{pid}-abc").mkdir()
    (tmp_path / "plainagent-program").mkdir()  # not a session's
    tree = Tree(tmp_path)
    tree.run("true")
    assert sorted(path.name for path in tmp_path.glob("plainagent-*")) == sorted([
        f"plainagent-{os.getpid()}-abc", "plainagent-program", tree.boundary.tmpdir.parent.name])


def test_in_a_shut_folder_what_is_made_later_is_the_commands_too(tmp_path):
    """plainagent's own folder as the workspace: a file edit_file creates there after the first command."""
    tree = Tree(tmp_path)
    tree.boundary = Boundary(tree.program, [tree.program / ".env"])
    tree.ws = Workspace(tree.program, boundary=tree.boundary)
    assert tree.run("cat agent.py") == "print('plainagent')"
    (tree.program / "notes.md").write_text("made by the agent\n")
    assert tree.run("cat notes.md && echo more >> notes.md && tail -1 notes.md") == "made by the agent\nmore"


@pytest.mark.parametrize("dot_git", ["gitdir: {victim}\n", "gitdir: ..\n", "gitdir: g\n"])
def test_a_git_file_a_command_wrote_opens_no_folder_to_the_next_session(tmp_path, dot_git):
    """`.git` in the workspace is a command's to write; a worktree's is believed only when git's own file in the
    folder it names (outside, where no command writes) names it back."""
    tree = Tree(tmp_path)
    (tree.workspace / "g").mkdir()
    (tree.workspace / "g/commondir").write_text(str(tree.victim))
    (tree.workspace / ".git").write_text(dot_git.format(victim=tree.victim))
    boundary = Boundary(tree.workspace, [])
    assert boundary.git == [] and "repository" not in boundary.summary()
    assert "refused writing" in run_shell(Workspace(tree.workspace, boundary=boundary), "rm -rf ../victim", 10, boundary)


def test_another_repositorys_config_is_hidden_but_the_workspaces_own_is_read(tmp_path):
    import subprocess

    tree = Tree(tmp_path)
    for repository in (tree.home / "proj", tree.home / "mono"):
        repository.mkdir()
        subprocess.run(["git", "init", "-q", str(repository)], check=True)
        (repository / ".git/config").write_bytes(b"[remote \"o\"]\n\turl = https://SECRET-MARKER@x/\n")
    workspace = tree.home / "mono/pkg"
    workspace.mkdir()
    boundary = Boundary(workspace, hidden_paths(tree.home, workspace, [])[0])
    ws = Workspace(workspace, boundary=boundary)
    assert tree.home / "proj/.git/config" in boundary.hidden and tree.home / "mono/.git/config" not in boundary.hidden
    assert "SECRET-MARKER" not in run_shell(ws, "cat ~/proj/.git/config", 10, boundary)
    assert run_shell(ws, "git config remote.o.url", 10, boundary) == "https://SECRET-MARKER@x/"  # its own: git works


def test_no_attribute_acl_or_inode_flag_is_set_and_cp_a_still_works(tmp_path):
    """Landlock covers content and names, not extended attributes (an ACL that gives another user a file) nor
    inode flags (`chattr +a`): seccomp refuses setting them, as a file system without them would."""
    tree = Tree(tmp_path)
    victim = tree.victim / "notes.txt"
    for command in [f"{{python}} -c 'import os; os.setxattr(\"{victim}\", \"user.x\", b\"1\")'",
                    f"{{python}} -c 'import os; os.setxattr(\"{victim}\", \"system.posix_acl_access\", b\"\\\\x02\")'",
                    "chattr +A app.py", f"chattr +a {victim}"]:
        assert tree.run(command).startswith("exit code "), command
    assert os.listxattr(victim) == []
    assert tree.run("cp -a app.py copy.py && cp -p app.py copy2.py && cat copy.py") == "x = 1"


@pytest.mark.skipif(os.geteuid() != 0, reason="as a user, System V objects of the user's own stay in reach")
def test_as_root_a_command_sees_no_system_v_object_of_another_process(tmp_path):
    import subprocess

    queue = subprocess.run(["ipcmk", "-Q"], capture_output=True, text=True, check=True).stdout.split()[-1]
    try:
        output = Tree(tmp_path).run(f"ipcs -q | grep -c {queue}; ipcrm -q {queue}")
    finally:
        subprocess.run(["ipcrm", "-q", queue], capture_output=True)
    assert output.startswith("exit code ") and output.split("\n")[1] == "0"


def test_a_forged_worktree_in_a_folder_named_worktrees_opens_nothing(tmp_path):
    """`gitdir: .` in a workspace whose parent is called worktrees: every file the check reads is the command's."""
    workspace = tmp_path / "worktrees" / "feat"
    workspace.mkdir(parents=True)
    (workspace / ".git").write_text("gitdir: .\n")
    (workspace / "gitdir").write_text(".git\n")
    (workspace / "commondir").write_text("../..\n")
    assert Boundary(workspace, []).git == []


def test_what_is_hidden_is_hidden_where_it_really_is(tmp_path, monkeypatch):
    """A home folder, the key's .env and the state folder reached through links, and a relative --log."""
    tree = Tree(tmp_path)
    (tmp_path / "keystore").mkdir()
    (tmp_path / "keystore/plainagent.env").write_bytes(b"OPENAI_API_KEY=" + SECRET)
    (tree.program / ".env").unlink()
    (tree.program / ".env").symlink_to(tmp_path / "keystore/plainagent.env")
    (tmp_path / "homelink").symlink_to(tree.home)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs/session.jsonl").write_bytes(SECRET)
    monkeypatch.chdir(tmp_path / "logs")
    hidden, _ = hidden_paths(tmp_path / "homelink", tree.workspace, [tree.program / ".env", Path("session.jsonl")])
    tree.boundary = Boundary(tree.workspace, hidden)
    tree.ws = Workspace(tree.workspace, boundary=tree.boundary)
    for command in ["cat ~/.ssh/id_ed25519", f"cat {tmp_path}/homelink/.netrc", f"base64 {tree.program}/.env",
                    f"cat {tmp_path}/keystore/plainagent.env", f"cat {tmp_path}/logs/session.jsonl"]:
        output = tree.run(command)
        assert "SECRET-MARKER" not in output and "U0VDUkVU" not in output, command


def test_no_inode_attribute_changes_through_newer_calls_or_io_uring(tmp_path):
    """file_setattr (Linux 6.17), FS_IOC_SETVERSION on a file open for reading, and io_uring, which would do
    both without the calls seccomp refuses: refused with the network on too."""
    tree = Tree(tmp_path, network=True)
    victim = tree.victim / "notes.txt"
    calls = [f"{{python}} -c 'import ctypes; exit(ctypes.CDLL(None, use_errno=True).syscall(469, -100, b\"{victim}\", "
             "0, 0, 0) + 1)'",
             f"{{python}} -c 'import fcntl, struct; fcntl.ioctl(open(\"{victim}\"), 0x40087602, struct.pack(\"q\", 7))'",
             "{python} -c 'import ctypes; exit(ctypes.CDLL(None).syscall(425, 8, bytes(120)) + 1)'"]
    for command in calls if NUMBERS else []:
        assert tree.run(command).startswith("exit code "), command
    assert tree.outside()[str(victim)] == b"keep me\n"


def test_a_command_whose_boundary_cannot_be_entered_does_not_run(tmp_path):
    """The tether ends with 126 and a line rather than run the command outside the walls the start line promised
    (here the descriptor it is handed is /dev/null, no ruleset)."""
    from harness.commands.shell import start

    not_a_ruleset = os.open(os.devnull, os.O_RDONLY)
    try:
        process, tether, report = start(f"touch {tmp_path / 'ran'}", tmp_path, dict(os.environ),
                                        [str(not_a_ruleset), seccomp.seccomp_program(False).hex()])
        output = process.communicate(timeout=20)[0].decode()
        os.close(tether), os.close(report)
    finally:
        os.close(not_a_ruleset)
    assert process.returncode == 126 and not (tmp_path / "ran").exists()
    assert output.startswith("plainagent: the command was not run: the kernel sandbox could not be entered (Landlock: ")


def test_connecting_to_a_socket_file_by_path_is_handled_from_abi_9_without_the_network():
    """Linux 7.1's LANDLOCK_ACCESS_FS_RESOLVE_UNIX (1 << 16): granted where commands write only, so a socket
    outside is the kernel's to refuse; not handled with the network on (sockets come back), nor before ABI 9."""
    assert landlock.handled_fs(9, unix=True) & landlock.RESOLVE_UNIX == 1 << 16
    assert landlock.handled_fs(9, unix=False) & landlock.RESOLVE_UNIX == 0
    assert landlock.handled_fs(8, unix=True) == landlock.handled_fs(7) == (1 << 16) - 1
    assert landlock.RESOLVE_UNIX & landlock.FILE_RIGHTS and not landlock.RESOLVE_UNIX & landlock.READ
