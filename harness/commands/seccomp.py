"""The seccomp program every command runs under, beside Landlock (landlock.py): what Landlock does not cover.

The failures it prevents, each found by trying: `prlimit --pid AGENT --nofile=3:3` hung the agent, and renice or
taskset reach any process of the user (Landlock's scopes stop signals and ptrace, not these); run as root, a
command loaded a BPF tracer that read the agent's next request, key and all; UDP and raw sockets are not
Landlock's to refuse. The program is a list of rules, each a system call by its number, refused outright or
unless its arguments name the command itself; it is built here, and lifetime.py installs it (PR_SET_SECCOMP) with
the Landlock ruleset, in the command's process before the shell starts.
"""

from __future__ import annotations

import errno
import os
import struct

# System call numbers on x86-64 and arm64: those a command may call on itself only, those it may not call at all.
SYSCALLS = {
    "x86_64": {"arch": 0xC000003E, "socket": 41, "io_uring_setup": 425, "bpf": 321, "perf_event_open": 298,
               "add_key": 248, "request_key": 249, "keyctl": 250, "prlimit64": 302, "setpriority": 141,
               "sched_setaffinity": 203, "sched_setscheduler": 144, "sched_setparam": 142, "sched_setattr": 314,
               "ioprio_set": 251, "migrate_pages": 256, "move_pages": 279, "ioctl": 16, "setxattr": 188,
               "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
               "setxattrat": 463, "removexattrat": 466, "file_setattr": 469},
    "aarch64": {"arch": 0xC00000B7, "socket": 198, "io_uring_setup": 425, "bpf": 280, "perf_event_open": 241,
                "add_key": 217, "request_key": 218, "keyctl": 219, "prlimit64": 261, "setpriority": 140,
                "sched_setaffinity": 122, "sched_setscheduler": 119, "sched_setparam": 118, "sched_setattr": 274,
                "ioprio_set": 30, "migrate_pages": 238, "move_pages": 239, "ioctl": 29, "setxattr": 5,
                "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16,
                "setxattrat": 463, "removexattrat": 466, "file_setattr": 469},
}
SYSCALLS["amd64"], SYSCALLS["arm64"] = SYSCALLS["x86_64"], SYSCALLS["aarch64"]


def seccomp_program(network: bool, unix: bool = True) -> bytes:
    """The seccomp program the tether installs (x86-64 and arm64; b"" elsewhere, where Landlock alone holds):
      - no call on another process (prlimit, renice, taskset, ... on the agent: Landlock's scopes stop signals
        and ptrace, not these), only on the command itself (pid 0);
      - no BPF, perf events or kernel keyrings: a tracer sees every process of the user, the keyring their keys;
      - no extended attribute or inode flag set (an ACL granting another user ~/.ssh/id_rsa, `chattr +a`): Landlock
        covers a file's content and names, not these, and a path is not seen here to tell inside from outside;
      - no io_uring, whose operations (sockets, extended attributes) do not pass through the calls refused here;
      - without the network, no socket but a Unix one (UDP and raw are not Landlock's); and with `unix` False not
        even that: where no mount namespace covers the socket files outside (a Docker daemon's, the ssh-agent's),
        no path can be told apart here, so none is reached (socketpair, a call of its own, still works);
      - no call of another architecture (32-bit x86 on x86-64) or of x32: their numbers are other numbers."""
    numbers = SYSCALLS.get(os.uname().machine.lower())
    if numbers is None:
        return b""
    eperm, eacces, enosys, unsupported = (0x00050000 | code for code in (errno.EPERM, errno.EACCES, errno.ENOSYS,
                                                                          errno.EOPNOTSUPP))
    rules = [(name, [(16, 0)], eperm) for name in ("prlimit64", "sched_setaffinity", "sched_setscheduler",
                                                   "sched_setparam", "sched_setattr", "migrate_pages", "move_pages")]
    rules += [("setpriority", [(16, 0), (24, 0)], eperm), ("ioprio_set", [(16, 1), (24, 0)], eperm)]
    rules += [(name, [], eperm) for name in ("bpf", "perf_event_open", "add_key", "request_key", "keyctl")]
    # As a file system without them would: `cp -a` then keeps the mode its own way instead of failing.
    rules += [(name, [], unsupported) for name in ("setxattr", "lsetxattr", "fsetxattr", "removexattr",
                                                   "lremovexattr", "fremovexattr", "setxattrat", "removexattrat",
                                                   "file_setattr")]
    # io_uring does what system calls do without passing through them (sockets, xattrs): programs fall back on
    # ENOSYS, as on a kernel without it.
    rules += [("io_uring_setup", [], enosys)]
    if not network:
        rules += [("socket", [(16, 1)] if unix else [], eacces)]  # AF_UNIX is 1
    program = [op(LD, 4), op(JEQ, numbers["arch"], 1, 0), op(RET, eacces),  # another architecture's call
               op(LD, 0), op(JGE, 0x40000000, 0, 1), op(RET, eacces)]  # x32's numbers
    for name, checks, refusal in rules:  # each: the call by its number; allowed when every argument checked is so
        length = 3 + 2 * len(checks) + (1 if checks else 0)
        program += [op(LD, 0), op(JEQ, numbers[name], 0, length - 2)]
        for n, (offset, value) in enumerate(checks):  # the low 32 bits of argument n (little-endian machines)
            program += [op(LD, offset), op(JEQ, value, 0, length - 5 - 2 * n)]
        program += ([op(RET, ALLOW)] if checks else []) + [op(RET, refusal)]
    for request in INODE_FLAG_REQUESTS:  # ioctl(fd, request): refused for these requests only
        program += [op(LD, 0), op(JEQ, numbers["ioctl"], 0, 3), op(LD, 24), op(JEQ, request, 0, 1), op(RET, eperm)]
    return b"".join(program + [op(RET, ALLOW)])


# ioctls that change a file through a descriptor open for reading, which Landlock allows outside: FS_IOC_SETFLAGS
# (and its 32-bit form) and FS_IOC_FSSETXATTR, chattr's flags; FS_IOC_SETVERSION (both forms); an encryption policy.
INODE_FLAG_REQUESTS = (0x40086602, 0x40046602, 0x401C5820, 0x40087602, 0x40047602, 0x800C6613)
LD, JEQ, JGE, RET, ALLOW = 0x20, 0x15, 0x35, 0x06, 0x7FFF0000  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, ..|JGE|K, BPF_RET|K


def op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    """One BPF instruction (struct sock_filter)."""
    return struct.pack("=HBBI", code, jt, jf, k)
