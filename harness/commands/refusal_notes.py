"""What a command's output says of the kernel boundary (landlock.py), in one sentence for the model.

The failure it prevents: a command the boundary refused ends in a bare "Permission denied", and a model takes it
for a glitch and tries ten other shapes of the same thing, or for a server that is down. So when a command's
output shows the boundary's hand, its result ends with a note: what was refused (writing or reading a path, a
device, a call on another process, the network: also when a program says it its own way, or waits on it until
the timeout), by which wall, and the one setting that would open it, which only the user can change. A
"Permission denied" the boundary did not make (a file in the workspace the user made read-only) gets none.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from harness.commands.landlock import SETTINGS, SHARED_MEMORY, Boundary

REFUSAL_NOTE = "(plainagent: the kernel sandbox "  # how the note for the model begins (display.py shows it)
# A refused socket or connection, as programs word it; and a failure that follows from having no network at all.
NETWORK = r"(?i)socket|connect|network"
NETWORK_FAILED = (r"(?i)could not resolve|couldn't resolve|resolve host|name resolution|name or service|"
                  r"nodename nor servname|getaddrinfo|ENOTFOUND|EAI_AGAIN|network is unreachable|"
                  r"couldn't connect|could not connect|failed to connect|connection refused|"
                  r"failed to establish a new connection|no matching distribution|unable to access 'http")
# How a refusal reads in a command's output: EACCES and EPERM as programs print them (sh, coreutils, Python, node).
# EXDEV: a hard link or a rename between the workspace and outside (Landlock's REFER right).
# EROFS: the namespaces' read-only mounts (lifetime.py); EBUSY: a rename over a file bound read-only there.
REFUSED = (r"(?i)permission denied|operation not permitted|EACCES|EPERM|no new privileges|"
           r"invalid cross-device link|EXDEV|read-only file system|EROFS|device or resource busy|EBUSY")
# A path a refusal names: /absolute, ../up from the workspace, or any path in quotes ('x/y', as rm and cp quote it).
PATH = r"(?<![\w.~])(?:/|\.\./)[^\s:'\"`,;()‘’]*|(?<=['‘])[^'‘’\s]+(?=['’])"


# Programs that reach the network on their own, and what a program's output says when it tried: a command
# killed at its timeout is blamed on the network only then (a `sleep 100` with a 60 s timeout is not).
NETWORK_PROGRAMS = (r"\b(?:pip3?|uv|poetry|pipx|conda|npm|npx|yarn|pnpm|bun|cargo|go|gem|bundle|curl|wget|"
                    r"apt(?:-get)?|brew|docker|podman|ssh|scp|rsync|mvn|gradle|composer|"
                    r"git\s+(?:fetch|pull|clone|push|submodule|ls-remote))\b")
NETWORK_WORDS = r"(?i)https?://|download|connect|resolv|fetching|collecting"


def refusal_note(boundary: Boundary, output: str, status: str = "exit code 1", command: str = "") -> str | None:
    """A sentence for the model after a command met the boundary, so that it does not try the same thing in
    ten other shapes, and asks the user instead: what was refused, by which wall, and the one setting that
    would open it. None when nothing in the output shows the boundary's hand. `status` is how the command
    ended ("exit code 0", "killed after 60 s ..."); `command`, what it was (a timeout of `pip` may be the network's)."""
    reasons = [refusal_in(boundary, line, refused, output) for line in output.splitlines()
               if (refused := re.search(REFUSED, line))]
    reasons = [reason for reason in reasons if reason]
    if not reasons and not boundary.network and status != "exit code 0":  # no socket: programs say it their way
        if re.search(NETWORK_FAILED, output):
            reasons = [("network", "the network")]
        elif status.startswith("killed after") and (re.search(NETWORK_PROGRAMS, command)
                                                    or re.search(NETWORK_WORDS, output)):
            # npm and pip retry for minutes before they give up
            reasons = [("network", "the network, if that is what it waited for")]
    if not reasons:
        return None
    kind, what = reasons[0]
    writes = f"commands may write only inside the workspace{''.join(f', {f}' for f in boundary.extra)} and $TMPDIR"
    if boundary.namespaces:
        writes += (" (outside, nothing changes, not even a file's mode or times; inside, git's hooks and config, the "
                   "instructions agents read and plainagent's own files stay as they are)")
    off = "PLAINAGENT_SANDBOX=off"
    wall, setting = {
        "write": (writes, "PLAINAGENT_SANDBOX_WRITE=DIR"),
        "read": ("commands may not read secret files, the key's .env or plainagent's own", off),
        "secret": ("the workspace's secret files (the names read_file refuses) are unreadable to commands",
                   f"PLAINAGENT_SANDBOX_READ={what.split(' ', 1)[-1]}"),  # a project whose tests load its .env
        "signal": ("commands may not look into, signal or change processes they did not start", off),
        "device": ("commands may use no device but /dev/null, /dev/urandom and the like", off),
        "network": ("commands have no network, localhost included", "PLAINAGENT_SANDBOX_NETWORK=on"),
    }.get(kind, (f"{writes}, may not read secret files{'' if boundary.network else ', and have no network'}", SETTINGS))
    if kind == "kept":  # no setting opens these: what acts later is the user's to change, in their terminal
        return (f"{REFUSAL_NOTE}refused {what}: git's hooks and config, the instructions agents read and plainagent's "
                "own files are read-only to commands, so that nothing a command writes runs later outside the walls. "
                "Another shape of the command is refused the same way; the user can run it in their own terminal.)")
    refused = "refused " + what if kind != "unknown" else "may have refused this"  # "Permission denied", no wall named
    return (f"{REFUSAL_NOTE}{refused}: {wall}. Another shape of the command is refused "
            f"the same way; only the user can allow it ({setting} in their settings, then a restart).)")


def refusal_in(boundary: Boundary, line: str, refused: re.Match, output: str) -> tuple[str, str] | None:
    """(the wall, what it refused) for a refusal's line of `output`: ("write", "writing /x"), ("read", ...),
    ("signal", ...), ("device", ...), ("network", ...), ("unknown", ""); None when the boundary did not make
    it (a file in the workspace the user made read-only)."""
    if re.search(r"\b(kill|signal|prlimit|renice|taskset|ionice|resource limit)", line[:refused.start()], re.I):
        return ("signal", "a call on another process")
    if not (paths := named(boundary, line, refused)):
        return ("network", "the network") if not boundary.network and re.search(NETWORK, output) else ("unknown", "")
    if bound := next((path for path in paths if boundary.is_bound(path)), None):
        # bound over in the namespaces: reading it is refused, and removing or renaming it (EBUSY, EROFS)
        return ("secret", f"{'reading' if re.match('(?i)permission|EACCES', refused[0]) else 'changing'} {bound}")
    path = next((path for path in paths if not boundary.may_write(path)), None)
    if path is None:
        return None
    if path.is_relative_to("/dev") and not path.is_relative_to(SHARED_MEMORY):
        return ("device", f"using {path}")
    if path.is_relative_to("/proc") and not path.is_relative_to("/proc/self"):
        return ("signal", f"reading {path}")  # another process's environment, memory or files
    if boundary.namespaces and any(path.is_relative_to(kept) for kept in boundary.read_only()):
        return ("kept", f"writing {path}")  # bound read-only inside the writable folders (namespaces.py)
    if re.match(r"(?i)read-only|erofs", refused[0]):  # a read-only mount: the namespaces' wall for writing
        return ("write", f"writing {path}")
    if boundary.is_hidden(path) or re.search(r"(?i)\bread|open", line):
        return ("read", f"reading {path}")
    return ("write", f"writing {path}")


def named(boundary: Boundary, line: str, refused: re.Match) -> list[Path]:
    """The paths a refusal's line names: Python's after it ("...denied: '/x'"); else the one before it, as sh,
    coreutils and git put it ("sh: 1: cannot create x: Permission denied", "rm: cannot remove 'x': ...")."""
    after = re.findall(PATH, line[refused.end():])[:1]
    segment = line[:refused.start()].rstrip(": ").rsplit(": ", 1)[-1]
    last = re.sub(r"^(?:cannot|can't|could not|couldn't|failed to|unable to) \w+ ", "", segment).strip("'\"`‘’")
    path_like = last and " " not in last and "\0" not in last and (  # not "kill", "IO::Socket::INET"
        "/" in last or "." in last or os.path.lexists(boundary.workspace / last))
    token = last.split()[-1] if last.split() else ""  # git's "could not write config file .git/config"
    token_like = not path_like and "/" in token and os.path.lexists(boundary.workspace / token)
    named = [path for path in after or ([last] if path_like else [token] if token_like else re.findall(PATH, segment))
             if "\0" not in path]
    # Where it really is: a link in the workspace to a file outside was refused as that file. Not under /proc,
    # where a link resolved here would be this process's own (its fds, its transcript), not the command's.
    return [Path(os.path.normpath(boundary.workspace / path)) if os.path.normpath(boundary.workspace / path).startswith(
        "/proc/") else Path(os.path.realpath(boundary.workspace / path)) for path in named]
