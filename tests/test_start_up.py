"""Starting quickly changes nothing a run does: the namespaces probe begun before the modules load gives the
answer a probe asked later gives, and leaves nothing behind, asked or not; collections are on once loaded."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.commands import namespaces

ROOT = Path(__file__).resolve().parent.parent
LINUX = sys.platform.startswith("linux")


def run(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(not LINUX, reason="the probe is Linux's")
def test_the_probe_begun_early_answers_as_one_asked_when_needed_and_leaves_no_folder(tmp_path):
    done = run("from harness.commands import namespaces as n\n"
               "n.start_probe(); early = n.namespaces_work(); n.namespaces_work.cache_clear()\n"
               "print(early, n.namespaces_work())", tmp_path)
    assert done.returncode == 0, done.stderr
    early, late = done.stdout.split()
    assert early == late == str(namespaces.namespaces_work())
    assert list(tmp_path.iterdir()) == []  # the probe's folder removed


@pytest.mark.skipif(not LINUX, reason="the probe is Linux's")
def test_a_run_that_never_asks_still_reaps_the_probe_and_removes_its_folder(tmp_path):
    """PLAINAGENT_SANDBOX=off, or a usage error after the start: the answer is collected at exit."""
    code = ("import atexit, os\nfrom harness.commands import namespaces as n\nseen = []\n"
            "atexit.register(lambda: print(n.PROBE, os.path.exists(seen[0][1]), flush=True))  # runs after n's own\n"
            "n.start_probe(); seen.append(n.PROBE[0])")
    done = run(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "False"]  # asked at exit: the child reaped, its folder gone
    assert list(tmp_path.iterdir()) == []


def test_collections_are_on_once_the_modules_have_loaded(tmp_path):
    done = run("import gc\nfrom harness.cli import start_up\nstart_up.begin(); off = gc.isenabled()\n"
               "import tools, prompt\nstart_up.loaded(); print(off, gc.isenabled(), gc.get_freeze_count() > 0)", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True"]


def test_a_python_without_the_requirements_is_told_what_to_install_in_one_line(tmp_path):
    """Another project's venv active, or the system's Python: one line and exit 2, before an import fails."""
    import venv

    venv.create(tmp_path / "other", with_pip=False)  # a venv of this Python, without requests or dotenv
    python = tmp_path / "other" / ("Scripts" if sys.platform == "win32" else "bin") / "python"
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(python), str(ROOT / "agent.py"), "-p", "hi"], env={**env, "HOME": str(tmp_path)},
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"plainagent: requests and python-dotenv are not installed for {python} (another "
                           "project's venv?). Run plainagent with the Python of its own venv, or install them for "
                           f"this one: {python} -m pip install -r {ROOT / 'requirements.txt'}\n")


def test_a_python_older_than_3_11_is_told_which_is_needed(monkeypatch, capsys):
    from harness.cli import start_up

    monkeypatch.setattr(sys, "version_info", (3, 10, 13, "final", 0))
    with pytest.raises(SystemExit) as exited:
        start_up.check_python()
    assert exited.value.code == 2
    assert capsys.readouterr().err == (f"plainagent: needs Python 3.11 or newer; {sys.executable} is 3.10.13. Run it "
                                       "with a newer Python (the README's Quick start makes a venv with one).\n")
