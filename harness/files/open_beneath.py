"""Using what `Workspace.confine` checked, and nothing else: files and folders reached from the workspace root one
directory descriptor at a time, no link followed, and writes that never overwrite what they did not read.

The failure it prevents is the gap between a check and a use. `confine` checks a path's real location (inside
the root, not a secret, not in .git/); a tool that then opened the path by name let the kernel resolve it again,
and whatever could rename things in between (a command left running, another program, a project's script)
could swap a folder on the way for a link: with a process swapping `sub/` for a link outside, 4 reads in 250
returned the outside file and 1 creation in 250 landed there. Here the checked real path is walked from the
root's descriptor with O_NOFOLLOW at every step, so a step that has become a link is refused (`Changed`), never
followed: what is opened is what was checked, or nothing.

Windows has no directory descriptors (nor O_NOFOLLOW, nor `dir_fd`): there an open folder is its path
(`DESCRIPTORS` is False) and each step is looked at (lstat) as it is reached, so a link or a junction on the way
is refused all the same; but a swap in the instant between that look and the open is not caught, as it is here.
(Making a link on Windows takes an administrator or developer mode, which narrows who could try.)

A write keeps what the user has:
  - it compares the file with the bytes the edit was made from, after the approval, and writes nothing when
    they differ (`Changed`): the user edited it while the question was on screen;
  - a new file is created with O_EXCL, never over one that appeared meanwhile;
  - it goes through a temporary file and a rename (the old file or the new, never half), except when the file
    has other names (hard links, which a rename would cut off) or an owner the new file could not be given:
    then it writes in place, as editors do for such files.
"""

from __future__ import annotations

import errno
import os
import stat
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Folders opened as descriptors and used through `dir_fd` (Linux, macOS, the BSDs); False on Windows.
DESCRIPTORS = hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY") and os.open in os.supports_dir_fd
FOLDER = os.O_RDONLY | sum(getattr(os, flag, 0) for flag in ("O_DIRECTORY", "O_CLOEXEC", "O_NOFOLLOW"))
# O_NONBLOCK: opening a FIFO must not wait for a writer (regular files ignore it). O_BINARY: Windows would
# otherwise turn CRLF into LF as it reads, and back as it writes.
NO_LINK = sum(getattr(os, flag, 0) for flag in ("O_NOFOLLOW", "O_CLOEXEC", "O_NONBLOCK", "O_BINARY"))
JUNCTION = 0xA0000003  # IO_REPARSE_TAG_MOUNT_POINT: a Windows junction, which leads elsewhere as a link does
# What opening a link with O_NOFOLLOW fails with: ELOOP (Linux, macOS), EMLINK (FreeBSD); ENOTDIR on Linux when
# O_DIRECTORY is asked too. Each could mean something else, so a link is confirmed before it is reported.
LINK_ERRORS = (errno.ELOOP, errno.EMLINK, errno.ENOTDIR)
TEMPORARY_TRIES = 100  # names tried for the temporary file of an atomic write (each is random)


class Changed(Exception):
    """What was checked or read is not what is there now. `how`: "link" (a link now stands on the way),
    "changed" (other bytes), "read-only", "created" (a file appeared where a new one was to go), "removed",
    "not a file" (a folder or a pipe now stands there)."""

    def __init__(self, how: str):
        super().__init__(how)
        self.how = how


# --- the root, opened once; reaching a folder below it, and what is in it ---

Folder = int | str  # an open folder: its descriptor, or (without descriptors: Windows) its path


class Root:
    """The workspace's root folder, opened once by its real path and never by name again: everything beneath is
    reached from this descriptor. Opened by name at each use, the root itself could be swapped for a link (by
    whoever may write in its parent: a `renameat2` exchange takes 100 µs), and 68 reads in 300 went outside.
    Where a folder cannot be held open (Windows), it is its path, as every folder is there."""

    def __init__(self, path: Path):
        self.path = path  # the real path the workspace checks against (resolved: no link on the way)
        self.fd = os.open(path, FOLDER) if DESCRIPTORS else None
        if self.fd is not None:
            weakref.finalize(self, os.close, self.fd)  # closed with the workspace: tests make thousands

    def open(self) -> Folder:
        """A descriptor of the root of one's own to close (or its path, without descriptors)."""
        return os.dup(self.fd) if self.fd is not None and DESCRIPTORS else str(self.path)


