"""plainagent's own code (harness/common/own_code.py): which of it lies where commands write, and a checkout inside
the workspace that a command rewrote (the tether, a module imported late) changing nothing the running agent does.
The rewritten files are made here, in Python; the command only copies them over."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_endpoint import FakeEndpoint, install_program
from test_e2e_trust import agent, results_sent

from harness.commands.landlock import abi_version
from harness.commands.namespaces import namespaces_work
from harness.common.own_code import CHECKOUT, load_everything, own_code


def test_own_code_lists_what_lies_in_a_writable_folder():
    """The checkout above it: agent.py, tools.py, prompt.py and harness/; the interpreter only where it lies."""
    files = [CHECKOUT / name for name in ("agent.py", "tools.py", "prompt.py", "harness")]
    python = {Path(os.path.realpath(path)) for path in [sys.prefix, sys.base_prefix, os.path.dirname(sys.executable)]}
    found = own_code([CHECKOUT.parent])  # and the Python, where it lies beside the checkout (a venv in the same folder)
    assert found[:4] == files and all(path in python or path.parent in python for path in found[4:])
    python = os.path.realpath(sys.prefix)
    assert own_code([Path(python)]) == list(dict.fromkeys(
        Path(os.path.realpath(path)) for path in [sys.prefix, sys.base_prefix, os.path.dirname(
            os.path.realpath(sys.executable))] if Path(os.path.realpath(path)).is_relative_to(python)))


def test_own_code_outside_every_writable_folder_lists_nothing(tmp_path):
    assert own_code([tmp_path, tmp_path / "elsewhere"]) == []


def test_load_everything_imports_every_module_of_the_harness():
    names = load_everything()
    assert {"harness.web.fetch", "harness.cli.task_reader", "harness.common.own_code"} <= set(names)
    assert all(name in sys.modules for name in names)


# Run instead of the real ones, if ever they are: the tether runs the command with no walls; the fetch module,
# imported at the first web_fetch, leaves a marker.
NO_WALLS = "import os, sys\nos.execv('/bin/sh', ['/bin/sh', '-c', sys.argv[2]])\n"  # argv: FD COMMAND [RULESET SECCOMP]
LEAVES_A_MARK = "open({marker!r}, 'w').write('the rewritten fetch.py was imported')\n"


def command(line: str) -> str:
    return "tool: run_command(" + json.dumps({"command": line}) + ")"


# agent.py run where unshare(2) fails (a seccomp filter answers it EPERM), as on a kernel that makes no
# namespaces for this user: argv is the agent's, after the program's folder.
WITHOUT_NAMESPACES = r"""
import ctypes, os, runpy, struct, sys
sys.path.insert(0, sys.argv[1])
from harness.commands import seccomp
number = {"x86_64": 272, "aarch64": 97}[os.uname().machine]
program = b"".join([seccomp.op(0x20, 0), seccomp.op(0x15, number, 0, 1), seccomp.op(0x06, 0x00050000 | 1),
                    seccomp.op(0x06, 0x7FFF0000)])
