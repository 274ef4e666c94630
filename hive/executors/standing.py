"""Where a task recorded as running stands when no run watches it — the one answer
the runner acts on, the start-of-run reconcile reports, `hive status` shows and a
stopped run says, so that they never disagree."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hive.executors import AgentRef, Executor
from hive.store import agent_signals
from hive.store.agent_signals import Signal
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState

SIGNALLED = "signalled"  # its agent signalled: take it from there (merge a `done`)
MERGING = "merging"  # its agent had finished and its merge was under way: merge again
RUNNING = "running"  # its agent is alive: re-attach
GONE = "gone"  # nothing of it runs: a new attempt (an interruption, not counted)


@dataclass(frozen=True)
class Standing:
    kind: str
    signal: Signal | None = None
    token: int = 0  # a running agent's executor token, as found now


def standing(paths: Paths, executor: Executor, st: TaskState) -> Standing:
    sig = agent_signals.read(paths.signal_file(st.plan, st.id, st.attempt))
    if sig:
        return Standing(SIGNALLED, sig)
    if st.merging or st.only_merge:
        return Standing(MERGING)
    token = executor.locate(st.session)
    if token is not None:
        return Standing(RUNNING, token=token)
    return Standing(GONE)


def interrupted(
    paths: Paths, executor: Executor, st: TaskState, patience: float, report: Callable[[str], None]
) -> TaskState:
    """Its agent is gone: end what is left of it (a dead terminal kept for its last
    words, children that outlived it) and record the attempt as interrupted."""
    executor.stop(AgentRef.of(paths.root, st), patience, True, report)
    return StateStore(paths).mark_interrupted(st)
