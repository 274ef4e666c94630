"""How a Hive process stops: Ctrl-C and SIGTERM become one KeyboardInterrupt per
process, never inside a critical section (a git step, or "main moved" and "state
says done"), and a doit run exits 130 / 143 without a traceback. Plus named crash
points that the kill -9 tests use to stop the orchestrator exactly where they want.

Deferral is done in the Python-level handler, not with a signal mask: doit's
workers run queue feeder threads, and a signal delivered to one of those would
still run the handler in the main thread in the middle of the critical section.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import ClassVar

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# A second Ctrl-C right after the first must not cut the "stopped watching" lines
# short; one that comes later still stops a process that somehow kept going.
REPEAT_GRACE = 5.0
# How long a stopping doit waits for its workers to say goodbye.
WORKER_PATIENCE = 10.0
_PR_SET_PDEATHSIG = 1


class _Thread(threading.local):
    depth = 0  # nesting of uninterruptible() blocks
    pending = False  # a stop signal arrived inside one
    stopped = False  # a doit worker thread that has heard of the stop (once is enough)


_here = _Thread()


class _Stop:
    first: int | None = None  # the signal that stopped this process
    first_at = 0.0
    again = False  # the stop is delivered again (it was raised where Python could only ignore it)
    doit_pid = 0  # set once install_for_doit() ran in that process
    on_stop: ClassVar[list[Callable[[], None]]] = []


def install() -> None:
    """Handle SIGINT and SIGTERM in this process (and the workers it forks)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, _handler)
    if sys.unraisablehook is not _unraisable:
        _Unraisable.previous = sys.unraisablehook
        sys.unraisablehook = _unraisable


class _Unraisable:
    previous: Callable[[sys.UnraisableHookArgs], object] = sys.unraisablehook


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """A stop raised where Python cannot raise anything (a weakref callback, a `__del__`)
    is printed as "Exception ignored in ..." with a traceback, and lost: the run went on
    and exited 0 (seen in the soak: Ctrl-C as a doit run ended). It is delivered again
    instead, to the next line that can take it."""
    exc_type = unraisable.exc_type
    if exc_type is not None and issubclass(exc_type, KeyboardInterrupt) and _Stop.first is not None:
        if threading.current_thread() is threading.main_thread():  # where signal handlers run
            _Stop.again = True
            _deliver_again()
        else:  # a doit worker thread (`_stop_here`): the next `pause` tells it again
            _here.stopped = False
        return
    _Unraisable.previous(unraisable)


def _deliver_again() -> None:
    """Send the stop again from another thread: sent from here, it would run the handler at
    once, still inside the hook (where it would be ignored once more)."""
    timer = threading.Timer(0.01, os.kill, (os.getpid(), _Stop.first or signal.SIGINT))
    timer.daemon = True
    timer.start()


def _inside(frame: types.FrameType | None, code: types.CodeType) -> bool:
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def add_stop_hook(hook: Callable[[], None]) -> None:
    """Run `hook` when the first stop signal arrives (e.g. clear the progress line)."""
    _Stop.on_stop.append(hook)


def _handler(signum: int, frame: types.FrameType | None) -> None:
    now = time.monotonic()
    if _Stop.again:
        if _inside(frame, _unraisable.__code__):  # the hook has not returned yet
            _deliver_again()
            return
        _Stop.again = False
    elif _Stop.first is None:
        _Stop.first, _Stop.first_at = signum, now
        for hook in _Stop.on_stop:
            hook()
    elif now - _Stop.first_at < REPEAT_GRACE:
        return
    if _here.depth:
        _here.pending = True
        return
    raise KeyboardInterrupt


def stopped_by() -> int | None:
    """The signal that stopped this process, if one did."""
    return _Stop.first


@contextlib.contextmanager
def uninterruptible() -> Iterator[None]:
    """ProfilePause Ctrl-C and SIGTERM until the block ends (then they take effect), so a git
    command is never killed half-way and "main moved" and "state says done" are never
    separated by a clean stop. Needs `install()` (done by the CLI and by doit's dodo)."""
    _here.depth += 1
    try:
        yield
    finally:
        _here.depth -= 1
        if not _here.depth:
            _stop_here()


def _stop_here() -> None:
    """Outside any critical section: a stop that arrived meanwhile takes effect. Signals
    reach only the main thread; doit's worker threads (`doit -P thread`) hear of a stop
    here and in `pause`, once each."""
    if _here.pending:
        _here.pending = False
        raise KeyboardInterrupt
    if _Stop.first is not None and not _here.stopped and threading.current_thread() is not threading.main_thread():
        _here.stopped = True
        raise KeyboardInterrupt


def pause(seconds: float) -> None:
    """Sleep in a wait loop; a doit worker thread leaves it (KeyboardInterrupt) once the run is stopped."""
    time.sleep(seconds)
    may_stop()


def may_stop() -> None:
    """Where a wait loop that waits by other means than `pause` may stop, as in `pause`."""
    if not _here.depth:
        _stop_here()