buffer = ctypes.create_string_buffer(program)
fprog = struct.pack("HxxxxxxQ", len(program) // 8, ctypes.addressof(buffer))
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0 and libc.prctl(22, 2, ctypes.c_char_p(fprog), 0, 0) == 0
sys.argv = [sys.argv[1] + "/agent.py", *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.skipif(not abi_version(), reason="this kernel offers no Landlock")
@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "no namespaces"])
def test_a_checkout_inside_the_workspace_rewritten_by_a_command_changes_nothing_the_agent_runs(tmp_path, project,
                                                                                            namespaces):
    """plainagent's own checkout inside the workspace (-C on a folder above it): a command copies a tether without
    walls over lifetime.py and a fetch.py that leaves a mark over fetch.py. In a mount namespace the copy is refused
    (plainagent's files are read-only to commands); without one it happens on disk, and still the next command
    cannot write outside, and the first web_fetch does not import the new fetch.py: both were read when the agent
    started."""
    if namespaces and not namespaces_work():
        pytest.skip("this kernel makes no namespaces for this user")
    install = install_program(project / "plainagent")
    original = (install / "harness/commands/lifetime.py").read_text()
    marker, victim = tmp_path / "imported", tmp_path / "victim.txt"
    (project / "no_walls.py").write_text(NO_WALLS)
    (project / "leaves_a_mark.py").write_text(LEAVES_A_MARK.format(marker=str(marker)))
    script = [command("cp no_walls.py plainagent/harness/commands/lifetime.py && "
                      "cp leaves_a_mark.py plainagent/harness/web/fetch.py && echo copied"),
              command(f"echo pwned > {victim}"), 'tool: web_fetch({"url": "http://127.0.0.1:9/"})', "Done."]
    with FakeEndpoint(script) as endpoint:
        if namespaces:
            done = agent(install, project, endpoint, "-p", "rewrite yourself", "--yes")
        else:
            done = agent(install, project, endpoint, "-p", "rewrite yourself", "--yes",
                         argv0=["-c", WITHOUT_NAMESPACES, str(install)])
    assert done.returncode == 0, done.stderr
    copied = results_sent(endpoint, 1)[0]["output"]
    if namespaces:
        assert "Read-only file system" in copied and "copied" not in copied.splitlines()
        assert (install / "harness/commands/lifetime.py").read_text() == original
    else:
        assert "no namespaces here" in done.stderr.splitlines()[1]
        assert copied == "copied"
        assert (install / "harness/commands/lifetime.py").read_text() == NO_WALLS  # the attack happened on disk
    assert f"(plainagent: the kernel sandbox refused writing {victim}" in results_sent(endpoint, 2)[0]["output"]
    assert not victim.exists() and not marker.exists()


def test_a_module_planted_beside_agent_py_is_not_imported_before_the_standard_librarys(tmp_path):
    """A command in a workspace that holds plainagent's checkout wrote json.py, dataclasses.py and signal.py next
    to agent.py (the folder is the command's to write in); the next session must not run them."""
    install = install_program(tmp_path / "plainagent")
    marker = tmp_path / "imported"
    # and the optional modules requests and urllib3 try (simplejson, brotli, ...), which a machine may not have
    for name in ("json", "dataclasses", "signal", "typing", "argparse", "simplejson", "brotli", "brotlicffi",
                 "zstandard", "socks", "charset_normalizer", "chardet"):
        (install / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r})\nraise ImportError\n")
    done = subprocess.run([sys.executable, str(install / "agent.py"), "--help"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=30)
    assert done.returncode == 0 and "usage: agent.py" in done.stdout, done.stderr
    done = subprocess.run([sys.executable, str(install / "agent.py"), "-p", "hi", "-m", "m", "--base-url",
                           "http://127.0.0.2:9/v1"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 1 and "plainagent: " in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not marker.exists()


def test_compiled_modules_are_kept_in_the_state_folder_not_beside_the_code(tmp_path):
    """A .pyc a command forged in the checkout's __pycache__ would run in the next session: with
    sys.pycache_prefix in plainagent's state folder, Python neither reads nor writes one beside the code."""
    install = install_program(tmp_path / "plainagent")
    for cache in install.rglob("__pycache__"):
        shutil.rmtree(cache)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    argv = [sys.executable, str(install / "agent.py"), "-p", "hi", "-m", "m", "--base-url", "http://127.0.0.2:9/v1"]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)  # the workspace
    assert done.returncode in (1, 2), done.stderr  # holds the checkout: commands may write in it
    # Beside tools.py and prompt.py, none (harness/ is read-only to commands in the namespaces, and its first three
    # modules, imported before the switch, may have theirs there)
    assert list(install.glob("__pycache__")) == [] and list(install.rglob("tools*.pyc")) == []
    assert list((tmp_path / "state/plainagent/pycache").rglob("tools*.pyc"))
    (tmp_path / "elsewhere").mkdir()  # a checkout outside the workspace: Python's own caches, the quick start
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path / "elsewhere", env=env, timeout=60)
    assert done.returncode in (1, 2) and list(install.glob("__pycache__/tools*.pyc")), done.stderr
