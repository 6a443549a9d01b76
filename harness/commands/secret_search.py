"""The search for the secret files commands may not read (secret_files.py's names), wherever commands could read
them: the whole home folder, the other users' homes, the places deployed apps live, the system's own secrets as
root, and the workspace (its own are bound over in the namespaces: landlock.py's Boundary.bound).

The failure it prevents: the search went three folders down the home folder, and commands read what lay below
(issue 33): `~/work/acme/api/.env`, `~/go/src/github.com/acme/svc/.env`, a token in `~/work/acme/api/.git/config`,
fish's history; as root `/home/alice/.aws/credentials`, `/etc/shadow`, the SSH host keys; `/srv/app/.env`.

What it costs, and why it is done so (bench/secret_search.py, a home of 200,000 entries; docs/benchmarks.md):
  - at start, only the shallow search (`hidden_paths`, HOME_DEPTH folders down): 34 ms, so that ~/.ssh and
    ~/.aws are hidden from the first command whatever happens next;
  - the whole walk runs in a process of its own started then (`start`, niced): 0.8 s, none of it on start-up's
    path (a thread would have held the interpreter's lock that start-up needs; after a fork, every page start-up
    writes again is copied). The first command collects its answer (`settle`), waiting SEARCH_WAIT seconds at
    most; it comes after the model's first reply;
  - when a command ends, every folder found is looked at again (`refresh_later`), in a thread while the model
    answers: a file made, removed or renamed in a folder changes the folder's time, and only such a folder is
    searched again. So a secret a command made is hidden from the next command, one another program made
    meanwhile from the command after the next look. One stat a folder: 80 ms for 22,000 folders, bounded by
    REFRESH_SECONDS (the rest the next time); only a command started at once after another waits for it.
No cache on disk: the walk already runs while the model answers, and a list of where the secrets are would be one
more file to keep true, and one that says where they are.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import select
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from harness.common.programs import tether_python
from harness.files.secret_files import is_secret, may_be_secret

HOME_DEPTH = 3  # how deep the shallow search at start looks under the home folder (~/.config/gh/hosts.yml is 3)
HOME_MAX_ENTRIES = 50_000  # ... and how many entries it looks at, at most
SEARCH_MAX_ENTRIES = 2_000_000  # entries the whole walk looks at, at most (about 9 s in its process)
SEARCH_WAIT = 3.0  # seconds the first command waits for the whole walk, at most: then it goes on with the shallow one
REFRESH_SECONDS = 0.2  # the look after each command, at most; what it did not reach is looked at the next time
TOP = Path("/")  # where the other homes, the apps' folders and /etc are looked for (tests give their own)
APPS = ("srv", "opt", "var/www")  # where deployed apps keep their .env
SYSTEM = ("etc/shadow", "etc/shadow-", "etc/gshadow", "etc/gshadow-", "etc/ssh/ssh_host_*_key",
          "etc/security/opasswd")  # root's own secrets (a user reads none of them anyway)
ROOT = str(Path(__file__).resolve().parents[2])  # plainagent's folder, where the walk's process imports this module
# After the standard library on the path: a json.py a command left beside agent.py is not what it imports.
CHILD = ("import sys; sys.path.append(sys.argv[1]); from harness.commands import secret_search; "
         "secret_search.walk_and_answer(sys.argv[2])")
SKIPPED = {"node_modules", ".git", ".npm", ".pyenv", ".rustup", ".nvm", "site-packages", "__pycache__"}  # big, no keys


@dataclass
class Places:
    """Where the search looks: `top` is "/" but in tests."""
    home: Path
    workspace: Path
    others: list[Path]  # the other users' homes
    apps: list[Path]  # /srv, /opt, /var/www, where there
    system: list[str]  # patterns of the system's secret files, as root
    top: Path


def places(home: Path, workspace: Path, top: Path | None = None, as_root: bool | None = None) -> Places:
    """The places commands could read secrets in: every home (as a user, only what their owners left readable is
    read, and that is what would leak), the apps' folders, and as root the system's own secrets."""
    as_root, top = os.getuid() == 0 if as_root is None else as_root, TOP if top is None else top
    home, workspace = Path(os.path.realpath(home)), Path(os.path.realpath(workspace))
    try:
        homes = sorted(top / "home" / name for name in os.listdir(top / "home"))
    except OSError:
        homes = []
    others = [path for path in [*homes, top / "root"] if path.is_dir() and not path.is_symlink()
              and Path(os.path.realpath(path)) != home and not home.is_relative_to(os.path.realpath(path))]
    apps = [top / name for name in APPS if (top / name).is_dir()]
    return Places(home, workspace, others, apps, [str(top / name) for name in SYSTEM] if as_root else [], top)


class SecretSearch:
    """The secret files found in `places`, kept true between commands: `outside()` for Landlock to hide,
    `inside()` (the workspace's) for the namespaces to bind over. `passed`: paths the user lets commands read
    (PLAINAGENT_SANDBOX_READ), never hidden."""

    def __init__(self, where: Places, passed: list[Path] = ()):
        self.places, self.passed = where, [Path(path) for path in passed]
        self.folders: dict[str, int] = {}  # folder -> its time (st_mtime_ns) when searched; -1: not searched yet
        self.found: dict[str, str] = {}  # secret path -> the folder it was found in
        self.stopped: list[Path] = []  # the roots the walk did not finish (SEARCH_MAX_ENTRIES)
        self.child: subprocess.Popen | None = None  # the whole walk's own process, until its answer is in
        self.answer, self.walked = b"", False  # what the child sent so far; whether a whole walk is in
        self.cursor, self.behind, self.last_refresh = 0, False, 0.0  # the refresh: where it goes on, how long it took
        self.refresher: threading.Thread | None = None  # the refresh running while the model answers
        self.waited = False  # whether a command waited for the whole walk already (the first one does)

    # --- the whole walk: here, or in a child ---

    def walk(self) -> None:
        """The whole walk, in this process: the workspace, the other homes and the apps' folders, then the home
        folder (the biggest, last: a home of millions of entries starved the small roots after it), at any depth,
        SEARCH_MAX_ENTRIES entries at most for each. The folder of the homes is noted too, not searched: a home
        made during the session is searched at the next look (refresh)."""
        where = self.places
        try:
            self.folders[str(where.top / "home")] = os.stat(where.top / "home").st_mtime_ns
        except OSError:
            pass
        for root in dict.fromkeys(os.path.realpath(root) for root in [where.workspace, *where.others, *where.apps,
                                                                        where.home]):
            if not self.search(collections.deque([root]), [SEARCH_MAX_ENTRIES]):
                self.stopped.append(Path(root))
        self.walked = True

    def start(self) -> None:
        """The whole walk in a new process started now (`python -I -S`, this module, at a lower priority), its
        answer collected by `collect`. Not a fork: after one, every page of this process it writes again is copied
        (Python writes reference counts everywhere), which cost a one-shot task 25 ms."""
        python = tether_python()
        if python is None:  # no interpreter to start: the first command walks, here
            return self.walk()
        where = json.dumps({name: str(value) if isinstance(value, Path) else list(map(str, value))
                            for name, value in vars(self.places).items()})
        child = subprocess.Popen([sys.executable or python, "-I", "-S", "-c", CHILD, ROOT, where], executable=python,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.child = child
        self.ended = weakref.finalize(self, end_child, child)  # a session that runs no command leaves none behind

    def collect(self, wait: float = SEARCH_WAIT) -> bool:
        """Take the child's answer if it comes within `wait` seconds; whether the whole walk is in."""
        if self.child is None:
            return self.walked
        read = self.child.stdout.fileno()
        deadline = time.monotonic() + wait
        while select.select([read], [], [], max(0.0, deadline - time.monotonic()))[0]:  # past it: what is there
            if not (chunk := os.read(read, 1 << 20)):
                self.end_child()
                try:
                    answer = json.loads(self.answer)
                except ValueError:  # the child failed: the shallow search and the refreshes go on alone
                    return False
                self.folders = answer["folders"] | self.folders  # what a refresh meanwhile searched, kept
                self.found = answer["found"] | self.found
                self.stopped, self.walked = [Path(path) for path in answer["stopped"]], True
                return True
            self.answer += chunk
        return False

    def end_child(self) -> None:
        if self.child is not None:
            self.child = None
            self.ended()

    # --- one folder, and the refresh ---

    def search(self, queue: collections.deque, budget: list[int], deadline: float | None = None) -> bool:
        """Search the folders in `queue` (each where it really is) and every folder below them; False when the
        budget of entries or time ran out (folders not reached are kept with the time -1: the next refresh searches
        them)."""
        workspace = str(self.places.workspace)
        while queue:
            folder = queue.popleft()
            if folder in self.folders and self.folders[folder] != -1:  # a link back to a folder already searched
                continue
            if deadline is not None and time.monotonic() > deadline:  # the rest, the next time
                for rest in [folder, *queue]:
                    self.folders.setdefault(rest, -1)
                return False
            try:
                mtime = os.stat(folder).st_mtime_ns
                entries = sorted(os.scandir(folder), key=lambda entry: not entry.name.startswith("."))  # keys first
            except OSError:
                self.folders.pop(folder, None)
                continue
            budget[0] -= len(entries)
            self.folders[folder] = mtime
            tail = "/".join(folder.rsplit("/", 4)[-4:])  # what is_secret needs of the folders above (.aws/sso/cache)
            for entry in entries:
                if entry.path != workspace and (sub := self.look_at(entry, folder, tail)) is not None:
                    queue.append(sub)  # (the workspace is a root of its own)
            if budget[0] < 0:
                return False
        return True

    def look_at(self, entry: os.DirEntry, folder: str, tail: str) -> str | None:
        """Note `entry` if it is secret; the folder to search next if it is one."""
        is_dir = entry.is_dir(follow_symlinks=False)
        if entry.name == ".git":  # another repository's config (remote URLs with tokens); not the workspace's own
            workspace = self.places.workspace
            if is_dir and not workspace.is_relative_to(folder) and not Path(folder).is_relative_to(workspace):
                self.found[f"{entry.path}/config"] = folder
            return None
        if may_be_secret(entry.name) and is_secret(f"{tail}/{entry.name}/any" if is_dir else f"{tail}/{entry.name}"):
            if not entry.is_symlink():
                self.found[entry.path] = folder
            elif not entry.is_dir() or is_secret(f"{os.path.realpath(entry.path)}/any"):
                # What the kernel judges is where it leads: that is hidden (a `.env` that leads to a folder that is
                # no secret, `/` say, hides nothing, or a command could have hidden all from the next one)
                self.found[os.path.realpath(entry.path)] = folder
            return None
        if entry.name in SKIPPED or not entry.is_dir():
            return None
        # A linked folder is searched where it leads: that is what the kernel judges
        return os.path.realpath(entry.path) if entry.is_symlink() else entry.path

    def refresh_later(self) -> None:
        """A command ended: the refresh, in a thread, while the model answers; `settle` waits for it."""
        if self.folders and self.refresher is None:
            self.refresher = threading.Thread(target=self.refresh, daemon=True)
            self.refresher.start()

    def settle(self) -> None:
        """Before a command: the refresh that began when the last command ended, done; and the whole walk's
        answer, waited for SEARCH_WAIT seconds at the first command. Without it then, the workspace is searched
        here (it is where commands read most), REFRESH_SECONDS at most: the rest comes with the walk."""
        if self.refresher is not None:
            self.refresher.join()
            self.refresher = None
        walked = self.walked
        if not self.collect(0 if self.waited else SEARCH_WAIT) and not self.waited:
            workspace = str(self.places.workspace)
            self.search(collections.deque([workspace]), [SEARCH_MAX_ENTRIES], time.monotonic() + REFRESH_SECONDS)
            say(f"the search for secret files is not done yet (after {SEARCH_WAIT:g} s): until it is, a secret file "
                f"more than {HOME_DEPTH} folders down a home folder, or in /srv, /opt or /var/www, may be readable by "
                "commands; /sandbox shows how far it got")
        if self.walked and not walked and self.stopped:
            say(f"the search for secret files stopped after {SEARCH_MAX_ENTRIES:,} entries in "
                f"{', '.join(map(str, self.stopped))}: a secret file deeper in there may be readable by commands")
        self.waited = True

    def refresh(self, seconds: float = REFRESH_SECONDS) -> None:
        """Search again each folder whose time changed since it was searched (a file made, removed or renamed in
        it), and those not searched yet; for `seconds` at most, going on where the last refresh stopped."""
        started = time.monotonic()
        deadline, names = started + seconds, list(self.folders)
        start = self.cursor % len(names) if names else 0
        self.behind = False
        for n, folder in enumerate(names[start:] + names[:start]):
            if n % 64 == 0 and time.monotonic() > deadline:
                self.cursor, self.behind = start + n, True
                break
            try:
                changed = os.stat(folder).st_mtime_ns != self.folders.get(folder)
            except OSError:
                changed = True
            if changed:
                self.found = {path: where for path, where in self.found.items() if where != folder}
                self.folders[folder] = -1
                self.search(collections.deque([folder]), [SEARCH_MAX_ENTRIES], deadline)
        self.last_refresh = time.monotonic() - started

    # --- what it found, and what it says ---

    def system_files(self) -> list[Path]:
        return [Path(path) for pattern in self.places.system for path in sorted(glob.glob(pattern))]

    def all_found(self) -> list[Path]:
        found = [Path(path) for path in [*self.found, *map(str, self.system_files())]]
        return [path for path in dict.fromkeys(found) if os.path.lexists(path)
                and not any(path.is_relative_to(passed) for passed in self.passed)]

    def outside(self) -> list[Path]:
        """What was found outside the workspace: Landlock's to hide."""
        return [path for path in self.all_found() if not path.is_relative_to(self.places.workspace)]

    def inside(self) -> list[Path]:
        """The workspace's own secret files."""
        return [path for path in self.all_found() if path.is_relative_to(self.places.workspace)]

    def described(self) -> list[str]:
        """What was searched and what was not, for /sandbox."""
        where = self.places
        parts = [f"{where.home} (as HOME)"] + ([f"the other homes ({', '.join(map(str, where.others))})"]
                                               if where.others else []) + [str(path) for path in where.apps]
        if where.system:
            parts.append(f"and {where.top / 'etc'}'s shadow files and SSH host keys")
        done = f"{len(self.folders):,} folders" + (
            f"; not all of {', '.join(map(str, self.stopped))}: the search stopped at {SEARCH_MAX_ENTRIES:,} entries"
            if self.stopped else ", all of them" if self.walked else " so far (the whole walk still runs)")
        return [f"searched for secret files: {', '.join(parts)}: {done}",
                f"and again after each command, where a folder changed ({self.last_refresh * 1000:.0f} ms the last "
                f"time{'; the rest the next time' if self.behind else ''}); not searched: the rest of the file system "
                f"(other disks, /mnt, /media), nor folders named {', '.join(sorted(SKIPPED))}"]


def say(line: str) -> None:
    """Tell the user, on stderr (as lifetime.py says a command that could not start): the walls are weaker than
    the start line said, for a while or for good."""
    print(f"plainagent: {line}.", file=sys.stderr, flush=True)


def end_child(child: subprocess.Popen) -> None:
    """The walk's process ended (done already, or no longer wanted) and reaped, its pipe closed."""
    child.kill()
    child.wait()
    child.stdout.close()


def walk_and_answer(where: str) -> None:
    """In the walk's own process (CHILD): the whole walk of the places given as JSON, its answer on stdout."""
    os.nice(10)  # the agent's own work first
    given = json.loads(where)
    search = SecretSearch(Places(**{name: [Path(path) for path in value] if name in ("others", "apps") else value
                                    if name == "system" else Path(value) for name, value in given.items()}))
    search.walk()
    answer = {"folders": search.folders, "found": search.found, "stopped": list(map(str, search.stopped))}
    sys.stdout.buffer.write(json.dumps(answer).encode())


def hidden_paths(home: Path, workspace: Path, own: list[Path]) -> tuple[list[Path], bool]:
    """The shallow search, at start: plainagent's own files (`own`: its .env, state and settings folders) and the
    secrets under the home folder, HOME_DEPTH folders down at most, the shallowest first and dot-folders before
    the others at each depth (where tools keep credentials); a folder whose every file is secret (~/.ssh) is one
    entry. The workspace is not searched (SecretSearch searches it). And whether the search went through every
    folder (False: it stopped at HOME_MAX_ENTRIES). Every path is where it really is, links followed: Landlock
    judges the file a link leads to (a relative --log, as the agent's folder makes it)."""
    found = [Path(path) for path in own]
    folders, n_entries, seen = collections.deque([(Path(home).resolve(), 0)]), 0, set()
    while folders:
        folder, depth = folders.popleft()
        if folder.resolve() in seen:  # a link back to a folder already searched
            continue
        seen.add(folder.resolve())
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: not entry.name.startswith("."))
        except OSError:
            continue
        n_entries += len(entries)
        if n_entries > HOME_MAX_ENTRIES:
            return real_paths(found), False
        for entry in entries:
            path = Path(entry.path)
            if path == workspace:
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if entry.name == ".git" and is_dir and not workspace.is_relative_to(folder):
                found.append(path / "config")  # another repository's: remote URLs with tokens (not searched on)
            if may_be_secret(entry.name) and is_secret(f"{path}/any" if is_dir else str(path)):
                found.append(path)
                if entry.is_symlink():  # its target holds the secret: hidden too
                    found.append(path.resolve())
            elif entry.is_dir() and depth + 1 < HOME_DEPTH and entry.name not in SKIPPED:
                folders.append((path.resolve() if entry.is_symlink() else path, depth + 1))
    return real_paths(found), True


def real_paths(paths: list[Path]) -> list[Path]:
    """Each path where it really is (links followed; a relative one from here), once."""
    return list(dict.fromkeys(Path(os.path.realpath(path)) for path in paths))
