"""Waking the moment a file appears in a folder, with Linux's inotify (through ctypes: no library
of its own). A task's watch waits this way for its agent's signal and exit files instead of only
looking every 25 ms: a `hive done` is seen as it lands (issue 44). Where inotify is not there (not
Linux, a folder on a file system without it, the per-user watch limit reached) the waiter is
none and the watch sleeps its poll as before; either way the watch still looks at every poll, so
an event missed costs one poll, never a hang."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import select
import threading
from collections.abc import Iterable
from pathlib import Path

# <sys/inotify.h>: a file written and closed, moved in, or made
IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x8, 0x80, 0x100
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
EVENTS = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes, libc.inotify_init1.restype = [ctypes.c_int], ctypes.c_int
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        libc.inotify_add_watch.restype = ctypes.c_int
    except (OSError, AttributeError):  # not Linux, or no inotify in this libc
        return None
    return libc


class Waiter:
    """Sleeps until something is written in one of its folders, or a timeout."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def wait(self, seconds: float) -> bool:
        """True when a file was written meanwhile (the events are read and dropped: the caller
        looks at its files itself)."""
        ready, _, _ = select.select([self.fd], [], [], max(seconds, 0.0))
        if not ready:
            return False
        try:
            while os.read(self.fd, 65536):
                pass
        except BlockingIOError:
            pass
        return True

    def close(self) -> None:
        """Closed by a thread of its own: the kernel frees an inotify instance only after a grace
        period of its own (synchronize_srcu), ~7 ms that every task waited for between its
        agent's `hive done` and its merge (issue 44). Nothing waits for that thread: a process
        ending first closes the descriptor all the same."""
        if self.fd >= 0:
            threading.Thread(target=os.close, args=(self.fd,), name="inotify-close", daemon=True).start()
            self.fd = -1


def waiter(folders: Iterable[Path]) -> Waiter | None:
    """A waiter on `folders` (each made if missing), or None where inotify cannot watch them."""
    libc = _libc()
    if libc is None:
        return None
    fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    if fd < 0:
        return None
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        if libc.inotify_add_watch(fd, os.fsencode(folder), EVENTS) < 0:
            os.close(fd)
            return None
    return Waiter(fd)
