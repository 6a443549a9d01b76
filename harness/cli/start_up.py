"""Starting quickly: what a one-shot task spends before its request, kept near a bare `requests` post
(bench/one_shot.py, docs/benchmarks.md). Two things the interpreter would do for nothing: look for garbage while
the modules load (they stay for the whole run), and once more at exit (the memory goes back anyway); and one the
kernel can do meanwhile: say whether commands' namespaces can be made (namespaces.py's probe, in a child)."""

from __future__ import annotations

import atexit
import gc

from harness.commands.namespaces import start_probe


def begin() -> None:
    """Before the modules load (agent.py, run as a program)."""
    start_probe()
    gc.disable()
    atexit.register(gc.freeze)  # atexit runs before the interpreter's last collection, which then looks at nothing


def loaded() -> None:
    """Once they have: what loaded is put out of the collector's way, and collections go on as usual."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
