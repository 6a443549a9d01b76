"""Commands inside a kernel boundary: on Linux, what a command can touch is decided by Landlock, not by a list.

The failure it prevents: the deny rules (guard.py) are a list of shapes, and a shell has more shapes than any
list. Tried in --yes mode, 27 of 33 commands no rule foresaw got through: the home folder removed through
`${PWD%/*}`, `xargs` or a symlink to `rm`; lines appended to ~/.bashrc; agent.py changed; a host reached with
python; the key read from the agent's .env. Codex CLI and Claude Code answer with the operating system, and so
does this module, with the standard library alone (`ctypes`, the Landlock and seccomp system calls).

The agent builds one Landlock ruleset per session (`Boundary.ruleset`) and a seccomp program (seccomp.py), and
the tether (lifetime.py) enters both in the command's own process, capabilities dropped, before it runs the shell:
the command and everything it starts are inside, the agent stays outside. Inside,
  - writes (create, remove, rename, truncate, write, make folders and links) only beneath the workspace, a
    private temp folder the command is given as TMPDIR, the folders the user named (PLAINAGENT_SANDBOX_WRITE),
    /dev/shm and the few devices a command writes to (/dev/null, /dev/tty, ...);
  - reads everywhere but: what secret_files.py refuses, wherever secret_search.py finds it (every home, /srv, /opt,
    /var/www, /etc's shadow files and host keys), the .env beside agent.py, plainagent's own state and settings,
    and /dev but for those devices (as root, /dev/sda would be every file). Landlock grants and never denies, so
    "all but X" is granted as X's siblings, down each of X's folders (which keep the right to be listed). The
    workspace's own secret files are the namespaces' to hide (`bound`: lifetime.py binds an unreadable empty file
    over each), for a Landlock rule that hid one would forbid every new file beside it;
  - no network unless the user turns it on: Landlock refuses every TCP connect and bind (ABI 4 and later), and
    seccomp any socket but a Unix one (UDP, raw) and io_uring, which would go round it;
  - no signal to a process outside, nor a connection to an abstract Unix socket made outside (ABI 6): `pkill
    python` cannot kill the agent; seccomp refuses the calls that change another process (prlimit, renice), BPF
    and the kernel's keyrings; no capability, even as root, and no set-user-ID gain (no_new_privs).
Each right exists from some Landlock ABI on (truncate from 3, TCP from 4, device ioctl from 5, scopes from 6):
what this kernel has is enforced, and `Boundary.summary` says what that is, for the start line and /sandbox;
refusal_notes.py tells the model, after a command, which wall it met.
Landlock covers content and names while the command runs; what holds after it (modes and times outside, Unix
socket files, processes left running, git's hooks and config) is namespaces.py's, lifetime.py's and look.py's.
"""

from __future__ import annotations

import ctypes
import functools
import os
import stat
import struct
import sys
import tempfile
import weakref
from pathlib import Path

from harness.commands import secret_search
from harness.commands.namespaces import (
    INSTRUCTION_FILES,
    SHARED_MEMORY,
    close,
    git_parts,
    namespaces_work,
    remove_left_behind,
    unix_sockets,
)
from harness.commands.seccomp import seccomp_program
from harness.commands.secret_search import SecretSearch, real_paths
from harness.common.directories import hold

# System calls: Landlock's numbers are the same on every architecture (they came after the tables were unified).
CREATE_RULESET, ADD_RULE = 444, 445  # and restrict_self, 446, which the tether calls
CREATE_RULESET_VERSION = 1  # the flag that asks create_ruleset for the ABI version
RULE_PATH_BENEATH = 1

# Rights on files and folders, in the order the ABIs added them (linux/landlock.h).
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR, REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, \
    MAKE_FIFO, MAKE_BLOCK, MAKE_SYM, REFER, TRUNCATE, IOCTL_DEV, RESOLVE_UNIX = (1 << bit for bit in range(17))
READ = EXECUTE | READ_FILE | READ_DIR
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV | RESOLVE_UNIX  # all a rule on a file may hold
DEVICE_RIGHTS = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV
BIND_TCP, CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
# Devices a command reads or writes as a matter of course; the rest of /dev (disks, terminals) is out of reach.
DEVICES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"]

SETTINGS = "PLAINAGENT_SANDBOX_WRITE=DIR, PLAINAGENT_SANDBOX_NETWORK=on, or PLAINAGENT_SANDBOX=off"


