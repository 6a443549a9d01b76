"""The tether between the agent and a command it runs: on POSIX, the command ends when the agent does.

The failure it prevents: after `kill -9` of the agent (or a crash, or its terminal closed), an approved command (a
test suite, a server, a `sleep 1000`) went on running with nobody left to read its output or stop it. Linux's
parent-death signal (prctl PR_SET_PDEATHSIG) would reach only the shell, not what the shell started (dash forks
even a lone `sleep`), and other systems have none; a pipe works on every POSIX system:

shell.py starts this script, `python -I -S tether.py FD COMMAND [RULESET SECCOMP]`, as the leader of a new
process group, holding FD, the read end of a pipe whose write end only the agent has. It starts `/bin/sh -c
COMMAND` in that group — inside the kernel boundary first when given one (landlock.py: the Landlock ruleset the
agent built, and a seccomp program in hex), so the shell and all it starts are inside and the tether is not — and
waits for whichever comes first:
  - the shell ends: the tether ends the same way (the exit code, or the signal that ended it), so the agent sees
    the command's own status. What the command left running in the background stays, as it would without it;
  - the pipe ends: the agent is gone, and the kernel closed its end. The tether kills the whole process group,
    itself included.

It runs apart from plainagent, with only the standard library, and -I -S for a quick start: it adds about 20 ms
to each command (a Python starting), against seconds for the model's reply.
"""

import os
import select
import signal
import sys

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2  # linux/prctl.h, linux/seccomp.h
PR_SET_SECUREBITS, PR_CAPBSET_DROP, CAPABILITY_VERSION_3 = 28, 24, 0x20080522  # linux/capability.h
CLONE_NEWIPC = 0x08000000  # linux/sched.h
SECURE_NOROOT_LOCKED = 0b11  # SECBIT_NOROOT and its lock: uid 0 gains no capability by executing a file
LANDLOCK_RESTRICT_SELF = 446  # the same number on every architecture
SHELL = "/system/bin/sh" if hasattr(sys, "getandroidapilevel") else "/bin/sh"  # subprocess's shell=True choice


def main() -> None:
    watch, command, boundary = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    woken, wake = os.pipe()  # the shell's end (SIGCHLD) writes a byte here, so one select waits for both ends
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # set before the fork: an early end is not missed
    shell = os.fork()
    if shell == 0:
        run(command, watch, boundary)
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):  # a command that signals its own group must not cut the tether
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    watching = [watch, woken]
    while True:
        ended, status = os.waitpid(shell, os.WNOHANG)
        if ended:
            break
        ready = select.select(watching, [], [])[0]
        if watch in ready and os.read(watch, 1) == b"":  # the agent is gone
            if os.getpgrp() == os.getpid():  # the command's own group, which shell.py has this process lead
                os.killpg(0, signal.SIGKILL)
            watching.remove(watch)  # started some other way: a group not its own is not its to kill
        if woken in ready:
            os.read(woken, 512)
    end_as(os.waitstatus_to_exitcode(status))


def run(command: str, watch: int, boundary: list[str]) -> None:
    """Become the shell running `command` (in the forked child), inside `boundary` if given. Never returns."""
    os.close(watch)  # the command does not hold the tether: only the agent's end of it counts
    if boundary:
        confine(int(boundary[0]), bytes.fromhex(boundary[1]))
    # Python ignores these at start-up, and an ignored signal stays ignored through exec: give the command the
    # defaults, as subprocess does (`yes | head` must end `yes` with SIGPIPE).
    for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"):
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
    no new privileges, the seccomp program, then the Landlock ruleset; or end here, for a command never runs
    outside the boundary the start line promised. Made here rather than in landlock.py so that each command
    starts without loading it (15 ms)."""
    import ctypes
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    no, zero = ctypes.c_ulong(1), ctypes.c_ulong(0)  # prctl's arguments are unsigned longs, never stray bits
    # Root's: System V message queues, semaphores and shared memory of its own, not every process's; the bounding set
    # emptied and root's special rules locked off, so nothing executed gets them back. Refused (EPERM) to a user
    # who holds no capability: then there is nothing to drop, and only the user's own IPC objects are in reach.
    libc.unshare(CLONE_NEWIPC)
    libc.prctl(PR_SET_SECUREBITS, ctypes.c_ulong(SECURE_NOROOT_LOCKED), zero, zero, zero)
    for capability in range(64):
        libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(capability), zero, zero, zero)
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
    print(f"plainagent: the command was not run: the kernel sandbox could not be entered ({failed}: "
          f"{os.strerror(ctypes.get_errno())}).", file=sys.stderr)
    os._exit(126)  # what a shell says for a command it cannot run


def end_as(code: int) -> None:
    """Exit as the shell did: with its exit code, or killed by the signal that killed it (Popen's -N)."""
    if code >= 0:
        os._exit(code)
    try:
        import resource  # the shell dumped its core already, if it did: no second core file in the workspace

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(-code, signal.SIG_DFL)
    except (ImportError, OSError, ValueError):  # SIGKILL's action cannot be changed, nor needs to be
        pass
    os.kill(os.getpid(), -code)
    os._exit(128 - code)  # a signal that does not end a process (it cannot have ended the shell either)


if __name__ == "__main__":
    main()
