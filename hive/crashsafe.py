"""Crash-safety helpers: critical sections that Ctrl-C/SIGTERM cannot split, and
named crash points that the kill -9 tests use to stop the orchestrator exactly
where they want (a `kill -9` of doit and its workers, i.e. the process group)."""
from __future__ import annotations

import contextlib
import os
import signal
from typing import Iterator

_DEFERRED = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def uninterruptible() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM until the block ends (then they are delivered), so
    "main moved" and "state says done" are never separated by a clean stop."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def crash_point(name: str) -> None:
    """With HIVE_FAULT=<name> in the environment, die here like `kill -9` of the run."""
    if os.environ.get("HIVE_FAULT") == name:
        os.killpg(os.getpgrp(), signal.SIGKILL)
