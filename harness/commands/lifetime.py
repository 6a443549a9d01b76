"""A command's lifetime: the tether, a small process between the agent and each command it runs, starts it inside
its walls and, on POSIX, ends it when the agent ends, and nothing the command started outlives it.

The failures it prevents: after `kill -9` of the agent, an approved command (a server, a `sleep 1000`) went on
running with nobody to stop it; a command's `nohup`, `setsid` or double fork outlived the agent, edited files after
its last look and fed the next session. A parent-death signal reaches only the shell, and one `setsid` leaves a
process group; a pipe, a subreaper and a PID namespace are not left:

shell.py starts this, `python -I -S -c SOURCE FD REPORT COMMAND [RULESET SECCOMP [WALLS...]]`, as the leader of a
new process group holding FD, the read end of a pipe whose write end only the agent has. It marks itself a
subreaper (every orphan below it becomes its child), starts `/bin/sh -c COMMAND` — inside the kernel boundary when
given one (the Landlock ruleset landlock.py built, a seccomp program in hex, the namespaces' WALLS), so the shell
and all it starts are inside and the tether is not — and waits:
  - the shell ends: every process still below is killed, the count goes to REPORT (a pipe the agent reads: "2
    background processes were ended"), and the tether ends as the shell did, so the agent sees its status;
  - the pipe ends: the agent is gone, or stopped the command (timeout, Ctrl-C): all below is killed, then the group.
With WALLS the shell runs in a PID namespace whose `init` (below) ends every other process in it when the shell
ends, and a mount namespace where all but the writable folders is read-only (`enter_namespaces`).

It runs apart from plainagent, standard library only, from the source the agent read when it started (a command
may rewrite this file on disk), with -I -S: about 25 ms a command, against seconds for the model's reply.
"""