@contextmanager
def folder(root: Root, real: Path, made: list[Path] | None = None) -> Iterator[Folder]:
    """The folder `real`, open, reached from `root` one step at a time, following no link.
    FileNotFoundError or NotADirectoryError when a step is missing or a file; Changed("link") when it is a link.
    With `made`, missing folders are created, and recorded there deepest first (for /undo)."""
    fd = open_folder(root, real, made)
    try:
        yield fd
    finally:
        close(fd)


def open_folder(root: Root, real: Path, made: list[Path] | None = None) -> Folder:
    names = steps(root, real)
    fd = root.open()
    try:
        for depth, name in enumerate(names, 1):
            # `fd` names the open folder at every moment, so an exception (search's time limit is a signal
            # raised anywhere) closes it once: the parent is closed only after the child took its place.
            parent, fd = fd, open_child_folder(fd, name, made, root.path.joinpath(*names[:depth]))
            close(parent)
    except BaseException:
        close(fd)
        raise
    return fd


def open_child_folder(fd: Folder, name: str, made: list[Path] | None, path: Path) -> Folder:
    try:
        return open_at(fd, name, FOLDER) if isinstance(fd, int) else child_by_path(fd, name)
    except FileNotFoundError:
        if made is None:
            raise
        try:
            folder_path, dir_fd = at(fd, name)
            os.mkdir(folder_path, 0o777, dir_fd=dir_fd)
            made.insert(0, path)
        except FileExistsError:  # someone made it meanwhile: use it if it is a folder, and it is not ours to remove
            pass
        return open_child_folder(fd, name, None, path)
    except OSError as error:
        if error.errno in LINK_ERRORS and is_link(fd, name):
            raise Changed("link") from None
        raise


def child_by_path(fd: str, name: str) -> str:
    """Without descriptors: the folder `name` in `fd`, looked at as O_NOFOLLOW | O_DIRECTORY would."""
    path = os.path.join(fd, name)
    info = os.stat(path, follow_symlinks=False)  # FileNotFoundError when it is missing
    if leads_elsewhere(info):
        raise Changed("link")
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    return path


def steps(root: Root, real: Path) -> tuple[str, ...]:
    """The names from `root` down to `real`; ValueError if `real` is not under `root` (a caller's bug)."""
    return real.relative_to(root.path).parts


# What takes a folder: `dir_fd` with a descriptor, the joined path without one (all of these take dir_fd=None).


def at(fd: Folder, name: str) -> tuple[str, int | None]:
    return (name, fd) if isinstance(fd, int) else (os.path.join(fd, name), None)


def open_at(fd: Folder, name: str, flags: int, mode: int = 0o777) -> int:
    path, dir_fd = at(fd, name)
    return os.open(path, flags, mode, dir_fd=dir_fd)


def status(fd: Folder, name: str) -> os.stat_result:
    """What is at `name` in `fd` itself: a link is not followed."""
    path, dir_fd = at(fd, name)
    return os.stat(path, dir_fd=dir_fd, follow_symlinks=False)


def unlink_at(fd: Folder, name: str) -> None:
    path, dir_fd = at(fd, name)
    os.unlink(path, dir_fd=dir_fd)


def close(fd: Folder) -> None:
    if isinstance(fd, int):
        os.close(fd)


def is_link(fd: Folder, name: str) -> bool:
    try:
        return leads_elsewhere(status(fd, name))
    except OSError:
        return False


def leads_elsewhere(info: os.stat_result) -> bool:
    """A symbolic link, or a Windows junction (which is a link to a folder in all but name)."""
    return stat.S_ISLNK(info.st_mode) or getattr(info, "st_reparse_tag", 0) == JUNCTION


def lstat(root: Root, real: Path) -> os.stat_result | None:
    """What is at `real` itself (a link is not followed), or None when nothing is (a step missing, or a file)."""
    if real == root.path:
        return os.fstat(root.fd) if root.fd is not None else os.stat(root.path)
    try:
        with folder(root, real.parent) as fd:
            return status(fd, real.name)
    except (FileNotFoundError, NotADirectoryError):
        return None


