"""The walls after a command, beside Landlock's (landlock.py): what lifetime.py's mount namespace keeps read-only
inside the folders commands write in, whether this kernel makes the namespaces at all, and the session's own temp
folders put away at its end.

The failure they prevent: Landlock holds while a command runs, not after it. Tried in --yes mode, a command
wrote .git/hooks/pre-commit or core.fsmonitor (run on the user's next `git status`, outside every wall), an
AGENTS.md the next session obeyed, a `setsid` child that edited files after the agent ended, `chmod 644
~/.ssh/id_rsa`. In a mount namespace all but the writable folders is read-only (modes and times too), and in
them what acts later is bound read-only on itself (`git_parts`, INSTRUCTION_FILES, plainagent's own code); in a
PID namespace nothing the command started outlives it. Codex CLI does the same with bubblewrap; here it is
`unshare(2)` and `mount_setattr(2)` through ctypes (lifetime.py).
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from harness.common.directories import left_behind

SHARED_MEMORY = "/dev/shm"  # POSIX semaphores and shared memory: Python's multiprocessing needs it writable

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md", ".claude", ".cursor", ".cursorrules", ".github/instructions",
                     ".github/copilot-instructions.md", ".husky")  # what agents (and husky) read at the workspace root
MAX_PACKS = 500  # pack files bound read-only, at most: a repository with more is kept by the snapshot alone


def git_parts(git: Path) -> list[Path]:
    """The parts of a git folder a command must not change: what git runs or obeys (config, hooks, info/, a
    submodule's or worktree's own), the folder core.hooksPath names, and the pack files."""
    parts = [git / name for name in ("config", "config.worktree", "hooks", "info", "commondir")]
    parts += [*git.glob("modules/**/config"), *git.glob("modules/**/hooks"), *git.glob("worktrees/*/config.worktree")]
    for config in [git / "config", *git.glob("worktrees/*/config.worktree")]:
        try:
            text = config.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for found in re.finditer(r"(?im)^\s*hookspath\s*=\s*(.+?)\s*$", text):  # where a command pointed git
            parts.append((git.parent / os.path.expanduser(found[1].strip('"'))).resolve())
    try:
        packs = sorted(entry.path for entry in os.scandir(git / "objects" / "pack") if entry.is_file())
    except OSError:
        packs = []
    return parts + [Path(pack) for pack in packs[:MAX_PACKS]]


PROBE: list[tuple[int, str]] = []  # the probe start_probe began: (its pid, its folder), until namespaces_work asks


def start_probe() -> None:
    """Begin namespaces_work's probe now, in a child, so that its answer is there when the start line asks (agent.py
    starts it before its modules load: the kernel answers meanwhile). The answer is collected at exit at the latest."""
    if sys.platform.startswith("linux") and hasattr(os, "fork") and not PROBE:
        try:
            PROBE.append(probe())
        except OSError:  # no temp folder to try it on, no process to spare: asked again, and said, when needed
            return
        atexit.register(namespaces_work)  # a session that never asks still reaps the child and removes its folder


@functools.cache
def namespaces_work() -> bool:
    """Whether this kernel lets this process make lifetime.py's namespaces (a user namespace too, where the user
    lacks CAP_SYS_ADMIN): tried once, in a child, on a folder of its own. Ubuntu's AppArmor setting
    kernel.apparmor_restrict_unprivileged_userns, or a container without the capability, says no."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    pid, folder = PROBE.pop() if PROBE else probe()
    try:
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    finally:
        os.rmdir(folder)


def probe() -> tuple[int, str]:
    """A child that makes the namespaces on a folder of its own, and ends with 0 if it could: (its pid, the folder)."""
    from harness.commands import lifetime

    folder = tempfile.mkdtemp(prefix="plainagent-probe-")
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            lifetime.enter_namespaces([f"w:{folder}", f"r:{folder}"])
            init = os.fork()
            if init == 0:
                lifetime.inside_namespaces()
                os._exit(0)
            code = os.waitstatus_to_exitcode(os.waitpid(init, 0)[1])
        finally:
            os._exit(code)
    return pid, folder


def remove_left_behind() -> None:
    """The temp folders of sessions whose process is gone (killed with -9: nothing ran at its end)."""
    for folder in Path(tempfile.gettempdir()).glob("plainagent-*-*"):
        try:
            if folder.stat().st_uid == os.getuid() and left_behind(folder, int(folder.name.split("-")[1])):
                remove_tree(folder)
        except (ValueError, OSError):  # not one of ours, or not ours to know about
            continue


def close(held: dict, session: Path, shm_before: set[str] | None = None) -> None:
    """A session's boundary, put away: its ruleset closed, its temp folders removed (whatever modes a command set
    in them), and what commands added to the real /dev/shm where they wrote in it."""
    if (fd := held.pop("fd", None)) is not None:  # popped: put away once, whoever asks first
        os.close(fd)
    remove_tree(session)
    if (lock := held.pop("lock", None)) is not None:  # once it has gone: nobody takes it for another's meanwhile
        os.close(lock)
    if shm_before is not None:
        try:
            added = set(os.listdir(SHARED_MEMORY)) - shm_before
        except OSError:
            added = set()
        for name in added:
            path = Path(SHARED_MEMORY) / name
            try:
                if path.lstat().st_uid == os.getuid():  # another user's, or a process's of the user: not ours
                    remove_tree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
            except OSError:
                continue