import ctypes
import os
import resource
import select
import signal
import struct
import sys
import time

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2  # linux/prctl.h, linux/seccomp.h
PR_SET_SECUREBITS, PR_CAPBSET_DROP, CAPABILITY_VERSION_3 = 28, 24, 0x20080522  # linux/capability.h
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWIPC = 0x08000000  # linux/sched.h
SECURE_NOROOT_LOCKED = 0b11  # SECBIT_NOROOT and its lock: uid 0 gains no capability by executing a file
LANDLOCK_ADD_RULE, LANDLOCK_RESTRICT_SELF = 445, 446  # the same numbers on every architecture
LANDLOCK_READ = 0b1101  # EXECUTE, READ_FILE and READ_DIR (landlock.py's READ)
RLIMIT_NPROC = 6
GRACE = 0.2  # seconds for what ends on its own once the shell has ended, before it is ended
MAX_PROCESSES = 4096  # a command's processes at once, beside what the user already runs: a fork loop stops there
SHELL = "/system/bin/sh" if hasattr(sys, "getandroidapilevel") else "/bin/sh"  # subprocess's shell=True choice
GROUP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")  # a command that signals its own group must not cut the tether

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def main() -> None:
    watch, report, command, boundary = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    libc.prctl(PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
    woken, wake = os.pipe()  # a child's end (SIGCHLD) writes a byte here, so one select waits for both ends
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # set before the fork: an early end is not missed
    shell = os.fork()
    if shell == 0:
        os.close(woken), os.close(wake), os.close(watch)  # the command holds neither: only the agent's end counts
        start(command, report, boundary)
    for name in GROUP_SIGNALS:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    watching = [watch, woken]
    while True:
        if (ended := reap(shell)) is not None:
            break
        ready = select.select(watching, [], [])[0]
        if watch in ready and os.read(watch, 1) == b"":  # the agent is gone, or stopped the command
            end_descendants()
            if os.getpgrp() == os.getpid():  # the command's own group, which shell.py has this process lead
                os.killpg(0, signal.SIGKILL)
            os._exit(137)
        if woken in ready:
            os.read(woken, 512)
    settle(lambda: descendants(os.getpid()))
    n_ended = end_descendants()
    if n_ended:
        os.write(report, f"{n_ended}\n".encode())
    end_as(os.waitstatus_to_exitcode(ended))


def start(command: str, report: int, boundary: list[str]) -> None:
    """In the forked child: the shell running `command`, inside `boundary` if given. Never returns. With walls,
    this process sets up the namespaces and waits for their first process (init), which runs the shell."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    ruleset, seccomp, walls = (int(boundary[0]), bytes.fromhex(boundary[1]), boundary[2:]) if boundary else (0, b"", [])
    if walls:
        for name in GROUP_SIGNALS:
            signal.signal(getattr(signal, name), signal.SIG_IGN)
        try:
            enter_namespaces(walls)
        except OSError as error:
            refuse(f"the namespaces could not be set up ({error.strerror or error}{error.filename or ''})")
        init = os.fork()  # the first process of the new PID namespace
        if init == 0:
            try:
                inside_namespaces(ruleset)
            except OSError as error:
                refuse(f"the namespaces could not be set up ({error.strerror or error}{error.filename or ''})")
            confine(ruleset, seccomp)
            os._exit(run_init(command, report))
        os.close(report)
        while True:  # only init is this process's child
            try:
                end_as(os.waitstatus_to_exitcode(os.waitpid(init, 0)[1]))
            except ChildProcessError:
                os._exit(1)
            except InterruptedError:
                continue
    if boundary:
        confine(ruleset, seccomp)
    os.close(report)
    run_shell(command)


def run_init(command: str, report: int) -> int:
    """PID 1 of the command's own PID namespace: run the shell, reap what is orphaned meanwhile, and when the shell
    ends, end every other process of the namespace (kill -1 from init reaches them all) and count them."""
    shell = os.fork()
    if shell == 0:
        os.close(report)
        run_shell(command)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 1
        if pid == shell:
            break
    others = lambda: [name for name in os.listdir("/proc") if name.isdigit() and name != "1" and not zombie(int(name))]
    settle(others)
    n_left = len(others())
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    if n_left:
        os.write(report, f"{n_left}\n".encode())
    return os.waitstatus_to_exitcode(status)


def run_shell(command: str) -> None:
    """Become the shell running `command`. Never returns."""
    # Python ignores these at start-up, and an ignored signal stays ignored through exec: give the command the
    # defaults, as subprocess does (`yes | head` must end `yes` with SIGPIPE; `kill -INT` must end a job).
    for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ", *GROUP_SIGNALS):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execv(SHELL, [SHELL, "-c", command])
    except OSError as error:
        print(f"plainagent: cannot run {SHELL}: {error.strerror or error}", file=sys.stderr)
    os._exit(127)  # what a shell says for a command it cannot find


def confine(ruleset: int, seccomp: bytes) -> None:
    """Enter the kernel boundary the agent built (landlock.py): no capabilities (a command run as root keeps the
    ownership of root's files, not the power to load a BPF program, make a device node or mark a file immutable),
    no new privileges, a bound on processes, the seccomp program, then the Landlock ruleset; or end here, for a
    command never runs outside the boundary the start line promised."""
    no, zero = ctypes.c_ulong(1), ctypes.c_ulong(0)  # prctl's arguments are unsigned longs, never stray bits
    # Root's: System V IPC objects of its own, not every process's; the bounding set emptied and root's special
    # rules locked off, so nothing executed gets them back. (A user with no capability: nothing to drop.)
    libc.unshare(CLONE_NEWIPC)
    libc.prctl(PR_SET_SECUREBITS, ctypes.c_ulong(SECURE_NOROOT_LOCKED), zero, zero, zero)
    for capability in range(64):
        libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(capability), zero, zero, zero)
    bound_processes()
    header = struct.pack("Ii", CAPABILITY_VERSION_3, 0)  # this process; its capability sets, all empty
    program = ctypes.create_string_buffer(seccomp)
    fprog = struct.pack("HxxxxxxQ", len(seccomp) // 8, ctypes.addressof(program))  # struct sock_fprog
    if libc.capset(header, bytes(24)) != 0:
        failed = "dropping capabilities"
    elif libc.prctl(PR_SET_NO_NEW_PRIVS, no, zero, zero, zero) != 0:
        failed = "no_new_privs"
    elif seccomp and libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.c_char_p(fprog), zero,
                                zero) != 0:
        failed = "seccomp"
    elif libc.syscall(ctypes.c_long(LANDLOCK_RESTRICT_SELF), ctypes.c_long(ruleset), ctypes.c_long(0)) != 0:
        failed = "Landlock"
    else:
        os.close(ruleset)
        return
    refuse(f"the kernel sandbox could not be entered ({failed}: {os.strerror(ctypes.get_errno())})")


def refuse(why: str) -> None:
    print(f"plainagent: the command was not run: {why}.", file=sys.stderr)
    os._exit(126)  # what a shell says for a command it cannot run


def bound_processes() -> None:
    """A fork loop stops at MAX_PROCESSES beside what the user runs already, not at the user's own limit, where the
    agent could start no thread either. (Root's processes are not counted by the kernel: inside_namespaces
    bounds those with the PID namespace's pid_max.)"""
    soft, hard = resource.getrlimit(RLIMIT_NPROC)
    uid = os.getuid()
    n_running = sum(1 for name in os.listdir("/proc") if name.isdigit() and owner(name) == uid)
    limit = n_running + MAX_PROCESSES
    if hard == resource.RLIM_INFINITY or limit < hard:
        try:
            resource.setrlimit(RLIMIT_NPROC, (min(limit, soft) if soft != resource.RLIM_INFINITY else limit, hard))
        except (OSError, ValueError):
            pass


def owner(pid: str) -> int:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return -1


def reap(pid: int) -> int | None:
    """The wait status of `pid` once it ended, else None; reaping, on the way, the orphans given to this one."""
    while True:
        try:
            ended, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return None
        if ended == 0:
            return None
        if ended == pid:
            return status


def end_descendants() -> int:
    """Kill every process below this one, however it got there (a setsid, a double fork: as a subreaper, their
    orphans are this process's), until none is left; how many were running."""
    ended: set[int] = set()
    for _ in range(1000):  # each round kills all it finds; a fork loop's new children are found in the next
        below = descendants(os.getpid())
        if not below:
            break
        for pid, state in below.items():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            if state != "Z":
                ended.add(pid)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        time.sleep(0.001)
    return len(ended)


def descendants(root: int) -> dict[int, str]:
    """Every process below `root` (by /proc's parent links), with its state ("Z": a zombie)."""
    parents, states = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as file:
                fields = file.read().rsplit(b")", 1)[1].split()  # after "PID (name)", which may hold spaces
        except (OSError, IndexError):
            continue
        parents[int(name)], states[int(name)] = int(fields[1]), fields[0].decode()
    below, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in below:
                below[pid] = states[pid]
                frontier.append(pid)
    return below


def settle(left: callable) -> None:
    """A moment for what ends on its own once the shell is gone (multiprocessing's forkserver, a pipe's reader),
    before what is `left()` is ended and counted."""
    deadline = time.monotonic() + GRACE
    while left() and time.monotonic() < deadline:
        time.sleep(0.01)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:  # what ended meanwhile is reaped, so it is not seen as left
                pass
        except ChildProcessError:
            pass


def zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            return file.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True


# --- the namespaces: what holds after the command, and what the kernel's mounts hold that Landlock does not ---
# WALLS, from landlock.py's Boundary.walls(): "w:PATH" a folder commands write in, "r:PATH" a path beneath one that
# stays read-only (git's hooks and config, instruction files, plainagent's own code), "shm:PATH" the session's own
# folder that stands for /dev/shm, "sock:PATH" a Unix socket file outside to cover (network off: namespaces.py),
# "hide:PATH" one of the workspace's secret files, covered by "blank:FILE" (or "blankdir:DIR"), empty and unreadable.

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18
MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 1  # the same number everywhere
PID_MAX = str(MAX_PROCESSES)  # root's fork loop: the PID namespace has no more numbers than this


def enter_namespaces(walls: list[str]) -> None:
    """Into a mount and a PID namespace of the command's own (and a user namespace, for a user without
    CAP_SYS_ADMIN): every mount read-only but the writable folders, those of them that must stay read-only
    bound over, the session's /dev/shm, and each Unix socket file outside covered by /dev/null. The next process
    forked is the PID namespace's first (init). Raises OSError, with the step that failed."""
    writable = [path[2:] for path in walls if path.startswith("w:") and os.path.isdir(path[2:])]
    readonly = [path[2:] for path in walls if path.startswith("r:") and os.path.lexists(path[2:])]
    shm = next((path[4:] for path in walls if path.startswith("shm:")), None)
    blanks = {wall.split(":", 1)[0]: wall.split(":", 1)[1] for wall in walls if wall.startswith(("blank:", "blankdir:"))}
    hidden = [path[5:] for path in walls if path.startswith("hide:") and os.path.lexists(path[5:]) and blanks]
    uid, gid = os.getuid(), os.getgid()
    if uid != 0 or libc.unshare(CLONE_NEWNS | CLONE_NEWPID) != 0:  # root in a container may need a user namespace
        check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID), "unshare")
        for name, line in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as file:  # the user is itself inside: files keep their owners
                file.write(line)
    check(mount(None, "/", None, MS_REC | MS_PRIVATE), "/")  # nothing done here reaches the user's own mounts
    for path in writable + readonly:
        check(mount(path, path, None, MS_BIND | MS_REC), path)  # a mount of its own, to set apart from "/"
    if shm:
        check(mount(shm, "/dev/shm", None, MS_BIND), "/dev/shm")
    for path in (path[5:] for path in walls if path.startswith("sock:")):
        check(mount("/dev/null", path, None, MS_BIND), path, missing_ok=True)  # connect() finds a device
    for path in hidden:  # reading it is refused; removing or renaming it, too (a mount point)
        check(mount(blanks["blankdir" if os.path.isdir(path) else "blank"], path, None, MS_BIND), path, missing_ok=True)
    check(set_attributes("/", MOUNT_ATTR_RDONLY, 0), "/")  # every mount: contents, modes, times, names
    for path in writable + (["/dev/shm"] if shm else []):
        check(set_attributes(path, 0, MOUNT_ATTR_RDONLY), path)
    for path in readonly + hidden:
        check(set_attributes(path, MOUNT_ATTR_RDONLY, 0), path, missing_ok=True)
    try:
        os.chdir(os.getcwd())  # the working folder, found again by its name: on the mounts just made, not under them
    except OSError:  # a folder this user may not look up (the probe's): nothing runs there
        pass


def inside_namespaces(ruleset: int | None = None) -> None:
    """In init, the first process of the command's PID namespace: a /proc of its own (`ps` shows the command's
    processes, not the agent's), readable inside the Landlock ruleset (a rule for the new mount, which did not
    exist when the agent built it), and as root a bound on the namespace's process numbers."""
    check(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC), "/proc")
    if ruleset:
        proc = os.open("/proc", os.O_PATH | os.O_CLOEXEC)
        rule = struct.pack("=Qi", LANDLOCK_READ, proc)  # landlock_path_beneath_attr, packed
        added = libc.syscall(ctypes.c_long(LANDLOCK_ADD_RULE), ctypes.c_long(ruleset), ctypes.c_long(1), rule,
                             ctypes.c_long(0))
        os.close(proc)
        check(added, "/proc (Landlock)")
    if os.getuid() == 0:
        try:
            with open("/proc/sys/kernel/pid_max", "w") as file:  # per PID namespace since Linux 6.14
                file.write(PID_MAX)
        except OSError:
            pass


