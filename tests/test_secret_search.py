"""The search for secret files commands may not read (harness/commands/secret_search.py): where it looks, at any
depth, what it finds, its walk in a child, and its refresh before each command.

Every root is under tmp_path: the other users' homes and the system's secrets are looked for under a `top` the
test gives (tmp_path), never the real /home or /etc; HOME is tmp_path/home (conftest)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands.secret_search import SecretSearch, places

SECRET = b"SECRET-MARKER-5e1d\n"
ORDINARY = ["work/acme/api/app.py", "work/acme/api/.env.example", "go/src/github.com/acme/svc/main.go",
            "work/acme/api/node_modules/x/.env", ".bashrc", "etc/ssh/ssh_host_ed25519_key.pub", "etc/passwd",
            "home/alice/proj/readme.md", "srv/app/index.html", "work/acme/api/.git/HEAD"]
DEEP = ["work/acme/api/.env", "go/src/github.com/acme/svc/.env", "work/acme/api/.git/config",
        ".local/share/fish/fish_history", ".config/gh/hosts.yml", "a/b/c/d/e/f/g/h/server.key"]


def make(root: Path, names: list[str], data: bytes = SECRET) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def test_the_whole_home_folder_is_searched_at_any_depth(tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "project"
    make(home, DEEP), make(home, ORDINARY[:5], b"x\n"), workspace.mkdir()
    search = SecretSearch(places(home, workspace, top=tmp_path / "none", as_root=False))
    search.walk()
    assert sorted(search.outside()) == sorted(home / name for name in DEEP)
    assert search.inside() == [] and search.stopped == []


def test_as_root_other_homes_the_systems_secrets_and_deployed_apps_are_searched(tmp_path):
    top, home, workspace = tmp_path, tmp_path / "root", tmp_path / "srv/app"  # root's own home, and a served app
    victims = ["home/alice/.aws/credentials", "home/alice/proj/.env", "home/bob/.local/share/fish/fish_history",
               "etc/shadow", "etc/gshadow", "etc/ssh/ssh_host_ed25519_key", "etc/ssh/ssh_host_rsa_key",
               "srv/other/.env", "opt/service/config/.env", "var/www/site/wp-config.php", "root/.bash_history"]
    make(top, victims), make(top, ORDINARY, b"x\n"), make(top, ["srv/app/.env", "srv/app/certs/tls.key"])
    search = SecretSearch(places(home, workspace, top=top, as_root=True))
    search.walk()
    assert sorted(search.outside()) == sorted(top / name for name in victims)
    assert sorted(search.inside()) == [workspace / ".env", workspace / "certs/tls.key"]  # bound over, not Landlock's
    assert places(home, workspace, top=top, as_root=False).system == []  # a user reads none of these anyway
    described = search.described()
    assert described[0] == (f"searched for secret files: {home} (as HOME), the other homes ({top}/home/alice, "
                            f"{top}/home/bob), {top}/srv, {top}/opt, {top}/var/www, and {top}/etc's shadow files and "
                            f"SSH host keys: {len(search.folders):,} folders, all of them")


def test_a_secret_made_during_the_session_is_found_before_the_next_command(tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "project"
    make(home, ORDINARY[:3], b"x\n"), workspace.mkdir()
    search = SecretSearch(places(home, workspace, top=tmp_path / "none", as_root=False))
    search.walk()
    assert search.outside() == []
    make(home, ["work/acme/api/.env"])  # a new file in a folder searched: its folder's time changed
    (tmp_path / "moved/deep/er").mkdir(parents=True)
    make(tmp_path, ["moved/deep/er/.netrc"])
    (tmp_path / "moved").rename(home / "work/moved")  # a whole new tree moved in
    make(workspace, [".env"])  # and the workspace's own
    search.refresh()
    assert sorted(search.outside()) == [home / "work/acme/api/.env", home / "work/moved/deep/er/.netrc"]
    assert search.inside() == [workspace / ".env"]
    (home / "work/acme/api/.env").unlink()
    search.refresh()
    assert search.outside() == [home / "work/moved/deep/er/.netrc"]


def test_the_walk_runs_in_a_child_and_its_answer_is_collected(tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "project"
    make(home, DEEP), workspace.mkdir()
    search = SecretSearch(places(home, workspace, top=tmp_path / "none", as_root=False))
    search.start()
    assert search.collect(wait=20) is True
    alone = SecretSearch(places(home, workspace, top=tmp_path / "none", as_root=False))
    alone.walk()
    assert sorted(search.outside()) == sorted(alone.outside()) and search.folders == alone.folders


def test_a_walk_past_its_budget_says_where_it_stopped(tmp_path, monkeypatch):
    from harness.commands import secret_search

    home, workspace = tmp_path / "home", tmp_path / "project"
    make(home, [f"pictures/{n}.jpg" for n in range(60)], b"x\n"), make(home, [".netrc"]), workspace.mkdir()
    monkeypatch.setattr(secret_search, "SEARCH_MAX_ENTRIES", 50)
    search = SecretSearch(places(home, workspace, top=tmp_path / "none", as_root=False))
    search.walk()
    assert search.outside() == [home / ".netrc"] and search.stopped == [home]  # dot names first
    assert search.described()[0].endswith(f"; not all of {home}: the search stopped at 50 entries")


def test_the_paths_the_user_lets_commands_read_are_not_hidden(tmp_path):
    home, workspace = tmp_path / "home", tmp_path / "project"
    make(home, DEEP[:2]), make(workspace, [".env", "tests/fixtures/server.key"])
    search = SecretSearch(places(home, workspace, top=tmp_path / "none", as_root=False),
                          passed=[workspace / ".env", home / "go"])
    search.walk()
    assert search.outside() == [home / "work/acme/api/.env"] and search.inside() == [workspace / "tests/fixtures/server.key"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_linked_folder_is_searched_where_it_leads(tmp_path):
    home, workspace, data = tmp_path / "home", tmp_path / "project", tmp_path / "data"
    make(data, ["projects/x/.env"]), home.mkdir(), workspace.mkdir()
    (home / "projects").symlink_to(data / "projects")
    (home / "loop").symlink_to(home)
    search = SecretSearch(places(home, workspace, top=tmp_path / "none", as_root=False))
    search.walk()
    assert search.outside() == [data / "projects/x/.env"]


# --- the boundary with the search: commands on this kernel (landlock.py, lifetime.py) ---

from harness.commands import landlock  # noqa: E402
from harness.commands.landlock import Boundary  # noqa: E402
from harness.commands.secret_search import hidden_paths  # noqa: E402
from harness.commands.shell import run_shell  # noqa: E402
from harness.files.workspace import Workspace  # noqa: E402

kernel = pytest.mark.skipif(not landlock.abi_version(), reason="this kernel offers no Landlock")
with_namespaces = pytest.mark.skipif(not landlock.abi_version() or not landlock.namespaces_work(),
                                     reason="this kernel makes no namespaces for this user")
# Ways to print a file, as an attacker tried them (issue 33)
PRINTS = ["cat {path}", "base64 -w0 {path}", "xxd -p {path}", "rev {path}", "cp {path} copy.txt; cat copy.txt",
          "python3 -c 'import sys; print(open(sys.argv[1]).read())' {path}", "ln {path} hard; cat hard",
          "mv {path} moved; cat moved", "tar cf - {path} | tar xOf -"]
ENCODED = ("SECRET-MARKER", "U0VDUkVULU1BUktFUi", "5345435245542d4d41524b4552", "REKRAM-TERCES")


def boundary_with_search(tmp_path: Path, namespaces: bool | None = None, passed: list[Path] = ()):
    home, workspace = tmp_path / "home", tmp_path / "project"
    make(home, DEEP), make(workspace, [".env", "config/.env.local"]), make(workspace, ["app.py"], b"x = 1\n")
    search = SecretSearch(places(home, workspace, top=tmp_path / "none", as_root=False), passed=passed)
    search.start()
    boundary = Boundary(workspace, hidden_paths(home, workspace, [])[0], namespaces=namespaces, search=search)
    return boundary, Workspace(workspace, boundary=boundary), home, workspace


@kernel
@pytest.mark.parametrize("path", ["~/work/acme/api/.env", "~/go/src/github.com/acme/svc/.env",
                                  "~/work/acme/api/.git/config", "~/.local/share/fish/fish_history"])
def test_a_secret_deep_in_the_home_folder_is_not_read_by_a_command(tmp_path, path):
    boundary, ws, home, _ = boundary_with_search(tmp_path)
    for shape in PRINTS[:4]:
        output = run_shell(ws, shape.format(path=path), 20, boundary)
        assert not any(marker in output for marker in ENCODED), (shape, output)
    assert run_shell(ws, "cat app.py; ls -a ~/work/acme/api", 20, boundary) == "x = 1\n.\n..\n.env\n.git"  # listed


@with_namespaces
def test_the_workspaces_own_secret_files_are_not_read_and_the_note_names_the_setting(tmp_path):
    boundary, ws, _, workspace = boundary_with_search(tmp_path)
    for shape in PRINTS:
        for path in (".env", "config/.env.local"):
            output = run_shell(ws, shape.format(path=path), 20, boundary)
            assert not any(marker in output for marker in ENCODED), (shape, output)
    assert (workspace / ".env").read_bytes() == SECRET and (workspace / "config/.env.local").read_bytes() == SECRET
    output = run_shell(ws, "cat .env", 20, boundary)
    assert output == (f"exit code 1:\ncat: .env: Permission denied\n(plainagent: the kernel sandbox refused reading "
                      f"{workspace}/.env: the workspace's secret files (the names read_file refuses) are unreadable to "
                      "commands. Another shape of the command is refused the same way; only the user can allow it "
                      f"(PLAINAGENT_SANDBOX_READ={workspace}/.env in their settings, then a restart).)")
    output = run_shell(ws, "rm .env", 20, boundary)
    assert output.startswith("exit code 1:\nrm: cannot remove '.env': Device or resource busy\n(plainagent: the kernel "
                             f"sandbox refused changing {workspace}/.env: the workspace's secret files ") and \
        output.endswith(f"(PLAINAGENT_SANDBOX_READ={workspace}/.env in their settings, then a restart).)")
    # ordinary work beside them goes on: a new file at the root, a test run
    assert run_shell(ws, "echo y > new.txt && cat new.txt && ls -a | grep -c env", 20, boundary) == "y\n1"


@with_namespaces
def test_a_secret_file_made_during_the_session_is_hidden_from_the_next_command(tmp_path):
    """One a command made, from the next command; one made meanwhile by another program, from the first command
    after the refresh that follows a command (which runs while the model answers)."""
    boundary, ws, home, workspace = boundary_with_search(tmp_path)
    assert run_shell(ws, "printf 'TOKEN=SECRET-MARKER-5e1d' > .env.production && echo made", 20, boundary) == "made"
    output = run_shell(ws, "cat .env.production | base64 -w0", 20, boundary)
    assert not any(marker in output for marker in ENCODED), output
    make(home, ["later/deep/er/still/.netrc"])  # the user, in another terminal, meanwhile
    assert run_shell(ws, "true", 20, boundary) == "(no output)"
    output = run_shell(ws, "cat ~/later/deep/er/still/.netrc | base64 -w0", 20, boundary)
    assert not any(marker in output for marker in ENCODED), output


@with_namespaces
def test_a_file_the_user_lets_commands_read_is_read(tmp_path):
    boundary, ws, _, workspace = boundary_with_search(tmp_path, passed=[tmp_path / "project/.env"])
    assert run_shell(ws, "cat .env", 20, boundary) == SECRET.decode().strip()
    assert "Permission denied" in run_shell(ws, "cat config/.env.local", 20, boundary)


@kernel
def test_without_namespaces_the_workspaces_own_stay_readable_and_the_start_line_says_so(tmp_path):
    boundary, ws, _, workspace = boundary_with_search(tmp_path, namespaces=False)
    assert run_shell(ws, "cat .env", 20, boundary) == SECRET.decode().strip()  # the folder keeps taking new files
    assert "SECRET-MARKER" not in run_shell(ws, "cat ~/work/acme/api/.env", 20, boundary)
    assert "no network, secrets outside the workspace unreadable (Landlock ABI" in boundary.summary()


def test_when_the_walk_is_late_the_first_command_searches_the_workspace_itself(tmp_path, monkeypatch):
    from harness.commands import secret_search

    home, workspace = tmp_path / "home", tmp_path / "project"
    make(home, DEEP), make(workspace, ["deep/er/.env"])
    monkeypatch.setattr(secret_search, "SEARCH_WAIT", 0)
    search = SecretSearch(places(home, workspace, top=tmp_path / "none", as_root=False))
    search.start()  # its answer is not waited for
    search.settle()
    assert search.inside() == [workspace / "deep/er/.env"]
    search.child.wait()  # done: a later command takes its answer without waiting
    assert search.collect(wait=0) and sorted(search.outside()) == sorted(home / name for name in DEEP)


# As root, on the real paths (/etc/shadow, /home/alice, /srv), in a throwaway mount namespace: a tmpfs over /home,
# /srv, /opt and /var/www, and a fake file bound over each of /etc's secrets. Nothing real is read (/root, which
# holds this Python here, is searched as it is: its names only).
AS_ROOT = r"""
import os, subprocess, sys
from pathlib import Path
tmp = Path(sys.argv[1])
for top in ("/home", "/srv", "/opt", "/var/www"):
    if os.path.isdir(top):
        subprocess.run(["mount", "-t", "tmpfs", "none", top], check=True)