def abi_version() -> int:
    """The Landlock ABI this kernel offers (1 to 7 so far); 0 where there is none (not Linux, too old, off)."""
    if not sys.platform.startswith("linux") or not all(hasattr(os, name) for name in ("O_PATH", "killpg")):
        return 0  # not Linux, or a Python without what the boundary is built and entered with (lifetime.py)
    try:
        version = syscall(CREATE_RULESET, None, 0, CREATE_RULESET_VERSION)
    except OSError:  # ENOSYS: older than 5.13; EOPNOTSUPP: built in but turned off at boot
        return 0
    return version


@functools.cache
def libc() -> ctypes.CDLL:
    """libc, loaded once: each load makes a class of its own (a ruleset of 11,000 rules spent 0.2 s on that)."""
    library = ctypes.CDLL(None, use_errno=True)
    library.syscall.restype = ctypes.c_long
    return library


def syscall(number: int, *args) -> int:
    """A system call through libc; raises OSError with its errno when it fails."""
    # A variadic call: every integer goes as a long, so no register holds stray upper bits.
    result = libc().syscall(ctypes.c_long(number), *[ctypes.c_long(arg) if isinstance(arg, int) else arg
                                                     for arg in args])
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


class Boundary:
    """One session's kernel boundary for commands: what the ruleset grants, and the ruleset itself."""

    def __init__(self, workspace: Path, hidden: list[Path], writable: list[Path] = (), network: bool = False,
                 abi: int | None = None, searched: bool = True, namespaces: bool | None = None,
                 search: SecretSearch | None = None):
        self.abi = abi_version() if abi is None else abi
        self.workspace = Path(workspace)
        self.hidden = [Path(path) for path in hidden]  # what commands may not read (beside most of /dev)
        self.extra = [Path(path) for path in writable]  # folders the user lets commands write in
        # The .git of a repository the workspace is a part of; judged against every folder commands write in.
        self.git = repository_outside(self.workspace, [*self.extra, Path(SHARED_MEMORY)])
        self.network = network
        self.searched = searched  # whether every folder the search for secrets meant to look in was looked in
        self.shallow = list(self.hidden)  # what the search at start found: kept whatever the whole one finds
        self.search = search  # the whole search (secret_search.py), looked at again before each command
        self.bound: list[Path] = []  # the workspace's own secret files, bound over in the namespaces
        self.tmpdir: Path | None = None  # made at the first command, removed when the agent ends
        self.shm: Path | None = None  # ... and beside it, what commands see as /dev/shm inside the namespaces
        self.held: dict[str, int | None] = {"fd": None}  # the ruleset's file descriptor, once built
        # The walls after the command (lifetime.py's namespaces): where this kernel lets a process make them.
        self.namespaces = namespaces_work() if namespaces is None and self.abi else bool(namespaces and self.abi)
        self.own_code: list[Path] = []  # plainagent's own files where commands write: read-only to them

    # --- what it enforces, in words ---

    def summary(self) -> str:
        """One line on what holds, for the start line and /sandbox."""
        if not self.abi:
            return "commands: no kernel sandbox here (Landlock unavailable); the guard rail only"
        extra = "".join([*(f", its repository's {folder}" for folder in self.git), *(f", {f}" for f in self.extra)])
        truncate = "" if self.abi >= 3 or self.namespaces else \
            " (but truncating a file anywhere: that needs Landlock ABI 3)"
        net = "network allowed" if self.network else "no network" if self.abi >= 4 or seccomp_program(False) else \
            "network not blocked (that needs Landlock ABI 4, or seccomp on x86-64 or arm64)"
        shut = self.shut_folders()
        shut = f" (no new file in {', '.join(map(str, shut))}: it holds what commands may not read)" if shut else ""
        secrets = "secrets unreadable" if self.searched or self.search else (  # the whole search goes on past it
            f"secrets unreadable where found (the home folder holds over {secret_search.HOME_MAX_ENTRIES:,} entries: "
            "the search stopped there)")
        if self.search is not None and not self.namespaces and not self.home_inside():
            secrets = secrets.replace("secrets", "secrets outside the workspace", 1)  # no mount to bind over its own
        return (f"commands: writes only inside the workspace{extra} and a private TMPDIR{truncate}{shut}, {net}, "
                f"{secrets} (Landlock ABI {self.abi})")

    def afterwards(self, short: bool = False) -> str:
        """What holds after a command: the namespaces' walls, or what stands without them. `short`: the clause the
        start line ends with; else the sentence /sandbox shows."""
        if not self.abi:
            return ""
        if short:
            return ("; nothing a command starts outlives it, and git's hooks and config and all outside stay as they "
                    "were (namespaces)") if self.namespaces else (
                "; nothing a command starts outlives it (no namespaces here: modes and times outside may change)")
        if self.namespaces:
            sockets = "" if self.network else ", no Unix socket outside reached (Docker's, the ssh-agent's, tmux's)"
            return ("after a command: nothing it started runs on; outside the workspace nothing changed, modes and "
                    f"times included; git's hooks and config, AGENTS.md and plainagent's own files as they were{sockets}"
                    " (mount and PID namespaces); what acts later that it made anew (an AGENTS.md, a repository) put "
                    "back and asked about; the repository's history kept")
        sockets = "" if self.network else "; no Unix socket can be used at all"
        return ("after a command: what it left running is ended (a subreaper); what it changed that acts later (git's "
                "hooks and config, AGENTS.md) put back and asked about; the repository's history kept; no namespaces "
                "here (this kernel or its settings refuse them to this user), so modes and times outside the "
                f"workspace may change{sockets}")

    def walls(self) -> list[str]:
        """The tether's WALLS (lifetime.py's namespaces) for the next command; none where the kernel makes none."""
        if not self.namespaces:
            return []
        walls = [f"w:{folder}" for folder in self.writable() if folder != Path(SHARED_MEMORY)]
        walls += [f"r:{path}" for path in self.read_only()]
        sockets = [] if self.network else [f"sock:{path}" for path in unix_sockets(self.writable())]
        hidden = [f"hide:{path}" for path in self.bound] if self.shm else []  # the workspace's own secret files
        blanks = [f"blank:{self.shm.parent / 'blank'}", f"blankdir:{self.shm.parent / 'blank.d'}"] if hidden else []
        return walls + ([f"shm:{self.shm}"] if self.shm else []) + sockets + blanks + hidden

    def read_only(self) -> list[Path]:
        """What stays read-only to commands inside the folders they write in: what acts later outside the walls
        (git's hooks and config, in the workspace's repository and the one around it; the instructions the agent
        loads), the pack files that hold the history (git writes a pack once and never changes it), and
        plainagent's own code and interpreter when they are there (`own_code`)."""
        folders = [self.workspace / ".git", *self.git]
        found = [path for folder in folders if folder.is_dir() for path in git_parts(folder)]
        found += [self.workspace / name for name in INSTRUCTION_FILES]
        found += self.own_code
        writable = self.writable()
        # Each where it leads (a mount follows links); never a folder commands write in, nor one above it (a hooks
        # folder swapped for a link to `..` must not make the workspace read-only).
        real = [Path(os.path.realpath(path)) for path in found if os.path.lexists(path)]
        return [path for path in dict.fromkeys(real) if not any(folder.is_relative_to(path) for folder in writable)]

    def present(self) -> list[Path]:
        """What is hidden and exists: a folder not there yet (the state folder, before the first session) would
        only shut the folder it would be made in."""
        return [path for path in self.hidden if os.path.lexists(path)]

    def writable(self) -> list[Path]:
        made = [self.tmpdir, self.shm] if self.tmpdir else []
        return [self.workspace, *self.git, *self.extra, *made, Path(SHARED_MEMORY)]

    def is_hidden(self, path: Path) -> bool:
        devices = path.is_relative_to("/dev") and str(path) not in DEVICES and not path.is_relative_to(SHARED_MEMORY)
        return devices or any(path.is_relative_to(hidden) for hidden in [*self.hidden, *self.bound])

    def is_bound(self, path: Path) -> bool:
        """Whether `path` is one of the workspace's secret files, bound over (or inside one, a folder)."""
        return any(path.is_relative_to(bound) for bound in self.bound)

    def may_write(self, path: Path) -> bool:
        kept = self.read_only() if self.namespaces else []
        return any(path.is_relative_to(folder) for folder in self.writable()) and path.parent not in \
            self.shut_folders() and not any(path.is_relative_to(wall) for wall in [*self.hidden, *self.bound, *kept])

    def home_inside(self) -> bool:
        """Whether the workspace holds the home folder (-C ~): then its secrets are the user's own, hidden by
        Landlock where no namespace binds over them, whatever folder that shuts."""
        return self.search is not None and self.search.places.home.is_relative_to(self.workspace)

    def look_again(self) -> None:
        """Before each command: what the whole search found since the last one (its walk, at the first command;
        the refresh of the folders that changed, which ran when the last command ended). Landlock hides what lies
        outside the workspace; the namespaces bind over the workspace's own (without them, those stay readable:
        Landlock alone would forbid every new file beside them), unless the workspace holds the home folder."""
        if self.search is None:
            return
        self.search.settle()
        inside = self.search.inside()
        hidden = real_paths([*self.shallow, *self.search.outside(), *(inside if self.home_inside() and not
                                                                       self.namespaces else [])])
        self.bound = inside if self.namespaces else []
        if set(hidden) != set(self.hidden):
            self.hidden = hidden
            if self.held.get("fd") is not None:  # built again, below, with what is hidden now
                os.close(self.held["fd"])
                self.held["fd"] = None

    def shut_folders(self) -> list[Path]:
        """The folders where commands write that hold something hidden (the workspace with the .env of the key in
        it; with -C ~, the home folder): Landlock can grant their entries but not the folder itself, or what it
        grants would reach what is hidden, so nothing new can be made or removed directly in them."""
        return sorted({ancestor for hidden in self.present() for ancestor in [hidden, *hidden.parents][1:]
                       if any(ancestor.is_relative_to(folder) for folder in self.writable())})

    # --- the ruleset ---

    def ruleset(self) -> int:
        """The session's ruleset, built at the first command: a file descriptor the tether enters. Built again
        for each command while a folder is shut: what was made in it since (by edit_file, say) needs its rule."""
        self.look_again()
        if self.tmpdir is None:
            remove_left_behind()
            session = Path(tempfile.mkdtemp(prefix=f"plainagent-{os.getpid()}-"))  # commands write in its two folders
            self.tmpdir, self.shm = session / "tmp", session / "shm"
            self.tmpdir.mkdir(), self.shm.mkdir(mode=0o1777)
            self.held["lock"] = hold(session)  # in use while this process lives, seen from every PID namespace
            # What the namespaces bind over the workspace's secret files: empty, and no one may read it (root's
            # command has no capability to pass over a mode)
            os.close(os.open(session / "blank", os.O_CREAT | os.O_WRONLY, 0)), (session / "blank.d").mkdir(mode=0)
            self.shm_before = set(os.listdir(SHARED_MEMORY)) if not self.namespaces and os.path.isdir(SHARED_MEMORY) \
                else None  # without namespaces, commands write in the real one: what they add goes at the end
            weakref.finalize(self, close, self.held, session, self.shm_before)  # when the session ends, or dropped
        if self.held["fd"] is not None and self.shut_folders():
            os.close(self.held.pop("fd"))
        if self.held.get("fd") is None:
            self.held["fd"] = self.build()
        return self.held["fd"]

    def build(self) -> int:
        fd = create_ruleset(self.abi, self.network)
        try:
            rights = handled_fs(self.abi, unix=not self.network)
            grants, hidden = Grants(fd, rights), self.present()
            grants.grant(Path("/"), READ, [*hidden, Path("/dev")])  # reading: all but what is hidden
            for folder in self.writable():
                grants.grant(folder, rights, hidden)  # everything, writing included, but what is hidden
            for device in DEVICES:
                grants.grant(Path(device), DEVICE_RIGHTS, [])
        except BaseException:
            os.close(fd)
            raise
        return fd


