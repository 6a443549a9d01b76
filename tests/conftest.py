"""Every test runs isolated: no OPENAI_* or PLAINAGENT_* variables from the developer's shell, no proxy or
CA-bundle settings (requests obeys them, and a proxy would swallow our 127.0.0.1 requests), the current
directory, the home folder and the XDG state and config directories are fresh temporary ones (the home folder
is not made: a test that needs one makes it), and the network is out of reach (only 127.0.0.1 servers we
start)."""

import itertools
import os
import re
import signal
import socket
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# requests reads these (in either case); subprocesses inherit os.environ, so removing them here covers both.
NETWORK_VARIABLES = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

from fake_endpoint import install_program  # noqa: E402  (found through the path above)

import agent  # noqa: E402
from harness.cli import display, escapes  # noqa: E402
from harness.commands import secret_search  # noqa: E402
from harness.common import programs  # noqa: E402
from harness.common.redaction import Secret  # noqa: E402

# Started in the background by a script, this process ignores Ctrl-C, and so would every agent it starts (an
# ignored signal stays ignored through exec): the Ctrl-C tests would test nothing. Python's own handler here.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_addoption(parser):
    parser.addoption("--race-tries", type=int, default=300, metavar="N",
                     help="tries of each tool against a process swapping folders for links (tests/test_open_beneath.py)")


@pytest.fixture
def tmp_path(request, tmp_path_factory):
    """A fresh directory for each test, as pytest's own tmp_path, numbered by a counter: pytest numbers each one
    by listing every directory the run made before it (github.com/pytest-dev/pytest/pull/11859), which over
    this suite's 2,600 tests cost 9 s of CPU."""
    name = re.sub(r"\W", "_", request.node.name)[:30]  # as pytest names it, "-" and the number after it
    number = next(tmp_numbers)
    # In folders of 100: the kernel boundary hides what a test keeps under its tmp_path (its state folder) by
    # granting each of its siblings, and 2,700 siblings made every session of the suite list them all.
    path = tmp_path_factory.getbasetemp() / f"{number // 100:03}" / f"{name}-{number}"
    path.mkdir(parents=True)
    return path


tmp_numbers = itertools.count()


@pytest.fixture(scope="session")
def nothing_of_the_user(tmp_path_factory):
    """An empty folder for agent.py to stand in, and an empty git configuration, shared by every test."""
    folder = tmp_path_factory.mktemp("nothing-of-the-user")
    (folder / "gitconfig").touch()
    return folder


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path, nothing_of_the_user):
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "PLAINAGENT_")) or name.upper() in NETWORK_VARIABLES:
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    # Transcripts, history and settings go to the user's state and config directories: never the real ones.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # The home folder too: the kernel boundary looks there for secrets to hide, and a command may write `~`.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # ... and in the other homes, /srv, /opt, /var/www and /etc, where a test gives them (never the real ones)
    monkeypatch.setattr(secret_search, "TOP", tmp_path / "system")
    real_connect = socket.socket.connect

    def local_only(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"tests must not use the network (tried {address[0]})")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", local_only)
    # main() reads the user's .env beside agent.py: in a checkout that is the developer's own, with a real key.
    # A test that calls main() gets an empty folder there instead (in_process.py and `install` choose their own).
    monkeypatch.setattr(agent, "__file__", str(nothing_of_the_user / "agent.py"))
    monkeypatch.setattr(escapes, "secret", Secret())  # what main() sets for the screen goes with the test
    monkeypatch.setattr(display, "active", None)
    monkeypatch.setattr(display, "last_result", None)  # /show's: a run starts with none
    monkeypatch.setattr(programs, "writable", [])  # the folders main() distrusts go with the test that ran it
    # git reads the developer's ~/.gitconfig (core.excludesFile) and /etc/gitconfig: never in a test.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(nothing_of_the_user / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return tmp_path


# --- for the end-to-end tests, which run agent.py as a process ---


@pytest.fixture
def install(tmp_path):
    """A copy of the program in its own directory, so no developer's .env next to agent.py is read."""
    return install_program(tmp_path / "install")


@pytest.fixture
def agent_home(tmp_path):
    """For a run of main() in the test's process (in_process.py): the folder agent.py stands in, empty, where the
    user's own .env goes."""
    home = tmp_path / "program"  # not "install": a test may run both
    home.mkdir()
    return home


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "greet.py").write_bytes(b'def greet(name):\r\n    return "Helo, " + name\r\n')
    return root
