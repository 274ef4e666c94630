"""Stopping agents: `hive stop [task]` (stages SIGINT, SIGTERM, SIGKILL, saying each
step, then recording that a human stopped them), and the end of every attempt.

"Stopped" is said only once no process of the agent is left — its tmux pane's
shell dying proves nothing when the agent traps SIGINT and lives on with ppid 1.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hive.adapters import tmux
from hive.adapters.processes import AgentMark, Stages, stages, stop_in_stages
from hive.errors import HiveError
from hive.settings.config import load_repo_config
from hive.store.files import HeldLock, atomic_write
from hive.store.names import parse_key
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState, history_entry

Report = Callable[[str], None]


def stop(root: Path, key: str | None, report: Report) -> int:
    """Stop one task's agent, or every running one; returns how many were stopped."""
    patience = load_repo_config(root).stop_patience
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
        survivors = stop_agent(root, st, prefixed(report, st.key), stages(patience))
        if survivors:
            raise HiveError(f"{st.key}: processes {sorted(survivors)} survived SIGKILL; look at them with "
                            f"`ps -o pid,stat,args -p {','.join(map(str, sorted(survivors)))}`")
        report(f"{st.key}: agent stopped (no process of it is left); tmux session {st.session} closed "
               f"(its output stays in `hive logs {st.key}`)")
        _record_if_unwatched(paths, store, st, report)
    return len(running)


def prefixed(report: Report, key: str) -> Report:
    return lambda line: report(f"{key}: {line}")


def stop_agent(root: Path, st: TaskState, report: Report, plan: Stages, quiet_first: bool = False) -> set[int]:
    """Stop every process of the attempt's agent in stages, then close its tmux
    session; returns the pids that outlived every stage (normally none)."""
    mark = AgentMark(str(root), st.key, st.attempt, st.pane_pid)
    survivors = stop_in_stages(mark, plan, report, quiet_first)
    tmux.kill_session(st.session)
    return survivors


def _record_if_unwatched(paths: Paths, store: StateStore, st: TaskState, report: Report) -> None:
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