def mount(source: str | None, target: str, kind: str | None, flags: int) -> int:
    encode = lambda text: None if text is None else os.fsencode(text)  # noqa: E731
    return libc.mount(encode(source), encode(target), encode(kind), ctypes.c_ulong(flags), None)


def set_attributes(path: str, add: int, clear: int) -> int:
    """mount_setattr(2) on the mount at `path` and every mount below it."""
    attributes = ctypes.create_string_buffer(add.to_bytes(8, "little") + clear.to_bytes(8, "little") + bytes(16))
    return libc.syscall(ctypes.c_long(MOUNT_SETATTR), ctypes.c_long(AT_FDCWD), os.fsencode(path),
                        ctypes.c_ulong(AT_RECURSIVE), attributes, ctypes.c_size_t(32))


def check(result: int, step: str, missing_ok: bool = False) -> None:
    if result != 0:
        code = ctypes.get_errno()
        if not (missing_ok and code == 2):
            raise OSError(code, os.strerror(code), f": {step}")


def end_as(code: int) -> None:
    """Exit as the shell did: with its exit code, or killed by the signal that killed it (Popen's -N)."""
    if code >= 0:
        os._exit(code)
    try:
        # The shell dumped its core already, if it did: no second core file in the workspace.
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(-code, signal.SIG_DFL)
    except (OSError, ValueError):  # SIGKILL's action cannot be changed, nor needs to be
        pass
    os.kill(os.getpid(), -code)
    os._exit(128 - code)  # a signal that does not end a process (it cannot have ended the shell either)


if __name__ == "__main__":
    main()
