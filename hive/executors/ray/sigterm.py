"""Connecting to Ray without giving up Hive's SIGTERM handling. ray.init changes it twice: in
the main thread it puts in Ray's own Python handler, which exits at once with status 15
wherever the process is (a merge half done); and in any thread Ray's core worker puts in a C++
handler (Abseil's failure-signal handler, which prints "*** SIGTERM received" and sometimes
aborts the process). Found by `python -m tests.soak --ray` (seeds 1, 1045, 6012, 6018, 6028) and
under pytest-xdist."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

# larger than any C library's `struct sigaction` (glibc's is 152 bytes): it is only copied back
_SIGACTION_BYTES = 1024


def connect(init: Callable[..., object], **options: Any) -> None:
    """`init(**options)` (ray.init), never in the main thread: off it Ray leaves the Python
    handler alone (and warns that it does, which is Hive's choice, so the warning is not shown).
    Blocking SIGTERM while Ray's handler is in place would not be enough: another thread of the
    process (doit's, a test runner's) takes the signal and the main thread then runs whichever
    handler is in place. Meanwhile the main thread blocks SIGTERM, so one that comes during the
    connection waits for it to finish and is then Hive's to handle. In either thread the C
    library's handler is put back as it was before, once `init` returns (a SIGTERM between the
    two, off the main thread, meets Abseil's)."""
    logging.getLogger("ray._private.worker").addFilter(_QUIET)
    saved = _c_handler()
    if threading.current_thread() is not threading.main_thread():
        try:
            init(**options)
        finally:
            _put_back(saved)
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hive-ray-connect") as connecting:
            connecting.submit(init, **options).result()
    finally:
        _put_back(saved)  # before SIGTERM is unblocked: one that waited meets Hive's handler
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.sigaction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    libc.sigaction.restype = ctypes.c_int
    return libc


def _c_handler() -> ctypes.Array[ctypes.c_char]:
    """SIGTERM's `struct sigaction` in the C library, as opaque bytes (Python's own handler when
    Hive has set one: `signal.signal` puts in one C function for every Python handler)."""
    saved = ctypes.create_string_buffer(_SIGACTION_BYTES)
    _check(_libc().sigaction(signal.SIGTERM, None, saved))
    return saved


def _put_back(saved: ctypes.Array[ctypes.c_char]) -> None:
    _check(_libc().sigaction(signal.SIGTERM, saved, None))


def _check(result: int) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"sigaction(SIGTERM): {os.strerror(errno)}")


class _NotMainThread(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("SIGTERM handler is not set")


_QUIET = _NotMainThread()