def listing(root: Root, real: Path) -> list[tuple[str, bool, bool]]:
    """(name, is a folder, is a link) for each entry of the folder `real`, sorted by name. A link is a link
    here, whatever it leads to: the caller judges it (`Workspace.confine`); so is a junction (Windows)."""
    with folder(root, real) as fd, os.scandir(fd) as scan:
        # Read while the descriptor is open: without a type from the directory, DirEntry asks fstatat on it.
        entries = [(item.name, item.is_dir(follow_symlinks=False), item.is_symlink() or is_junction(item))
                   for item in scan]
    return sorted((name, is_dir and not link, link) for name, is_dir, link in entries)


def is_junction(item: os.DirEntry) -> bool:
    return hasattr(item, "is_junction") and item.is_junction()  # Python 3.12 and later; only ever true on Windows


# --- reading ---


@contextmanager
def regular_file(fd: Folder, name: str, flags: int = os.O_RDONLY) -> Iterator[tuple[int, os.stat_result]]:
    """The regular file `name` in the folder `fd`, open, and its status; Changed when it is gone, a link, a
    folder or a pipe."""
    try:
        if not DESCRIPTORS and is_link(fd, name):  # no O_NOFOLLOW to refuse it: look first
            raise Changed("link")
        file = open_at(fd, name, flags | NO_LINK)
    except FileNotFoundError:
        raise Changed("removed") from None
    except OSError as error:
        if error.errno in LINK_ERRORS and is_link(fd, name):
            raise Changed("link") from None
        if error.errno in (errno.EISDIR, errno.ENXIO):  # a folder opened for writing; a FIFO nobody reads
            raise Changed("not a file") from None
        raise
    try:
        info = os.fstat(file)
        if not stat.S_ISREG(info.st_mode):
            raise Changed("not a file")
        yield file, info
    finally:
        os.close(file)