victims = ["/home/alice/.aws/credentials", "/home/alice/proj/.env", "/srv/app/.env", "/opt/svc/config/.env"]
for name in victims:
    os.makedirs(os.path.dirname(name), exist_ok=True)
    Path(name).write_bytes(b"SECRET-MARKER-5e1d\n")
fake = tmp / "fake"
fake.write_bytes(b"SECRET-MARKER-5e1d\n")
for name in ("/etc/shadow", "/etc/gshadow"):
    if os.path.exists(name):
        subprocess.run(["mount", "--bind", str(fake), name], check=True)
        victims.append(name)
sys.path.insert(0, sys.argv[2])
from harness.commands.landlock import Boundary
from harness.commands.secret_search import SecretSearch, hidden_paths, places
from harness.commands.shell import run_shell
from harness.files.workspace import Workspace
home, workspace = tmp / "home", tmp / "project"
home.mkdir(), workspace.mkdir()
search = SecretSearch(places(home, workspace))
search.start()
boundary = Boundary(workspace, hidden_paths(home, workspace, [])[0], search=search)
ws = Workspace(workspace, boundary=boundary)
for name in victims:
    output = run_shell(ws, f"cat {name} | base64 -w0; cat {name}", 20, boundary)
    print(name, "SECRET-MARKER" in output or "U0VDUkVULU1BUktFUi" in output)
