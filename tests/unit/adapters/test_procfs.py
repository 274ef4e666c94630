"""Stopping an agent's processes in stages (hive.adapters.procfs), with real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hive.adapters import procfs

# On SIGHUP it starts a child of the same attempt (which ignores SIGHUP and lingers), then ends.
FORKS_WHEN_HUNG_UP = """
import os, signal, subprocess, sys, time
LINGER = "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_IGN); time.sleep(60)"
def hup(*_):
    subprocess.Popen([sys.executable, "-c", LINGER])
    open(sys.argv[1], "w").close()
    os._exit(0)
signal.signal(signal.SIGHUP, hup)
open(sys.argv[2], "w").close()
time.sleep(60)
"""


def start(tmp_path: Path, mark: procfs.AgentMark, script: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HIVE_ROOT": mark.root, "HIVE_TASK": mark.task, "HIVE_ATTEMPT": str(mark.attempt)}
    ready = tmp_path / "ready"
    p = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "forked"), str(ready)], env=env)
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return p


def test_an_agent_that_ends_at_once_is_stopped_in_its_first_stage(tmp_path: Path):
    mark = procfs.AgentMark(str(tmp_path), "p:1", 1, 0)
    p = start(tmp_path, mark, "import sys, time; open(sys.argv[2], 'w').close(); time.sleep(60)")
    said: list[str] = []
    try:
        assert procfs.members(mark) == {p.pid}
        assert procfs.stop_in_stages(mark, procfs.stages(5.0, finished=True), said.append, quiet_first=True) == set()
    finally:
        p.kill()
    assert p.wait(timeout=10) == -signal.SIGHUP and said == []


@pytest.mark.parametrize("pane_known", [False, True])
def test_a_process_it_starts_while_it_ends_is_found_and_stopped_too(tmp_path: Path, pane_known: bool):
    """Only the processes it had are watched while they live; once they are gone, a look at all
    of them finds the child it started meanwhile, which the next stage ends. With the pane's
    process known (the mark's session: the oldest of the agent), the scans read nothing older,
    and still find that child after the pane's process is gone."""
    mark = procfs.AgentMark(str(tmp_path), "p:1", 1, 0)
    p = start(tmp_path, mark, FORKS_WHEN_HUNG_UP)
    if pane_known:
        mark = procfs.AgentMark(mark.root, mark.task, mark.attempt, p.pid)
    said: list[str] = []
    try:
        if pane_known:
            born = procfs.birth(mark)
            assert born > 0 and procfs.members(mark, born) == {p.pid}
        left = procfs.stop_in_stages(mark, procfs.stages(0.5, finished=True), said.append, quiet_first=True)
    finally:
        p.kill()
        p.wait()
        for pid in procfs.members(mark):
            os.kill(pid, signal.SIGKILL)
    assert (tmp_path / "forked").exists() and left == set()
    assert (
        len(said) == 1
        and said[0].startswith("sending SIGTERM to its process (pid ")
        and f"(pid {p.pid})" not in said[0]
    )


def test_a_scan_leaves_out_processes_older_than_the_pane_process(tmp_path: Path):
    """Even with the attempt's environment (none of the agent's could be older), and the
    start time is trusted only while the pane's pid is the attempt's."""
    mark = procfs.AgentMark(str(tmp_path), "p:1", 1, 0)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    older = start(tmp_path / "a", mark, "import sys, time; open(sys.argv[2], 'w').close(); time.sleep(60)")
    time.sleep(0.05)  # start times count in clock ticks (10 ms)
    newer = start(tmp_path / "b", mark, "import sys, time; open(sys.argv[2], 'w').close(); time.sleep(60)")
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        pane = procfs.AgentMark(mark.root, mark.task, mark.attempt, newer.pid)
        born = procfs.birth(pane)
        assert born > 0
        assert procfs.members(pane, born) == {newer.pid}
        assert procfs.members(pane) == {older.pid, newer.pid}
        assert procfs.birth(procfs.AgentMark(mark.root, mark.task, mark.attempt, stranger.pid)) == 0
        assert procfs.birth(procfs.AgentMark(mark.root, mark.task, 2, newer.pid)) == 0
    finally:
        for p in (older, newer, stranger):
            p.kill()
            p.wait()
    assert procfs.birth(pane) == 0  # gone: a full scan


def test_waiting_for_processes_to_end_wakes_as_the_last_one_ends():
    """Through pidfds: no nap between looks on the way of every task's merge (issue 44)."""
    quick = subprocess.Popen([sys.executable, "-c", "pass"])
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    gone = subprocess.Popen(["true"])
    gone.wait()
    try:
        assert procfs._ended({quick.pid, later.pid, gone.pid}, time.monotonic() + 60)
        assert later.poll() is not None and quick.poll() is not None  # ended (not yet reaped): not the deadline
        assert not procfs.pid_alive(later.pid)
    finally:
        for p in (quick, later):
            p.kill()
            p.wait()
