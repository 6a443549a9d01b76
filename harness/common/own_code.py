"""plainagent's own code: where it lies, and loading all of it at the start when a command could change it later.

The failure it prevents: with plainagent's checkout inside the workspace (`-C` on itself, or on a folder above it),
a command or an approved edit_file can change its files on disk, and a module the agent imports only when first
needed (the fetch tool's, at the first web_fetch; the REPL's task reader) would then load what was written, and
run it as the agent, outside the walls. So in that case, and only then (it costs some 20 ms), every module of the
harness package is imported at the start, before any command runs (`load_everything`; agent.py imports tools.py
and prompt.py itself), and what a command writes afterwards is never loaded by this process. `own_code` lists
the files commands must not change, for a boundary that can make them read-only.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]  # the folder of agent.py, tools.py, prompt.py and harness/
TOP_LEVEL = ("agent.py", "tools.py", "prompt.py")


def own_code(writable: list[Path]) -> list[Path]:
    """What of plainagent's own code lies in a folder of `writable` (links followed), for commands not to change:
    agent.py, tools.py, prompt.py, harness/, and the Python it runs on (sys.prefix, sys.base_prefix, the folder
    of the real executable: the standard library and the packages it loads)."""
    folders = [Path(os.path.realpath(folder)) for folder in writable]
    python = [sys.prefix, sys.base_prefix]
    if sys.executable:  # empty when Python is embedded
        python.append(os.path.dirname(os.path.realpath(sys.executable)))
    paths = [*(CHECKOUT / name for name in TOP_LEVEL), CHECKOUT / "harness", *map(Path, python)]
    real = dict.fromkeys(Path(os.path.realpath(path)) for path in paths)  # in order, once each
    return [path for path in real if any(path.is_relative_to(folder) for folder in folders)]


def load_everything() -> list[str]:
    """Import every module of the harness package now, so that none is read from disk later; their names."""
    import pkgutil  # here, not at the top: most sessions never call this, and start-up time matters

    names = [module.name for module in pkgutil.walk_packages([str(CHECKOUT / "harness")], "harness.")]
    for name in names:
        importlib.import_module(name)
    return names


def keep_bytecode_apart(argv: list[str], environ: dict) -> None:
    """Where this checkout lies in a folder commands may write in (the current folder, a -C DIR, a
    PLAINAGENT_SANDBOX_WRITE folder: judged from the arguments before they are parsed, and one folder too many
    costs only a first compile), compiled modules go to the state folder (sys.pycache_prefix), which commands
    cannot read or write: a .pyc a command forged in __pycache__ beside tools.py would run in the next session.
    Called by agent.py before it imports tools and prompt."""
    state = environ.get("XDG_STATE_HOME", "")  # directories.state_dir's rule, without importing more
    given = [os.curdir, *(arg.split("=")[-1] for arg in argv),
             *environ.get("PLAINAGENT_SANDBOX_WRITE", "").replace(",", ":").split(":")]
    if any(f"{CHECKOUT}/".startswith(os.path.realpath(os.path.expanduser(f)).rstrip("/") + "/") for f in given if f):
        sys.pycache_prefix = os.path.join(state if os.path.isabs(state) else os.path.expanduser("~/.local/state"),
                                          "plainagent", "pycache")
