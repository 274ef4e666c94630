"""Stop running agents in stages (SIGINT, SIGTERM, SIGKILL, saying each step), then record that
a human stopped them (`hive stop [task]`, the dashboard's Stop).

"Stopped" is said only once no process of the agent is left (the executor proves it).
"""

from __future__ import annotations

from pathlib import Path

from hive import executors
from hive.errors import HiveError
from hive.executors import AgentRef
from hive.executors.base import Report
from hive.lifecycle import Kind, Outcome, State
from hive.output import prefixed
from hive.project import load_repo_config
from hive.store.files import FileLock, atomic_write
from hive.store.names import parse_key
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState


def stop(root: Path, key: str | None, report: Report) -> int:
    """Stop one task's agent, or every running one; returns how many were stopped."""
    config = load_repo_config(root)
    executor = executors.executor(config.executor, config, root)
    paths = Paths(root)
    store = StateStore(paths)
    running = [st for st in store.read_all().values() if st.state == State.IN_PROGRESS]
    if key is not None:
        parse_key(key)
        running = [st for st in running if st.key == key]
        if not running:
            raise HiveError(f"{key} has no running agent")
    for st in running:
        # The stop request goes first: a run watching this agent records "stopped",
        # not a crash it would retry.
        atomic_write(paths.stop_file(st.plan, st.id, st.attempt), "stopped by hive stop\n")
        left = executor.agent(AgentRef.of(root, st)).stop(config.stop_patience, False, prefixed(report, st.key))
        if left:
            raise HiveError(f"{st.key}: {left}")
        report(
            f"{st.key}: agent stopped (no process of it is left); {executor.kind} session {st.session} closed "
            f"(its output stays in `hive logs {st.key}`)"
        )
        _record_if_unwatched(paths, store, st, report)
    return len(running)


def _record_if_unwatched(paths: Paths, store: StateStore, st: TaskState, report: Report) -> None:
    claim = FileLock(paths.claim_lock(st.plan, st.id))
    if not claim.try_acquire():
        return  # the run watching it records the outcome
    try:
        current = store.read(st.plan, st.id)
        if current.state == State.IN_PROGRESS and current.attempt == st.attempt:
            outcome = Outcome(Kind.STOPPED)
            reason = outcome.recorded_reason(st.key)
            store.close_attempt(current, outcome.rule.state, reason, expect=(State.IN_PROGRESS,), event="stopped")
            report(f"{st.key}: {outcome.rule.state} — {reason}")
    finally:
        claim.release()
