"""End to end: the sandbox's promises as a user meets them, main() (in_process.py) against a local server."""

import os

from fake_endpoint import FakeEndpoint
from test_e2e_trust import agent_here, results_sent


def test_with_the_state_folder_in_the_workspace_the_session_is_not_searched(agent_home, tmp_path):
    """`-C ~`: the state folder (here tmp_path/state, conftest's XDG_STATE_HOME) is inside the workspace, and so
    is a --log transcript; the task's words are in both before the first tool runs."""
    script = ["Noted.", 'tool: search_files({"pattern": "zebra-42"})', "tool: list_files()", "Nothing found."]
    with FakeEndpoint(script) as endpoint:
        first = agent_here(agent_home, tmp_path, endpoint, "-C", str(tmp_path), "-p", "remember zebra-42")
        done = agent_here(agent_home, tmp_path, endpoint, "-C", str(tmp_path), "--log", "here.jsonl", "-p", "find zebra-42")
    assert first.returncode == 0 and done.returncode == 0, first.stderr + done.stderr
    assert [b"zebra-42" in path.read_bytes() for path in (tmp_path / "state/plainagent/sessions").iterdir()] == [True]
    assert b"zebra-42" in (tmp_path / "here.jsonl").read_bytes()
    search, listing = results_sent(endpoint, 2)[0]["output"], results_sent(endpoint, 3)[0]["output"]
    assert search.startswith("No matches for 'zebra-42' in . (") and "zebra-42" not in search.split("\n", 1)[0][20:]
    assert "here.jsonl (plainagent's own files: not read)" in search
    assert "here.jsonl  (plainagent's own files: not read)" in listing.splitlines()
    assert "state/plainagent/  (plainagent's own files: not read)" in listing.splitlines()


# --- the kernel boundary around commands (landlock.py), as a user in --yes mode meets it ---

import base64  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402
from test_e2e_trust import KEY, agent, allow, own_settings  # noqa: E402

from harness.commands.landlock import abi_version, namespaces_work  # noqa: E402

kernel = pytest.mark.skipif(not abi_version(), reason="this kernel offers no Landlock")


def command(line: str) -> str:
    return "tool: run_command(" + json.dumps({"command": line}) + ")"


