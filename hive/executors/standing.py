"""Where a task recorded as running stands when no run watches it — the one answer
the runner acts on, the start-of-run reconcile reports, `hive status` shows and a
stopped run says, so that they never disagree."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from hive.executors import AgentRef, Executor
from hive.lifecycle import Kind
from hive.store import agent_signals
from hive.store.agent_signals import Signal
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState


class Where(StrEnum):
    """Where a task recorded as running stands."""

    SIGNALLED = "signalled"  # its agent signalled: take it from there (merge a `done`)
    MERGING = "merging"  # its agent had finished and its merge was under way: merge again
    RUNNING = "running"  # its agent is alive: re-attach
    GONE = "gone"  # nothing of it runs: a new attempt (an interruption, not counted)


@dataclass(frozen=True)
class Standing:
    kind: Where
    signal: Signal | None = None
    token: int = 0  # a running agent's executor token, as found now


def standing(paths: Paths, executor: Executor, st: TaskState) -> Standing:
    sig = agent_signals.read(paths.signal_file(st.plan, st.id, st.attempt))
    if sig:
        return Standing(Where.SIGNALLED, sig)
    if st.merging or st.only_merge:
        return Standing(Where.MERGING)
    # a script that finished while no run watched is finished (issue 37: it ran a second time)
    finished = agent_signals.script_finished(paths, st.plan, st.id, st.attempt)
    if finished:
        return Standing(Where.SIGNALLED, finished)
    token = executor.locate(st.session)
    if token is not None:
        return Standing(Where.RUNNING, token=token)
    return Standing(Where.GONE)


def next_step(
    where: Standing, session: str, executor_kind: str, by: str = "the next `doit`", watched: bool = False
) -> str:
    """Where a task recorded as running stands and what `by` (a run) does with it: the one
    wording of a stopped run's goodbye (`watched`: it was watching the task until now), the
    start-of-run reconcile and `hive status`."""
    if where.signal is not None and where.signal.kind == Kind.BAD_FILE:
        return f"{where.signal.reason}; {by} ends its attempt as failed"
    if where.signal is not None and where.signal.exited:
        unwatched = "" if watched else " while no run watched"
        return f"its script finished (exit 0){unwatched}; {by} takes it from there, merging it"
    if where.signal is not None:
        unwatched = "" if watched else " while no run watched"
        merging = ", merging it" if where.signal.kind == Kind.DONE else ""
        return f"its agent signalled `{where.signal.kind}`{unwatched}; {by} takes it from there{merging}"
    if where.kind == Where.MERGING:
        return f"a run stopped while merging it; {by} finishes the merge"
    if where.kind == Where.RUNNING:
        return (
            f"its agent keeps running in {executor_kind} session {session} and no run is watching it; "
            f"{by} re-attaches to it"
        )
    return f"interrupted: its agent is gone; {by} starts a new attempt"


def interrupted(
    paths: Paths, executor: Executor, st: TaskState, patience: float, report: Callable[[str], None]
) -> TaskState:
    """Its agent is gone: end what is left of it (a dead terminal kept for its last
    words, children that outlived it) and record the attempt as interrupted."""
    executor.agent(AgentRef.of(paths.root, st)).stop(patience, True, report)
    return StateStore(paths).mark_interrupted(st)
