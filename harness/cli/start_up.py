"""Starting: a Python that cannot run plainagent is told what it needs in one line, before an import fails with
a traceback (Python 3.11 or newer, requests and python-dotenv: requirements.txt); and quickly: what a one-shot
task spends before its request is kept near a bare `requests` post (bench/one_shot.py, docs/benchmarks.md). Two
things the interpreter would do for nothing: look for garbage while the modules load (they stay for the whole
run), and once more at exit (the memory goes back anyway); and one the kernel can do meanwhile: say whether
commands' namespaces can be made (namespaces.py's probe, in a child)."""

from __future__ import annotations

import atexit
import gc
import sys
from pathlib import Path

from harness.commands.namespaces import start_probe

USAGE = 2  # agent.py's exit code for a run that cannot start
REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements.txt"


def begin() -> None:
    """Before the modules load (agent.py, run as a program)."""
    start_probe()  # first: the child is a copy of this process, small while little has loaded
    gc.disable()
    check_python()
    atexit.register(gc.freeze)  # atexit runs before the interpreter's last collection, which then looks at nothing


def loaded() -> None:
    """Once they have: what loaded is put out of the collector's way, and collections go on as usual."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def check_python() -> None:
    """Exit with one line (USAGE) if this Python is too old, or lacks what requirements.txt names: most often
    another project's venv is active, or the system's Python was used instead of plainagent's venv."""
    if sys.version_info < (3, 11):  # noqa: UP036  (the one place an older Python reaches)
        version = ".".join(map(str, sys.version_info[:3]))
        sys.stderr.write(f"plainagent: needs Python 3.11 or newer; {sys.executable} is {version}. Run it with a "
                         "newer Python (the README's Quick start makes a venv with one).\n")
        sys.exit(USAGE)
    missing = []
    try:  # loaded here once (the modules below import it first): asking whether it is there would look twice
        import requests  # noqa: F401
    except ModuleNotFoundError:
        missing.append("requests")
    try:
        import dotenv  # noqa: F401
    except ModuleNotFoundError:
        missing.append("python-dotenv")
    if missing:
        sys.stderr.write(f"plainagent: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed "
                         f"for {sys.executable} (another project's venv?). Run plainagent with the Python of its own "
                         f"venv, or install them for this one: {sys.executable} -m pip install -r {REQUIREMENTS}\n")
        sys.exit(USAGE)