def repository_outside(workspace: Path, writable: list[Path] = ()) -> list[Path]:
    """The git folders outside the workspace that commits made in it write: the repository's .git when the
    workspace is a folder inside one (a monorepo's package), or a worktree's own folder and the repository's
    common one (`.git` is then a file: "gitdir: PATH"). A commit is ordinary work; without these it fails.
    A `.git` file in the workspace is the command's to write: it is believed only when the folder it names lies
    outside every folder a command may write in (`writable`, the workspace among them: there its files could be
    forged) and names it back, as git's worktrees do (their `gitdir` file), in the repository's `worktrees`."""
    for folder in [workspace, *workspace.parents]:
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return [] if folder == workspace else [dot_git]
        if dot_git.is_file():
            try:
                line = dot_git.read_text(encoding="utf-8", errors="replace").strip()
                gitdir = (folder / line.removeprefix("gitdir:").strip()).resolve()
                back = (gitdir / (gitdir / "gitdir").read_text(encoding="utf-8").strip()).resolve()
                common = (gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()).resolve()
            except (OSError, ValueError):
                return []
            temp = Path(tempfile.gettempdir()).resolve()  # where the sessions' own TMPDIRs are, plainagent-PID-*
            forgeable = any(gitdir.is_relative_to(Path(folder).resolve()) for folder in [workspace, *writable]) or (
                gitdir.is_relative_to(temp) and gitdir.relative_to(temp).parts[0].startswith("plainagent-"))
            if forgeable or back != dot_git.resolve() or gitdir.parent != common / "worktrees":
                return []  # not a worktree git made: a file that would open some other folder to commands
            return [path for path in (gitdir, common) if not path.is_relative_to(workspace)]
    return []


