"""`hive stop [task]`: stop running agents in stages (SIGINT, SIGTERM, SIGKILL),
saying each step, and record that a human stopped them."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Callable

from hive import tmux
from hive.errors import HiveError
from hive.fsutil import HeldLock, atomic_write
from hive.names import parse_key
from hive.paths import Paths
from hive.state import StateStore, TaskState, history_entry
from hive.supervise import pid_alive

STAGES = ((signal.SIGINT, 5.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0))


def stop(root: Path, key: str | None, report: Callable[[str], None],
         stages: tuple[tuple[int, float], ...] = STAGES) -> int:
    """Stop one task's agent, or every running one; returns how many were stopped."""
    paths = Paths(root)
    store = StateStore(paths)
    running = [st for st in store.read_all().values() if st.state == "in_progress"]
    if key is not None:
        parse_key(key)
        running = [st for st in running if st.key == key]
        if not running:
            raise HiveError(f"{key} has no running agent")
    for st in running:
        # The stop request goes first: a run watching this agent records "stopped",
        # not a crash it would retry.
        atomic_write(paths.stop_file(st.plan, st.id, st.attempt), "stopped by hive stop\n")
        _stop_agent(st, report, stages)
        _record_if_unwatched(paths, store, st, report)
    return len(running)


def _stop_agent(st: TaskState, report: Callable[[str], None], stages: tuple[tuple[int, float], ...]) -> None:
    pid = st.pane_pid
    for sig, patience in stages:
        if not pid_alive(pid):
            break
        report(f"{st.key}: sending {signal.Signals(sig).name} to its agent (pid {pid}), waiting up to {patience:g}s")
        try:
            os.killpg(pid, sig)   # tmux makes the pane's process a group leader: reach the agent's children too
        except ProcessLookupError:
            break
        deadline = time.monotonic() + patience
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    tmux.kill_session(st.session)
    report(f"{st.key}: agent stopped; tmux session {st.session} closed (its output stays in `hive logs {st.key}`)")


def _record_if_unwatched(paths: Paths, store: StateStore, st: TaskState, report: Callable[[str], None]) -> None:
    claim = HeldLock(paths.claim_lock(st.plan, st.id))
    if not claim.try_acquire():
        return   # the run watching it records the outcome
    try:
        current = store.read(st.plan, st.id)
        if current.state == "in_progress" and current.attempt == st.attempt:
            reason = f"stopped by `hive stop`; `hive retry {st.key}` to run it again"
            store.update(st.plan, st.id, expect=("in_progress",), state="blocked", reason=reason,
                         history=current.history + (history_entry(current, "blocked", reason),), event="stopped")
            report(f"{st.key}: blocked — {reason}")
    finally:
        claim.release()