def victims(tmp_path):
    """The home folder (conftest's HOME) with a .bashrc, and a folder next to the project."""
    for name in ("home/.bashrc", "neighbour/keep.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"keep\n")


@kernel
def test_in_yes_mode_a_command_that_would_remove_the_parent_folder_removes_nothing(agent_home, project, tmp_path):
    victims(tmp_path)
    script = [command("rm -rf ${PWD%/*}"), command("echo owned >> ~/.bashrc"), "Could not."]
    with FakeEndpoint(script) as endpoint:
        done = agent_here(agent_home, project, endpoint, "-p", "clean the parent build folder", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[1].startswith(f"commands: writes only inside the workspace and a private TMPDIR, "
                                                  f"no network, secrets unreadable (Landlock ABI {abi_version()}); ")
    assert (tmp_path / "home/.bashrc").read_bytes() == (tmp_path / "neighbour/keep.txt").read_bytes() == b"keep\n"
    assert agent_home.is_dir() and project.is_dir()  # what was in the workspace was its to remove; not the folder
    removal, append = results_sent(endpoint, 1)[0]["output"], results_sent(endpoint, 2)[0]["output"]
    assert "(plainagent: the kernel sandbox refused writing " in removal
    assert f"refused writing {tmp_path}/home/.bashrc: " in append and "only the user can allow it" in append


@kernel
def test_the_users_own_env_turns_the_sandbox_off_and_a_projects_cannot(agent_home, project, tmp_path):
    victims(tmp_path)
    script = [command("echo mine >> ../neighbour/keep.txt"), "Done."]
    with FakeEndpoint(script * 2) as endpoint:
        extra = own_settings(agent_home, endpoint, "PLAINAGENT_SANDBOX=off\n")
        done = agent_here(agent_home, project, endpoint, "-p", "append", "--yes", extra_env=extra)
        assert done.returncode == 0 and (tmp_path / "neighbour/keep.txt").read_bytes() == b"keep\nmine\n"
        assert done.stderr.splitlines()[1] == (f"commands: no kernel sandbox (PLAINAGENT_SANDBOX is off in "
                                               f"{agent_home / '.env'}); the guard rail only")
        (agent_home / ".env").unlink()
        (project / ".env").write_text("PLAINAGENT_SANDBOX=off\nPLAINAGENT_SANDBOX_NETWORK=on\n"
                                      "PLAINAGENT_SANDBOX_WRITE=/\n")
        allow(tmp_path, project / ".env")
        done = agent_here(agent_home, project, endpoint, "-p", "append", "--yes")
    assert done.returncode == 0 and (tmp_path / "neighbour/keep.txt").read_bytes() == b"keep\nmine\n"  # unchanged
    assert done.stderr.splitlines()[1].startswith("commands: writes only inside the workspace and a private TMPDIR, "
                                                  "no network")
    verdict = "not used: a project's .env may make plainagent ask more, never less"
    assert all(f"PLAINAGENT_SANDBOX{name} {verdict}" in done.stderr for name in ("", "_NETWORK", "_WRITE"))


def test_sandbox_says_what_commands_can_touch(agent_home, project, tmp_path):
    (tmp_path / "home/.ssh").mkdir(parents=True)
    with FakeEndpoint([]) as endpoint:
        done = agent_here(agent_home, project, endpoint, stdin="/sandbox\n")
    assert done.returncode == 0
    lines = done.stderr.splitlines()
    assert lines[1].startswith("commands: ") and lines.count(lines[1]) == 2  # said at the start and again
    shown = lines[lines.index(lines[1], 2):]
    if abi_version():
        shm = "/dev/shm (the session's own)" if namespaces_work() else "/dev/shm"
        assert shown[1:3] == [f"  may write in: {project}, TMPDIR (a folder made at the first command), {shm}",
                              f"  may not read: {tmp_path}/state/plainagent, ~/.ssh; "
                              "/dev but its common devices"]
        assert shown[3].startswith(f"  searched for secret files: {tmp_path}/home (as HOME)")
        assert shown[4].startswith("  and again after each command, where a folder changed (")
        assert shown[5] == ("  the workspace's own secret files (none found): " + (
            "unreadable to commands (bound over)" if namespaces_work() else "readable to commands here, the tools "
            "still refuse them (no namespaces: Landlock alone would forbid every new file beside them)") +
            "; PLAINAGENT_SANDBOX_READ=PATH lets one be read")
        assert shown[6] == "  network: none, localhost included"
        assert shown[7].startswith("  after a command: nothing it started ")
    assert shown[8 if abi_version() else 1] == ("  to change: PLAINAGENT_SANDBOX_WRITE=DIR, PLAINAGENT_SANDBOX_NETWORK=on, or "
                         f"PLAINAGENT_SANDBOX=off, in the .env beside agent.py ({agent_home / '.env'}) or the "
                         "environment; plainagent takes them up when it starts again (--resume goes on with this "
                         "session).")


# A seccomp program that answers Landlock's first call, create_ruleset (444), with ENOSYS, as a kernel before 5.13
# would; then agent.py runs in that process.
WITHOUT_LANDLOCK = """
import ctypes, runpy, struct, sys
program = b"".join(struct.pack("=HBBI", *op) for op in [
    (0x20, 0, 0, 0), (0x15, 0, 1, 444), (0x06, 0, 0, 0x00050000 | 38), (0x06, 0, 0, 0x7FFF0000)])
libc = ctypes.CDLL(None, use_errno=True)
buffer = ctypes.create_string_buffer(program)
fprog = struct.pack("HxxxxxxQ", len(program) // 8, ctypes.addressof(buffer))
assert libc.prctl(38, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
assert libc.prctl(22, ctypes.c_ulong(2), ctypes.c_char_p(fprog), ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
sys.argv = sys.argv[1:]
sys.path.insert(0, sys.argv[0].rsplit("/", 1)[0])  # as `python agent.py` has its folder on the path
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.skipif(sys.platform != "linux", reason="seccomp is Linux's")
def test_without_landlock_the_session_goes_on_and_says_so(install, project, tmp_path):
    (tmp_path / "without_landlock.py").write_text(WITHOUT_LANDLOCK)
    with FakeEndpoint([command("echo made > made.txt"), "Made."]) as endpoint:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
        env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": KEY})
        done = subprocess.run([sys.executable, str(tmp_path / "without_landlock.py"), str(install / "agent.py"), "-p",
                               "make it", "--yes"], cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[1] == "commands: no kernel sandbox here (Landlock unavailable); the guard rail only"
    assert (project / "made.txt").read_bytes() == b"made\n" and done.stdout == "Made.\n"


@pytest.mark.skipif(sys.platform != "linux", reason="/proc is Linux's")
@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_a_key_exported_before_the_start_is_not_in_the_agents_proc_environ(install, project, sandbox):
    """Landlock keeps a command out of the agent's memory, not out of /proc/PID/environ, which any process of the
    user may read (as root, a command without capabilities may not read root's with them): the agent wipes the
    key there at the start, sandbox or not."""
    read = command("base64 -w0 /proc/$(awk '{print $4}' /proc/$PPID/stat)/environ")  # the tether's parent: the agent
    with FakeEndpoint([read, "Read."]) as endpoint:
        done = agent(install, project, endpoint, "-p", "look", "--yes", extra_env={"PLAINAGENT_SANDBOX": sandbox})
    assert done.returncode == 0, done.stderr
    output = results_sent(endpoint, 1)[0]["output"]
    if sandbox == "on" and abi_version() and namespaces_work():  # in a PID namespace of its own: no agent in sight
        assert "No such file or directory" in output and KEY not in output
        return
    if sandbox == "on" and os.geteuid() == 0 and abi_version():
        assert "Permission denied" in output and KEY not in output
        return
    environ = base64.b64decode(output)
    assert b"OPENAI_BASE_URL=" in environ and b"OPENAI_API_KEY=****" in environ and KEY.encode() not in environ


def test_a_command_runs_without_plainagents_own_virtual_environment(install, project, tmp_path):
    """The Quick start activates plainagent's venv; the project's `python` must not be plainagent's (issue 26)."""
    venv = tmp_path / "plainagent-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    check = command('echo "venv=$VIRTUAL_ENV"; command -v python || echo "no python"')
    with FakeEndpoint([check, "Checked."]) as endpoint:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PLAINAGENT_"))}
        env.update({"OPENAI_BASE_URL": endpoint.url, "OPENAI_MODEL": "m", "OPENAI_API_KEY": KEY,
                    "VIRTUAL_ENV": str(venv), "PATH": f"{venv}/bin{os.pathsep}{os.environ['PATH']}"})  # as activate
        done = subprocess.run([str(venv / "bin" / "python"), str(install / "agent.py"), "-p", "check", "--yes"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    output = results_sent(endpoint, 1)[0]["output"]
    assert output.startswith("venv=\n") and str(venv) not in output


def test_a_virtual_environment_that_is_the_workspaces_own_stays(tmp_path, monkeypatch):
    from harness.commands.shell import command_environment
    from harness.files.workspace import Workspace

    project_venv = tmp_path / "project/.venv"
    project_venv.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(project_venv))
    environ = {"VIRTUAL_ENV": str(project_venv), "PATH": f"{project_venv}/bin:/usr/bin"}
    assert command_environment(environ, Workspace(tmp_path / "project")) == environ
    (tmp_path / "other").mkdir()
    outside = Workspace(tmp_path / "other")
    assert command_environment(environ, outside) == {"PATH": "/usr/bin"}


# --- variables whose names say credentials: not passed to commands (issue 33) ---


def test_credentials_exported_by_the_user_are_not_passed_to_commands_and_one_can_be_by_name(tmp_path):
    from harness.commands.shell import command_environment, withheld_variables
    from harness.files.workspace import Workspace

    environ = {"AWS_SECRET_ACCESS_KEY": "a", "GITHUB_TOKEN": "b", "ANTHROPIC_API_KEY": "c", "npm_config__authToken": "d",
               "PGPASSWORD": "e", "GOOGLE_APPLICATION_CREDENTIALS": "/k.json", "PATH": "/usr/bin", "HOME": "/h",
               "LANG": "C.UTF-8", "VIRTUAL_ENV": "/v", "PYTHONPATH": "/p", "TERM": "xterm"}
    (tmp_path / "project").mkdir()
    ws = Workspace(tmp_path / "project")
    assert command_environment(environ, ws) == {"PATH": "/usr/bin", "HOME": "/h", "LANG": "C.UTF-8",
                                                "VIRTUAL_ENV": "/v", "PYTHONPATH": "/p", "TERM": "xterm"}
    ws.passed_env = frozenset({"GITHUB_TOKEN"})
    assert command_environment(environ, ws)["GITHUB_TOKEN"] == "b" and "PGPASSWORD" not in command_environment(environ, ws)
    assert withheld_variables(environ, ws.passed_env) == ["ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY",
                                                          "GOOGLE_APPLICATION_CREDENTIALS", "PGPASSWORD",
                                                          "npm_config__authToken"]


def test_credentials_named_otherwise_or_in_a_url_are_not_passed_and_what_says_where_things_are_is(tmp_path):
    from harness.commands.shell import command_environment
    from harness.files.workspace import Workspace

    withheld = {"MYSQL_PWD": "a", "SSHPASS": "b", "BW_SESSION": "c", "OP_SESSION_my": "d", "GH_PAT": "e",
                "NPM_AUTH": "f", "HF_AUTH": "g", "TWINE_PASS": "h", "CI_JOB_JWT": "i", "DOCKER_AUTH_CONFIG": "{}",
                "SLACK_WEBHOOK_URL": "https://hooks.example/x", "SENTRY_DSN": "https://k@o1.ingest.example/1",
                "AZURE_STORAGE_CONNECTION_STRING": "AccountKey=x", "DATABASE_URL": "postgres://app:s3cret@db/app",
                "REDIS_URL": "redis://:pw@cache:6379/0", "AMQP_ADDR": "amqp://guest:guest@mq//"}
    kept = {"XAUTHORITY": "/run/user/1/xauth", "SSH_AUTH_SOCK": "/run/ssh.sock", "PWD": "/w", "OLDPWD": "/", "PATH":
            "/usr/bin", "PAGER": "less", "COMPOSE_PROJECT_NAME": "shop", "API_URL": "https://api.example/v1",
            "DATABASE_HOST": "db", "PIP_INDEX_URL": "https://pypi.org/simple", "PATCH_LEVEL": "2",
            "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "A"}
    (tmp_path / "project").mkdir()
    assert command_environment(withheld | kept, Workspace(tmp_path / "project")) == kept


def test_sandbox_lists_what_commands_are_not_given_and_only_the_users_own_env_passes_one(agent_home, project, tmp_path):
    script = [command("echo token=${GITHUB_TOKEN:-none} secret=${AWS_SECRET_ACCESS_KEY:-none}"), "Done."]
    environ = {"GITHUB_TOKEN": "ghp-e2e", "AWS_SECRET_ACCESS_KEY": "aws-e2e"}
    with FakeEndpoint(script) as endpoint:
        done = agent_here(agent_home, project, endpoint, "--yes", stdin="/sandbox\nshow me\n", extra_env=environ)
    assert done.returncode == 0, done.stderr
    assert results_sent(endpoint, 1)[0]["output"] == "token=none secret=none"
    assert ("  not passed to commands: AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN (their names say credentials; "
            "PLAINAGENT_SANDBOX_ENV=NAME passes one)") in done.stderr.splitlines()
    (project / ".env").write_text("PLAINAGENT_SANDBOX_ENV=AWS_SECRET_ACCESS_KEY\n")  # a project's: never
    with FakeEndpoint(script) as endpoint:
        extra = own_settings(agent_home, endpoint, "PLAINAGENT_SANDBOX_ENV=GITHUB_TOKEN\n")
        done = agent_here(agent_home, project, endpoint, "-p", "show me", "--yes", extra_env={**extra, **environ})
    assert done.returncode == 0, done.stderr
    assert results_sent(endpoint, 1)[0]["output"] == "token=ghp-e2e secret=none"


@kernel
def test_a_folder_to_write_in_that_does_not_exist_is_said_once_and_not_listed(agent_home, project, tmp_path):
    missing = tmp_path / "nonexistent"
    with FakeEndpoint([]) as endpoint:
        extra = own_settings(agent_home, endpoint, f"PLAINAGENT_SANDBOX_WRITE={missing}\n")
        done = agent_here(agent_home, project, endpoint, stdin="/sandbox\n", extra_env=extra)
    assert done.returncode == 0, done.stderr
    assert f"PLAINAGENT_SANDBOX_WRITE names {missing}, which is not a folder" in done.stderr
    assert f"  may write in: {project}, TMPDIR" in done.stderr and str(missing) not in done.stderr.split("may write in")[1]


# --- secret files wherever commands could read them, the workspace's own too (issue 33, items 2 and 3) ---

MARKER = "SECRET-MARKER-e2e-33"  # a value no shape tells apart: only the walls keep it


def secret_files(project, tmp_path) -> None:
    (project / ".env").write_text(f"GREETING={MARKER}\n")
    deep = tmp_path / "home/work/acme/api/.env"
    deep.parent.mkdir(parents=True)
    deep.write_text(f"GREETING={MARKER}\n")


def never_sent(endpoint) -> bool:
    sent = "".join(json.dumps(request.body) for request in endpoint.received)
    encoded = base64.b64encode(f"GREETING={MARKER}\n".encode()).decode()
    return MARKER not in sent and encoded[:16] not in sent and MARKER[::-1] not in sent


@kernel
def test_in_yes_mode_no_command_prints_the_workspaces_env_or_one_deep_in_home(install, project, tmp_path):
    secret_files(project, tmp_path)
    script = [command("cat .env"), command("cat ~/work/acme/api/.env | base64 -w0"), command("rev .env; xxd -p .env"),
              "Nothing to show."]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "show the settings", "--yes")
    assert done.returncode == 0, done.stderr
    assert never_sent(endpoint)
    first = results_sent(endpoint, 1)[0]["output"]
    if namespaces_work():
        assert first == ("exit code 1:\ncat: .env: Permission denied\n(plainagent: the kernel sandbox refused reading "
                         f"{project}/.env: the workspace's secret files (the names read_file refuses) are unreadable to "
                         "commands. Another shape of the command is refused the same way; only the user can allow it "
                         f"(PLAINAGENT_SANDBOX_READ={project}/.env in their settings, then a restart).)")


@kernel
def test_the_users_setting_lets_commands_read_one_and_a_projects_env_cannot(install, project, tmp_path):
    secret_files(project, tmp_path)
    (project / ".env").write_text(f"GREETING={MARKER}\nPLAINAGENT_SANDBOX_READ={project}/.env\n")  # a project's: never
    script = [command("grep -c GREETING .env"), "Done."]
    with FakeEndpoint(script) as endpoint:
        done = agent(install, project, endpoint, "-p", "count", "--yes")
    assert done.returncode == 0 and never_sent(endpoint), done.stderr
    assert results_sent(endpoint, 1)[0]["output"].startswith("exit code 2:\ngrep: .env: Permission denied") or \
        not namespaces_work()
    (project / ".env").write_text(f"GREETING={MARKER}\n")
    with FakeEndpoint(script) as endpoint:
        extra = own_settings(install, endpoint, f"PLAINAGENT_SANDBOX_READ={project}/.env\n")
        done = agent(install, project, endpoint, "-p", "count", "--yes", extra_env=extra)
    assert done.returncode == 0, done.stderr
    assert results_sent(endpoint, 1)[0]["output"] == "1"


@kernel
def test_sandbox_says_what_was_searched_for_secret_files_and_what_not(agent_home, project, tmp_path):
    secret_files(project, tmp_path)
    with FakeEndpoint([]) as endpoint:
        done = agent_here(agent_home, project, endpoint, stdin="/sandbox\n")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    searched = next(line for line in lines if line.startswith("  searched for secret files: "))
    assert searched.startswith(f"  searched for secret files: {tmp_path}/home (as HOME)") and "all of them" in searched
    assert any(line.startswith("  and again after each command, where a folder changed (") and
               "not searched: the rest of the file system (other disks, /mnt, /media), nor folders named" in line
               for line in lines)
    assert "~/work/acme/api/.env" in next(line for line in lines if line.startswith("  may not read: "))
    own = next(line for line in lines if line.startswith("  the workspace's own secret files (.env): "))
    assert own.endswith("; PLAINAGENT_SANDBOX_READ=PATH lets one be read")
    assert ("unreadable to commands (bound over)" if namespaces_work() else "readable to commands here") in own