def remove_tree(folder: Path) -> None:
    """shutil.rmtree, after giving back the owner's rights on every folder in it, each before it is entered: a
    command's `chmod 000 dir` must not leave the folder behind."""
    def give_back(path: str) -> None:
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):  # a folder, not a link to one (that may lead anywhere)
                os.chmod(path, 0o700)
        except OSError:
            pass

    give_back(str(folder))
    for parent, names, _ in os.walk(folder):  # top-down: each folder is given back before it is listed
        for name in names:
            give_back(os.path.join(parent, name))
    shutil.rmtree(folder, ignore_errors=True)


# --- Unix socket files outside the walls: covered inside the namespace when the network is off ---
#
# Connecting to a pathname socket needs only the file's write permission, which neither a read-only mount nor a
# network namespace takes away, and no kernel call this program can use refuses it by path. So each socket file
# a daemon listens on is found and covered (lifetime.py binds /dev/null over it): the Docker socket, the
# ssh-agent's, tmux's, D-Bus's, a resolver's.

SOCKET_FOLDERS = ("/run", "/var/run", "/tmp", "/var/tmp")  # where daemons put theirs
SOCKET_WALK = 5000  # entries looked at in those folders, at most


def unix_sockets(writable: list[Path]) -> list[str]:
    """The socket files outside `writable`: every listening socket the kernel lists, in every network namespace
    a process here is in (a daemon in another one is not in this /proc/net/unix), its relative name found again
    from the owner's working folder; those in the folders daemons keep them in (one mounted from elsewhere lists
    elsewhere); and each again wherever another mount shows its folder."""
    listed, relative = set(), {}
    for table in network_tables():
        for line in table.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 7 and not fields[7].startswith("@"):  # an abstract one: Landlock's scope holds it
                (listed.add(fields[7]) if fields[7].startswith("/") else relative.setdefault(fields[6], fields[7]))
    listed |= set(named_from_owners(relative)) if relative else set()
    budget = [SOCKET_WALK]
    for top in filter(None, [*SOCKET_FOLDERS, os.environ.get("XDG_RUNTIME_DIR", ""), os.path.expanduser("~")]):
        listed |= set(walk_files(top, 4, budget))
    found = {path for path in listed if is_socket(path)}
    found |= {alias for path in found for alias in mount_aliases(path) if is_socket(alias)}
    inside = tuple(str(folder).rstrip("/") + "/" for folder in writable)
    return sorted(path for path in found if not path.startswith(inside))


def network_tables() -> list[str]:
    """/proc/PID/net/unix of one process in each network namespace this process can see."""
    seen, tables = set(), []
    for name in ["self", *(name for name in os.listdir("/proc") if name.isdigit())]:
        try:
            namespace = os.readlink(f"/proc/{name}/ns/net")
            if namespace in seen:
                continue
            seen.add(namespace)
            with open(f"/proc/{name}/net/unix", encoding="utf-8", errors="replace") as file:
                tables.append(file.read())
        except OSError:
            continue
    return tables


def named_from_owners(relative: dict[str, str]) -> list[str]:
    """Sockets bound by a relative name (after a chdir): the name from the working folder of each process that
    holds the socket (by its inode, in /proc/PID/fd)."""
    wanted, found = {f"socket:[{inode}]": name for inode, name in relative.items()}, []
    for pid in (name for name in os.listdir("/proc") if name.isdigit()):
        try:
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
            if held := links & wanted.keys():
                cwd = os.readlink(f"/proc/{pid}/cwd")
                found += [os.path.join(cwd, wanted[link]) for link in held]
        except OSError:
            continue
    return found


def walk_files(top: str, depth: int, budget: list[int]):
    """The paths under `top` that are neither a file, a folder nor a link (sockets, fifos, devices: the folder's
    listing says so, no stat needed), `depth` folders down and budget[0] entries at most, not following links."""
    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    budget[0] -= len(entries)
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            if depth > 1 and budget[0] > 0:
                yield from walk_files(entry.path, depth - 1, budget)
        elif not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
            yield entry.path


def mount_aliases(path: str) -> list[str]:
    """`path` as other mounts of the same file system show it (a bind mount of its folder elsewhere)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as file:
            mounts = [(fields[2], unescape(fields[3]), unescape(fields[4]))
                      for fields in (line.split() for line in file) if len(fields) > 4]
    except OSError:
        return []
    holding = [mount for mount in mounts if path == mount[2] or path.startswith(mount[2].rstrip("/") + "/")]
    if not holding:
        return []
    device, root, point = max(holding, key=lambda mount: len(mount[2]))
    inner = os.path.join(root, os.path.relpath(path, point))  # where it is in its file system
    return [os.path.normpath(os.path.join(other, os.path.relpath(inner, other_root))) for other_device, other_root, other
            in mounts if other_device == device and (inner + "/").startswith(other_root.rstrip("/") + "/")
            and other != point]


def unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda found: chr(int(found[1], 8)), field)  # mountinfo's \040 for a space


def is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False
