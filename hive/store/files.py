"""Crash-safe file primitives: whole-file atomic writes and flock-based locks."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from hive import crashsafe


def atomic_write(path: Path, text: str, mode: int | None = None) -> None:
    """Write to a temp file in the same directory, fsync, rename: a reader (or a
    run after kill -9) sees the old file or the new one, never half of one.
    Line endings are written exactly as given."""
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """`mode`: the file's permissions (default: an existing file's, else the usual)."""
    tmp = _synced_temp(path, data, mode)
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


def _synced_temp(path: Path, data: bytes, mode: int | None = None) -> str:
    """`data` in a new temp file beside `path`, on disk (fsynced), with the permissions
    `path` has or a new file would get; returns the temp file's name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _mode_for(path) if mode is None else mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
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
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line.rstrip("\n") + "\n")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` (the kernel frees it if we die)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class HeldLock:
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
