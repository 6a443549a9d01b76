"""The programs plainagent itself runs (git, the pager, the Python its commands' tether runs on), found where no
command could have written them.

The failure it prevents: what plainagent runs runs outside the commands' walls, as the user. With the project's
virtualenv activated, `.venv/bin` is first on PATH; a command wrote `.venv/bin/git`, and the next list_files ran
it through `shutil.which("git")`, unconfined. A relative PATH entry (`node_modules/.bin`, or an empty one, which
means the current folder) did the same; and so did a Python inside the workspace that a command replaced with a
wrapper, on which every later command's tether started. So a program is looked for on PATH as `which` would, but
in no entry that is relative or lies in a folder a command may write (the workspace, the folders of
PLAINAGENT_SANDBOX_WRITE, the sessions' private TMPDIRs, /dev/shm), and a program found whose real path (links
followed) lies in one is refused too. Those folders are writable whether or not the kernel sandbox is on:
`main` names them once (`distrust`), before anything runs.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
from pathlib import Path

SHARED_MEMORY = "/dev/shm"  # every process may write there, inside the kernel boundary or not
PRIVATE_TMPDIR = "plainagent-"  # how the sessions' own temp folders begin (landlock.py), in tempfile's folder
LINUX = sys.platform.startswith("linux")

writable: list[Path] = []  # the folders commands may write in, as `distrust` was given them, links resolved


def distrust(folders: list[Path]) -> None:
    """Name the folders commands may write in (the workspace, PLAINAGENT_SANDBOX_WRITE's): from now on nothing
    plainagent runs is found there. /dev/shm and the sessions' TMPDIRs need no naming."""
    global writable
    writable = [Path(os.path.realpath(folder)) for folder in folders]


def is_writable(path: str | Path) -> bool:
    """Whether `path`, links followed, lies in a folder a command may write in (or is one)."""
    real = os.path.realpath(path)
    if real.startswith(private_tmpdirs(tempfile.gettempdir())):
        return True
    # As strings: pathlib's is_relative_to took 1 ms for a PATH of 11 entries, which each walk looks through.
    return any(real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)
               for folder in [*map(str, writable), SHARED_MEMORY])


@functools.lru_cache
def private_tmpdirs(temp: str) -> str:
    """How the real paths of the sessions' TMPDIRs in `temp` begin: `/tmp/plainagent-`."""
    return os.path.join(os.path.realpath(temp), PRIVATE_TMPDIR)


def trusted_entries(path: str | None = None) -> list[str]:
    """The entries of PATH (or `path`) a program may be found in: absolute, and in no folder commands write."""
    entries = (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
    return [entry for entry in entries if entry and os.path.isabs(entry) and not is_writable(entry)]


def trusted_path() -> str:
    """PATH without those entries, for a program plainagent runs: what it runs in turn is found there too."""
    return os.pathsep.join(trusted_entries())


def find_program(name: str) -> str | None:
    """The absolute path of the program `name` (git, less) for plainagent itself to run; None when PATH holds no
    such program outside every folder commands write in. A name with a folder in it (`/usr/bin/less`) is taken as
    it is, if it lies outside them."""
    if os.path.dirname(name):
        found = os.path.abspath(name) if os.path.isabs(name) else None  # ./less: relative to what the agent stands in
        return found if found and shutil.which(found) and not is_writable(found) else None
    for entry in trusted_entries():
        found = shutil.which(name, path=entry)
        # On Windows which() looks in the current folder first, whatever path it is given: that one is refused.
        if found and os.path.isabs(found) and not is_writable(found):
            return found
    return None


def refused_copy(name: str) -> str | None:
    """Where `which` would find `name` when find_program refuses it: for the line that says why it is not run."""
    found = shutil.which(name)
    return found if found and find_program(name) != found else None


def tether_python() -> str | None:
    """The Python the tether runs on: this process's own, by its real path when that lies outside every folder
    commands write in; else, on Linux, /proc/self/exe, which in the forked child is this process's own binary (the
    file it started from, even if that name holds another file since); None elsewhere, or with no interpreter
    (Python embedded)."""
    if not sys.executable:
        return None
    real = os.path.realpath(sys.executable)
    if not is_writable(real):
        return real
    return "/proc/self/exe" if LINUX and os.path.exists("/proc/self/exe") else None