def read(root: Root, real: Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file at `real` (the first `limit`, when given)."""
    with folder(root, real.parent) as fd, regular_file(fd, real.name) as (file, _):
        return read_all(file, limit)


def read_all(file: int, limit: int | None = None) -> bytes:
    chunks, size = [], 0
    while limit is None or size < limit:
        chunk = os.read(file, 1 << 20 if limit is None else min(1 << 20, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


# --- writing ---


def create(root: Root, real: Path, data: bytes) -> list[Path]:
    """Create the file `real` holding `data`, and the folders missing on its way (returned deepest first).
    Never over anything: Changed("created") when a file (or a link) is already there."""
    made: list[Path] = []
    try:
        with folder(root, real.parent, made) as fd:
            try:  # O_EXCL: fails on any name that exists, a link included (it is not followed)
                file = open_at(fd, real.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_LINK, 0o666)
            except FileExistsError:
                raise Changed("created") from None
            try:
                write_all(file, data)
                os.fsync(file)
            except BaseException:
                unlink_at(fd, real.name)  # ours, half written: it must not stay
                raise
            finally:
                os.close(file)
    except BaseException:
        remove_folders(root, made)
        raise
    return made


def replace(root: Root, real: Path, data: bytes, expected: bytes) -> None:
    """Write `data` over the file `real`, which must still hold `expected`, with a mode that lets it be written
    (Changed otherwise). Atomically when a rename keeps what the file is; in place when it has other names
    (hard links) or an owner the new file could not be given."""
    with existing_folder(root, real) as fd:
        with regular_file(fd, real.name) as (file, info):
            if read_all(file) != expected:
                raise Changed("changed")
        if not stat.S_IMODE(info.st_mode) & 0o222:  # made read-only meanwhile: the owner said no
            raise Changed("read-only")
        if info.st_nlink > 1 or not write_atomically(fd, real.name, data, info):
            write_in_place(fd, real.name, data, info, expected)


@contextmanager
def existing_folder(root: Root, real: Path) -> Iterator[Folder]:
    """The folder holding `real`, which was there when the file was read: Changed("removed") if it is gone."""
    try:
        fd = open_folder(root, real.parent)
    except (FileNotFoundError, NotADirectoryError):
        raise Changed("removed") from None
    try:
        yield fd
    finally:
        close(fd)


def write_atomically(fd: Folder, name: str, data: bytes, info: os.stat_result) -> bool:
    """Write through a temporary file renamed over `name`, with its mode and owner; False, having written
    nothing, when that cannot keep what the file is (no right to make a file here, or to give it the owner)."""
    temporary = None
    for _ in range(TEMPORARY_TRIES):
        candidate = f".{name}.{os.urandom(4).hex()}.tmp"
        try:
            file = open_at(fd, candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_LINK, 0o600)
            temporary = candidate
            break
        except FileExistsError:  # a leftover, or a name someone put there: try another
            continue
        except PermissionError:  # a folder we may not write in, holding a file we may: write that in place
            return False
    if temporary is None:
        raise FileExistsError(errno.EEXIST, "no free name for a temporary file")
    try:
        try:
            write_all(file, data)
            os.fsync(file)
            if hasattr(os, "fchmod"):  # Windows before Python 3.13 has none; the new file is writable as the old was
                os.fchmod(file, stat.S_IMODE(info.st_mode))
            own = os.fstat(file)
            if (own.st_uid, own.st_gid) != (info.st_uid, info.st_gid):  # never on Windows: both are 0 there
                os.fchown(file, info.st_uid, info.st_gid)
        finally:
            os.close(file)
        unchanged_since(fd, name, info)  # the last look before the rename: the window is this line wide
        (source, dir_fd), target = at(fd, temporary), at(fd, name)[0]
        os.replace(source, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except PermissionError:  # the owner could not be given (or, on Windows, the file is open): write it in place
        unlink_at(fd, temporary)
        return False
    except BaseException:
        unlink_at(fd, temporary)
        raise
    return True


def write_in_place(fd: Folder, name: str, data: bytes, info: os.stat_result, before: bytes) -> None:
    """Overwrite the file's own bytes: every name it has sees the change, its owner stays. Not atomic, the price
    editors pay for such files too: a write that fails halfway (a full disk) puts `before` back, which fits in
    the room the file had."""
    with regular_file(fd, name, os.O_WRONLY) as (file, now):
        if not same_file(now, info):
            raise Changed("changed")
        try:
            write_at_start(file, data)
            os.fsync(file)
        except BaseException:
            try:
                write_at_start(file, before)
            except OSError:  # nothing more can be done; the error that stopped the write is the one to tell
                pass
            raise


def write_at_start(file: int, data: bytes) -> None:
    os.lseek(file, 0, os.SEEK_SET)
    write_all(file, data)
    os.ftruncate(file, len(data))


def unchanged_since(fd: Folder, name: str, info: os.stat_result) -> None:
    try:
        now = status(fd, name)
    except FileNotFoundError:
        raise Changed("removed") from None
    if not same_file(now, info):
        raise Changed("link" if stat.S_ISLNK(now.st_mode) else "changed")


def same_file(now: os.stat_result, then: os.stat_result) -> bool:
    """The same file, not written since: any write changes the size, the modification or the change time."""
    return (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns, now.st_ctime_ns, now.st_mode) == (
        then.st_dev, then.st_ino, then.st_size, then.st_mtime_ns, then.st_ctime_ns, then.st_mode)


def remove(root: Root, real: Path, expected: bytes) -> None:
    """Remove the file `real`, which must still hold `expected` (Changed otherwise): /undo of a creation."""
    with existing_folder(root, real) as fd:
        with regular_file(fd, real.name) as (file, info):
            if read_all(file) != expected:
                raise Changed("changed")
        unchanged_since(fd, real.name, info)
        unlink_at(fd, real.name)


def remove_folders(root: Root, folders: list[Path]) -> None:
    """Remove these folders, deepest first, while they are empty: never a folder holding anything, never one
    reached through a link."""
    for path in folders:
        try:
            with folder(root, path.parent) as fd:
                name, dir_fd = at(fd, path.name)
                os.rmdir(name, dir_fd=dir_fd)  # rmdir does not follow a link at the last step either
        except (OSError, Changed):  # not empty (the user put something there), or gone, or moved
            return


def write_all(file: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(file, view):]