def exit_code(signum: int | None) -> int:
    """130 for Ctrl-C, 143 for SIGTERM: what shells report for a process they stopped."""
    return 128 + (signum or signal.SIGINT)


def install_for_doit() -> None:
    """The doit process: stop signals as above; its workers stop when it dies (an idle
    worker of a killed doit would otherwise wait for a job forever); and an interrupted
    run ends with one line per task from its workers, no traceback, and exit 130/143."""
    install()
    if _Stop.doit_pid == os.getpid():  # a second load of the dodo file in the same process
        return
    doit_pid = _Stop.doit_pid = os.getpid()
    os.register_at_fork(
        before=_block_stops, after_in_parent=_unblock_stops, after_in_child=lambda: _worker_forked(doit_pid)
    )
    previous = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: types.TracebackType | None) -> None:
        if not issubclass(kind, KeyboardInterrupt):
            previous(kind, exc, tb)
            return
        _wait_for_workers()
        _exit(exit_code(_Stop.first))

    sys.excepthook = hook


def run_finished() -> None:
    """doit's run is over and its database saved: a stop signal now ends the process at
    once, exit 130/143 (there is nothing left to stop). From the interpreter's last
    steps on it is ignored: Python resets its handlers to the default there, and a
    Ctrl-C in that instant would kill doit by SIGINT instead (seen in the soak)."""
    _exit_on_stop()
    atexit.register(_ignore_stop_signals)


def worker_finished() -> None:
    """A forked doit worker whose job loop ended: a stop signal now ends it at once. Its
    last steps are multiprocessing's (flushing its queues), which would print the
    KeyboardInterrupt as a traceback (seen in the soak: Ctrl-C to the group as the run ended)."""
    _exit_on_stop()


def _exit_on_stop() -> None:
    for sig in STOP_SIGNALS:
        signal.signal(sig, _exit_now)


def _exit_now(signum: int, _frame: types.FrameType | None) -> None:
    _exit(exit_code(signum))


def _exit(code: int) -> None:
    """Leave now, output flushed (doit's database is saved by then; nothing else must run)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _ignore_stop_signals() -> None:
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def _block_stops() -> None:
    """Around a fork: the kernel keeps a stop signal for the new worker until it is ready
    to hold it (raised inside Python's after-fork hooks it was lost, and the worker,
    deaf to the stop that followed, ran on: seen in the soak)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def _unblock_stops() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def _worker_forked(parent: int) -> None:
    """A doit worker is born holding stop signals: one that arrives before doit's job
    loop can handle it would escape as a traceback from multiprocessing's bootstrap
    (seen in the soak: Ctrl-C to the process group as doit forked). `worker_ready()`
    lets them through."""
    stop_point("worker-forked")  # before anything of ours ran in it: the worst instant
    # nothing has stopped this process yet: what its parent heard is not its own (a
    # worker that took its parent's stop for a repeat ignored the stop meant for it)
    _here.depth, _here.pending, _Stop.first, _Stop.again = 1, False, None, False
    _unblock_stops()
    _stop_with_parent(parent)


def in_forked_worker() -> bool:
    return bool(_Stop.doit_pid) and os.getpid() != _Stop.doit_pid


def worker_ready() -> bool:
    """Called by a forked worker as its job loop starts: True if it was stopped before
    (it should leave at once)."""
    _here.depth = 0
    stopped, _here.pending = _here.pending, False
    return stopped


def _stop_with_parent(parent: int) -> None:
    """In a forked doit worker: SIGTERM (a clean stop: "stopped watching …") when doit dies."""
    try:
        import ctypes  # a forked worker only

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # no prctl (not Linux): the worker's own orphan check remains
        return
    if os.getppid() != parent:  # it died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _wait_for_workers() -> None:
    """Workers (processes, or threads under `doit -P thread`) print their own "stopped
    watching" line: let them, briefly."""
    deadline = time.monotonic() + WORKER_PATIENCE
    # a process that never imported multiprocessing (every `hive` command an agent runs) has no children to wait
    # for, and is spared its import
    mp = sys.modules.get("multiprocessing")
    for child in mp.active_children() if mp else ():
        child.join(max(0.0, deadline - time.monotonic()))
    for thread in list(worker_threads):
        thread.join(max(0.0, deadline - time.monotonic()))


worker_threads: set[threading.Thread] = set()  # doit's job loops running as threads


def crash_point(name: str) -> None:
    """With HIVE_FAULT=<name> in the environment, die here like `kill -9` of the run."""
    if os.environ.get("HIVE_FAULT") == name:
        os.killpg(os.getpgrp(), signal.SIGKILL)


def stop_point(name: str) -> None:
    """With HIVE_FAULT=sigint:<name>, Ctrl-C the whole run here, like a user's timing at its worst."""
    if os.environ.get("HIVE_FAULT") == f"sigint:{name}":
        os.killpg(os.getpgrp(), signal.SIGINT)
