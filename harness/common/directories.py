"""Where plainagent keeps its own files: the state directory (transcripts, the REPL's history, the project
.env files the user allowed) and the config directory (the user's AGENTS.md), after the XDG base directory
spec. Never the workspace.

One place reads the spec, so that every file of a kind lands in one directory: two readers that disagreed
(one taking a relative $XDG_STATE_HOME, the other ignoring it) would put a session's transcript where
--resume does not look, or the history where the next run does not find it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock; a folder's process is known by its number alone
    fcntl = None

NAME = "plainagent"  # the folder of ours inside each base directory


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_STATE_HOME/plainagent, else ~/.local/state/plainagent: transcripts and the REPL's history."""
    return base_dir("XDG_STATE_HOME", Path(".local", "state"), environ) / NAME


def allowed_env_record(environ: Mapping[str, str] | None = None) -> Path:
    """The project .env files the user allowed, by path and content hash (cli/project_env.py)."""
    return state_dir(environ) / "allowed-env"


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_CONFIG_HOME/plainagent, else ~/.config/plainagent: the user's own settings (AGENTS.md)."""
    return base_dir("XDG_CONFIG_HOME", Path(".config"), environ) / NAME


def hold(folder: Path) -> int | None:
    """Mark a session's own folder (its commands' temp folder, its git snapshot) as in use while this process
    lives: a lock on it, which the kernel lets go when the process ends however it ends (kill -9 too), and which
    every other process sees, whatever its PID namespace: a process number means another process in another
    container or `unshare -p`, and a live session's folder was taken for a dead one's and removed. The descriptor
    to keep (None without flock)."""
    if fcntl is None:
        return None
    fd = os.open(folder, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def left_behind(folder: Path, pid: int) -> bool:
    """Whether a session's folder (named with its process number `pid`) was left by a process that has gone:
    nobody holds it (`hold`), and no process has that number here (a folder from before the lock)."""
    if fcntl is not None:
        try:
            fd = os.open(folder, os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its session goes on, here or in another PID namespace
            return False
        finally:
            os.close(fd)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: there
        return False
    return False


def base_dir(variable: str, default: Path, environ: Mapping[str, str] | None) -> Path:
    """The base directory `variable` names, else `default` under the home directory. A relative path in the
    variable is ignored, as the spec says: it would depend on the directory plainagent was started in."""
    value = (os.environ if environ is None else environ).get(variable, "")
    return Path(value) if os.path.isabs(value) else Path.home() / default
