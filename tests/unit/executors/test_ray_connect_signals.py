"""Cluster.connect keeps Hive's SIGTERM handling: ray.init in the main thread installs Ray's
own handler (exit 15 at once, wherever the run is). Found by `python -m tests.soak --ray`: a SIGTERM
during ray.init (seed 1045), and one after it (seed 1) or after its C++ handler came in (seeds
6012, 6018, 6028); and by pytest-xdist, whose worker has a thread of its own that took a SIGTERM
the main thread blocked. Ray is stood in for: its init
does what Ray's does to the handler, and a SIGTERM lands in the middle of it."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from hive.executors.ray import cluster as cluster_module
from hive.executors.ray.cluster import Cluster


class Stopped(Exception):
    pass


@pytest.fixture
def ours() -> Iterator[list[int]]:
    """Hive's handler stood in for: it records the signal and stops the caller, as Hive's does."""
    got: list[int] = []

    def handler(signum: int, frame: object) -> None:
        got.append(signum)
        raise Stopped

    before = signal.signal(signal.SIGTERM, handler)
    yield got
    signal.signal(signal.SIGTERM, before)


SIG_IGN = 1  # <signal.h>


def _libc_signal(signum: int, handler: int) -> None:
    """Abseil's handler passes a signal it takes on to the one before it; this stand-in cannot,
    so the tests that signal while it would be in place go without it (under pytest-xdist
    another thread takes the signal then)."""
    libc = ctypes.CDLL(None)
    libc.signal.restype = ctypes.c_void_p
    libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.signal(signum, handler)


def fake_ray(monkeypatch: pytest.MonkeyPatch, sigterm_during_init: bool, cxx_handler: bool = True) -> None:
    state = {"up": False}

    def init(**kwargs: object) -> None:
        # Ray's core worker puts in a C++ handler for SIGTERM wherever ray.init runs (Abseil's
        # failure-signal handler): one that ignores it stands in for it, unseen by Python
        if cxx_handler:
            _libc_signal(signal.SIGTERM, SIG_IGN)
        if threading.current_thread() is threading.main_thread():  # what ray.init does
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
        else:
            logging.getLogger("ray._private.worker").warning(
                "SIGTERM handler is not set because current thread is not the main thread."
            )
        if sigterm_during_init:
            os.kill(os.getpid(), signal.SIGTERM)  # Python runs a handler as soon as os.kill returns
            time.sleep(0.2)  # init goes on: time for another thread to take the signal
        state["up"] = True

    ray = types.SimpleNamespace(is_initialized=lambda: state["up"], init=init)
    monkeypatch.setattr(cluster_module, "ray", ray)
    monkeypatch.setattr(cluster_module.atexit, "register", lambda fn: None)
    monkeypatch.setattr(cluster_module, "_answers", lambda address: None)  # no cluster to answer


def test_after_connecting_a_sigterm_is_hives_to_handle(monkeypatch: pytest.MonkeyPatch, ours: list[int]) -> None:
    fake_ray(monkeypatch, sigterm_during_init=False)
    Cluster("127.0.0.9:1", "hive_agent", "~/.hive-node", "p").connect()
    with pytest.raises(Stopped):
        os.kill(os.getpid(), signal.SIGTERM)
    assert ours == [signal.SIGTERM]


def test_a_sigterm_while_connecting_waits_for_hives_handler(monkeypatch: pytest.MonkeyPatch, ours: list[int]) -> None:
    fake_ray(monkeypatch, sigterm_during_init=True, cxx_handler=False)
    with pytest.raises(Stopped):  # not SystemExit(15) from inside init
        Cluster("127.0.0.9:1", "hive_agent", "~/.hive-node", "p").connect()
    assert ours == [signal.SIGTERM]
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, []), "not left blocked"


def test_a_worker_thread_that_connects_leaves_hives_handler(monkeypatch: pytest.MonkeyPatch, ours: list[int]) -> None:
    """Off the main thread Ray leaves the Python handler alone, but its C++ one still comes in
    (a doit worker thread that connects first, or again)."""
    fake_ray(monkeypatch, sigterm_during_init=False)
    before = signal.getsignal(signal.SIGTERM)
    with ThreadPoolExecutor(max_workers=1) as worker:
        worker.submit(Cluster("127.0.0.9:1", "hive_agent", "~/.hive-node", "p").connect).result()
    assert signal.getsignal(signal.SIGTERM) is before and ours == []
    with pytest.raises(Stopped):
        os.kill(os.getpid(), signal.SIGTERM)
    assert ours == [signal.SIGTERM]


def test_a_sigterm_while_connecting_is_hives_with_another_thread_to_take_it(
    monkeypatch: pytest.MonkeyPatch, ours: list[int]
) -> None:
    """A thread that does not block SIGTERM (doit's, a test runner's) is where the kernel sends it."""
    release = threading.Event()
    bystander = threading.Thread(target=release.wait)
    bystander.start()
    try:
        fake_ray(monkeypatch, sigterm_during_init=True, cxx_handler=False)
        with pytest.raises(Stopped):
            Cluster("127.0.0.9:1", "hive_agent", "~/.hive-node", "p").connect()
    finally:
        release.set()
        bystander.join()
    assert ours == [signal.SIGTERM]


def test_rays_warning_that_it_leaves_the_handler_alone_is_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """It is Hive's choice, and it would be the first line of every Ray run's output."""
    shown: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = shown.append  # type: ignore[method-assign]
    logger = logging.getLogger("ray._private.worker")
    logger.addHandler(handler)
    try:
        fake_ray(monkeypatch, sigterm_during_init=False)
        Cluster("127.0.0.9:1", "hive_agent", "~/.hive-node", "p").connect()
    finally:
        logger.removeHandler(handler)
    assert shown == []