"""


@kernel
@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("unshare"), reason="as root, with unshare(1)")
def test_as_root_other_homes_apps_and_etcs_secrets_are_hidden_on_their_real_paths(tmp_path):
    done = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, "-c", AS_ROOT, str(tmp_path),
                           str(Path(__file__).resolve().parent.parent)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:4] == ["/home/alice/.aws/credentials False", "/home/alice/proj/.env False", "/srv/app/.env False",
                         "/opt/svc/config/.env False"] and all(line.endswith(" False") for line in lines), done.stdout


def test_a_home_past_the_budget_starves_no_other_root_and_the_user_is_told(tmp_path, monkeypatch, capsys):
    """A home of 2.1 million entries stopped the walk before the other homes and /srv were searched, and nothing
    said so: their .env files reached the model (a user's attack)."""
    from harness.commands import secret_search

    top, home, workspace = tmp_path, tmp_path / "home/me", tmp_path / "project"
    make(home, [f"src/{n}.py" for n in range(60)], b"x\n"), make(top, ["home/alice/proj/.env", "srv/app/.env"])
    workspace.mkdir()
    monkeypatch.setattr(secret_search, "SEARCH_MAX_ENTRIES", 50)
    search = SecretSearch(places(home, workspace, top=top, as_root=False))
    search.walk()
    assert sorted(search.outside()) == [top / "home/alice/proj/.env", top / "srv/app/.env"] and search.stopped == [home]
    search.walked, search.waited = False, False  # as the walk's answer, taken by the first command
    monkeypatch.setattr(search, "collect", lambda wait: setattr(search, "walked", True) or True)
    search.settle()
    assert capsys.readouterr().err == (f"plainagent: the search for secret files stopped after 50 entries in {home}: "
                                       "a secret file deeper in there may be readable by commands.\n")


def test_a_first_command_before_the_walk_is_in_is_told_of(tmp_path, monkeypatch, capsys):
    from harness.commands import secret_search

    home, workspace = tmp_path / "home", tmp_path / "project"
    make(home, DEEP), workspace.mkdir()
    monkeypatch.setattr(secret_search, "SEARCH_WAIT", 0)
    search = SecretSearch(places(home, workspace, top=tmp_path / "none", as_root=False))
    monkeypatch.setattr(search, "collect", lambda wait: False)  # still walking
    search.settle()
    assert capsys.readouterr().err.startswith("plainagent: the search for secret files is not done yet (after 0 s): ")
    search.settle()
    assert capsys.readouterr().err == ""  # once


def test_a_home_made_during_the_session_is_searched_at_the_next_look(tmp_path):
    top, home, workspace = tmp_path, tmp_path / "home/me", tmp_path / "project"
    make(top, ["home/alice/notes.txt"], b"x\n"), home.mkdir(parents=True), workspace.mkdir()
    search = SecretSearch(places(home, workspace, top=top, as_root=True))
    search.walk()
    assert search.outside() == []
    make(top, ["home/bob/app/.env"])  # a user added while the model answered
    search.refresh()
    assert search.outside() == [top / "home/bob/app/.env"]