def handled_fs(abi: int, unix: bool = False) -> int:
    """The file rights this ABI knows: all of them are handled, so what no rule grants is refused. `unix`: also
    connecting to a Unix socket file by its path (ABI 9, Linux 7.1), granted only where commands write: without
    the network, the kernel itself refuses a socket outside, found by namespaces.unix_sockets or not."""
    rights = MAKE_SYM * 2 - 1  # ABI 1: EXECUTE to MAKE_SYM
    rights |= (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0) | (IOCTL_DEV if abi >= 5 else 0)
    return rights | (RESOLVE_UNIX if abi >= 9 and unix else 0)


def create_ruleset(abi: int, network: bool) -> int:
    net = BIND_TCP | CONNECT_TCP if abi >= 4 and not network else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("QQQ", handled_fs(abi, unix=not network), net, scoped)  # landlock_ruleset_attr; zeros past what the ABI knows
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    return syscall(CREATE_RULESET, attr, size, 0)


HOLE = ""  # in Grants' tree of names, the mark of a hidden path itself (no file is named "")


class Grants:
    """Rules added to a ruleset: `grant(path, rights, hidden)` gives `rights` beneath `path`, but not to `hidden`."""

    def __init__(self, fd: int, handled: int):
        self.fd, self.handled = fd, handled

    def grant(self, path: Path, rights: int, hidden: list[Path]) -> None:
        # What is hidden beneath `path` as a tree of names ({"home": {"me": {".ssh": {HOLE: True}}}}): each folder
        # on the way is then found by its name, not by comparing every hidden path (a thousand .git/config under
        # ~/work took 4 s to grant that way)
        holes: dict = {}
        for hole in hidden:
            if hole == path or hole.is_relative_to(path):
                node = holes
                for part in hole.relative_to(path).parts:
                    node = node.setdefault(part, {})
                node[HOLE] = True
        self.grant_beneath(path, rights, holes)

    def grant_beneath(self, path: Path, rights: int, holes: dict) -> None:
        if HOLE in holes:
            return
        try:
            info = os.lstat(path)
        except OSError:  # gone, or out of reach: nothing to grant
            return
        if stat.S_ISLNK(info.st_mode):  # a link leads where its target's own rules say: it needs none
            return
        if not holes or not stat.S_ISDIR(info.st_mode):
            self.add(path, rights if stat.S_ISDIR(info.st_mode) else rights & FILE_RIGHTS)
            return
        self.add(path, READ_DIR)  # a folder holding something hidden: listed, and each of its entries granted
        try:
            names = os.listdir(path)
        except OSError:
            return
        for name in names:
            self.grant_beneath(path / name, rights, holes.get(name, {}))

    def add(self, path: Path, rights: int) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return
        try:
            attr = struct.pack("=Qi", rights & self.handled, fd)  # landlock_path_beneath_attr, packed
            syscall(ADD_RULE, self.fd, RULE_PATH_BENEATH, attr, 0)
        finally:
            os.close(fd)


def wipe_from_environ_block(name: str) -> bool:
    """Overwrite `name`'s value where the kernel keeps the environment this process started with: any process of
    the user may read it in /proc/PID/environ (Landlock guards the memory, not that file), so a key exported
    before plainagent started was there for a command to read. Python's os.environ, a copy, keeps it."""
    if not sys.platform.startswith("linux"):  # /proc/PID/environ is Linux's (and CDLL(None) is not Windows')
        return False
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_void_p
    address = libc.getenv(name.encode())
    try:
        with open("/proc/self/stat", "rb") as file:  # fields 50 and 51: where the block begins and ends
            fields = file.read().rsplit(b")", 1)[1].split()  # after "PID (name)", which may hold spaces
        start, end = int(fields[47]), int(fields[48])
    except (OSError, IndexError, ValueError):  # not Linux, or a kernel before 3.5
        return False
    if not address or not start <= address < end:  # set since start-up: then it is not in the block
        return False
    ctypes.memset(address, ord("*"), min(len(ctypes.string_at(address)), end - address))
    return True
