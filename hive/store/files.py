"""Crash-safe file primitives: whole-file atomic writes and flock-based locks; and reading what
an agent could have written (`read_untrusted`, `list_untrusted`)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from hive import crashsafe
from hive.errors import HiveError

# The most Hive reads of one file an agent could write (issue 37: `/dev/zero` was read until
# memory ran out): a signal, a question, an answer, a discovered item; a git ref; a task's notes
# (their last part: the newest count); and the names of one folder it could fill with a million.
SMALL = 64 * 1024
REF = 4 * 1024
NOTES = 1024 * 1024
ENTRIES = 1000
_NOT_FILE = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFDIR: "a folder",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
}


def atomic_write(path: Path, text: str, mode: int | None = None, durable: bool = True) -> None:
    """Write to a temp file in the same directory, fsync, rename: a reader (or a
    run after kill -9) sees the old file or the new one, never half of one.
    Line endings are written exactly as given. `durable=False` for a file made again from
    others whenever it is needed (a report, a brief's copy, a per-attempt file): no fsync,
    which only a power cut would need (~1 ms each, a dozen a task: issue 44)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode, durable)


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None, durable: bool = True) -> None:
    """`mode`: the file's permissions (default: an existing file's, else the usual)."""
    tmp = _synced_temp(path, data, mode, durable)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def create_exclusive(path: Path, text: str) -> bool:
    """Atomically create `path` with `text` unless it exists; True if we created it."""
    tmp = _synced_temp(path, text.encode("utf-8"))
    try:
        os.link(tmp, path)  # fails if path exists: first writer wins
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)


def _synced_temp(path: Path, data: bytes, mode: int | None = None, durable: bool = True) -> str:
    """`data` in a new temp file beside `path`, on disk (fsynced), with the permissions
    `path` has or a new file would get; returns the temp file's name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _mode_for(path) if mode is None else mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def _mode_for(path: Path) -> int:
    """Keep an existing file's permissions; a new file gets the usual 0666 & ~umask
    (mkstemp's 0600 would surprise a user whose plan or dodo.py we rewrite)."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def append_line(path: Path, line: str) -> None:
    """`line` as a line of its own at the end of `path`, even after a last line that has no
    newline (a torn write, or text an agent wrote there) that would swallow it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        end = os.fstat(fd).st_size
        torn = end > 0 and os.pread(fd, 1, end - 1) != b"\n"
        os.write(fd, ("\n" if torn else "").encode() + line.rstrip("\n").encode("utf-8") + b"\n")
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """ProfilePause an exclusive flock on `path` (the kernel frees it if we die)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class FileLock:
    """A non-blocking flock kept for as long as a process runs something
    (a task claim, a worker slot); records the holder's pid for messages."""

    def __init__(self, path: Path, shared: bool = False) -> None:
        self.path = path
        self.shared = shared
        self.fd: int | None = None

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        if not self.shared:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return True

    def acquire(self, poll: float = 0.1, on_wait: Callable[[int | None], None] | None = None) -> None:
        """Block until acquired; `on_wait(holder_pid)` is called once if we have to wait."""
        waited = False
        while not self.try_acquire():
            if not waited and on_wait:
                on_wait(self.holder())
            waited = True
            crashsafe.pause(poll)

    def holder(self) -> int | None:
        """pid recorded by the current holder, if any process holds the lock."""
        if self.fd is not None:
            return os.getpid()
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                text = os.pread(fd, 32, 0).decode(errors="replace").strip()
                return int(text) if text.isdigit() else -1
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class NotAFile(HiveError):
    """A file an agent could write that is not what Hive reads: not a regular file (a FIFO,
    a symbolic link, a device, a folder), or bigger than it may be. `what` says which, to
    finish a sentence that names the file ("its signal file is " + what)."""

    def __init__(self, path: Path, what: str) -> None:
        self.path, self.what = path, what
        super().__init__(f"{path} is {what}")

    def __reduce__(self) -> tuple[type[NotAFile], tuple[Path, str]]:  # type: ignore[override]
        return (type(self), (self.path, self.what))


def not_a_file(path: Path, mode: int) -> NotAFile:
    """What a path that should be a file is instead (its `st_mode`)."""
    return NotAFile(path, f"{_NOT_FILE.get(stat.S_IFMT(mode), 'not a regular file')}, not a file")


def read_untrusted(path: Path, limit: int, within: Path | None = None, tail: bool = False) -> bytes:
    """The bytes of `path`, a file an agent could have written, read without following a
    symbolic link (nor, below `within`, one in any folder on the way), without waiting on a
    FIFO and at most `limit` of them (`tail`: its last `limit` bytes, else a bigger file is
    not read). FileNotFoundError if it is not there; NotAFile if it is not a file to read."""
    fd = _open_untrusted(path, within)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise not_a_file(path, info.st_mode)
        if info.st_size > limit and not tail:
            raise NotAFile(path, f"{info.st_size:,} bytes, more than the {limit:,} it may hold")
        start = max(0, info.st_size - limit) if tail else 0
        data = os.pread(fd, limit + 1, start)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew as it was read
        if not tail:
            raise NotAFile(path, f"more than the {limit:,} bytes it may hold")
        data = data[-limit:]
    return data


def _open_untrusted(path: Path, within: Path | None) -> int:
    """`path` opened for reading: O_NOFOLLOW (and every folder below `within` opened so too),
    O_NONBLOCK so that a FIFO opens at once (and is then refused for what it is)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    if within is None:
        return _open(path, path, flags)
    parts = path.relative_to(within).parts
    folder = _open(within, within, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts[:-1]:
            inner = _open(path, name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, folder)
            os.close(folder)
            folder = inner
        return _open(path, parts[-1], flags, folder)
    finally:
        os.close(folder)


def _open(path: Path, name: Path | str, flags: int, folder: int | None = None) -> int:
    try:
        return os.open(name, flags, dir_fd=folder)
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotAFile(path, "a symbolic link, not a file") from None
        if e.errno == errno.ENOTDIR:
            raise NotAFile(path, "not a file: a folder on its way is not a folder") from None
        raise NotAFile(path, f"not readable ({e.strerror})") from None


def read_untrusted_text(path: Path, limit: int, within: Path | None = None, tail: bool = False) -> str:
    """`read_untrusted` as text (bytes that are not UTF-8 replaced)."""
    return read_untrusted(path, limit, within, tail).decode("utf-8", errors="replace")


def list_untrusted(folder: Path, limit: int = ENTRIES) -> list[str]:
    """The names in `folder`, one an agent could write, not through a symbolic link and at
    most `limit` of them (in the order the folder gives them: an agent that made a million
    files is not listed a million times a second). FileNotFoundError if it is not there;
    NotAFile if it is not a folder."""
    fd = _open(folder, folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    names: list[str] = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                names.append(entry.name)
                if len(names) >= limit:
                    break
    finally:
        os.close(fd)
    return names
