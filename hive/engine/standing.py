"""Where a task recorded as running stands when no run watches it — the one answer
the runner acts on, the start-of-run reconcile reports, `hive status` shows and a
stopped run says, so that they never disagree."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hive.adapters import tmux
from hive.adapters.processes import pid_alive, stages
from hive.cli.stop import stop_agent
from hive.store import agent_signals
from hive.store.agent_signals import Signal
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState

SIGNALLED = "signalled"   # its agent signalled: take it from there (merge a `done`)
MERGING = "merging"       # its agent had finished and its merge was under way: merge again
RUNNING = "running"       # its agent is alive in tmux: re-attach
GONE = "gone"             # nothing of it runs: a new attempt (an interruption, not counted)


@dataclass(frozen=True)
class Standing:
    kind: str
    signal: Signal | None = None
    pane_pid: int = 0


def standing(paths: Paths, st: TaskState) -> Standing:
    sig = agent_signals.read(paths.signal_file(st.plan, st.id, st.attempt))
    if sig:
        return Standing(SIGNALLED, sig)
    if st.merging or st.only_merge:
        return Standing(MERGING)
    pane = tmux.pane(st.session) if st.session else None
    if pane is not None and not pane.dead and pid_alive(pane.pid):
        return Standing(RUNNING, pane_pid=pane.pid)
    return Standing(GONE)


def interrupted(paths: Paths, st: TaskState, patience: float, report: Callable[[str], None]) -> TaskState:
    """Its agent is gone: end what is left of it (a dead pane kept for its last words,
    children that outlived it) and record the attempt as interrupted."""
    stop_agent(paths.root, st, report, stages(patience, finished=True), quiet_first=True)
    return StateStore(paths).mark_interrupted(st)
