"""What to do with a task as recorded (SPEC "Task states", the re-run table).

A pure function of the recorded state and the facts gathered about it (from git,
the executor and the signal files): it writes nothing, so every row of the table
is unit-tested, and the runner applies the decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hive.executors.standing import Standing, Where
from hive.lifecycle import STOPS, Resume, State
from hive.store.agent_signals import Signal
from hive.store.state import TaskState


class Step(StrEnum):
    DONE = "done"  # nothing to do
    MERGED_ALREADY = "merged"  # its merge reached main before the last run stopped: record it
    STOPPED = "stopped"  # stays as it is (failed, blocked, too big, waiting for a human): the run says why
    CHECKPOINT = "checkpoint"  # a checkpoint reached: stop for a human
    NEW = "new"  # start a new attempt
    ATTACH = "attach"  # its agent still runs: watch it again
    SIGNALLED = "signalled"  # its agent signalled while no run watched: act on it
    MERGE = "merge"  # the agent's work is on its branch: merge it
    FOLLOW = "follow"  # its pull request is open on the forge: look at it (engine/pullrequest.py)


@dataclass(frozen=True)
class Facts:
    """What the runner found out before deciding."""

    merged_already: bool = False  # `st.merging` is on main
    outdated: str = ""  # why a finished or held task must run again (lifecycle.Verdict.outdated)
    standing: Standing | None = None  # for a task recorded as running: where it stands
    answered: bool = False  # the last question its agents asked (`hive ask`) has its answer


@dataclass(frozen=True)
class Decision:
    step: Step
    reopen: str = ""  # re-open the task first (this is why)
    interrupted: bool = False  # record the last attempt as interrupted first
    token: int | None = None  # the running agent's executor token, to record
    signal: Signal | None = None  # the signal its agent sent while no run watched


_IN_PROGRESS = {
    Where.SIGNALLED: Step.SIGNALLED,
    Where.MERGING: Step.MERGE,
    Where.RUNNING: Step.ATTACH,
    Where.GONE: Step.NEW,
}


def _merge_under_way(st: TaskState, facts: Facts) -> Decision | None:
    """A merge that reached main, or a PR open on the forge: what comes before anything else."""
    if st.merging and st.state != State.DONE and facts.merged_already:
        return Decision(Step.MERGED_ALREADY)
    if st.resume == Resume.PR and st.state in (State.AWAITING_HUMAN, State.PAUSED) and not facts.outdated:
        return Decision(Step.FOLLOW)
    return None


def decide(st: TaskState, facts: Facts, is_checkpoint: bool, max_attempts: int) -> Decision:
    under_way = _merge_under_way(st, facts)
    if under_way is not None:
        return under_way
    if st.state == State.IN_PROGRESS:
        where = facts.standing or Standing(Where.GONE)
        token = where.token if where.kind == Where.RUNNING and where.token != st.agent_token else None
        return Decision(
            _IN_PROGRESS[where.kind], interrupted=where.kind == Where.GONE, token=token, signal=where.signal
        )
    if facts.outdated:
        return Decision(_from_planned(is_checkpoint), reopen=facts.outdated)
    if st.state == State.DONE:
        return Decision(Step.DONE)
    if st.state in STOPS:
        # an agent's question (`hive ask`) that has its answer: the next attempt goes on with it
        answered = st.state == State.AWAITING_HUMAN and st.resume == Resume.ANSWER and facts.answered
        return Decision(Step.NEW if answered else Step.STOPPED)
    # an interrupted attempt was given back when it was recorded (attempts_used): nothing here reads its reason
    if st.state == State.FAILED and (st.permanent or st.attempts_used >= max_attempts):
        return Decision(Step.STOPPED)
    if is_checkpoint:
        return Decision(Step.CHECKPOINT)
    if st.only_merge:
        return Decision(Step.MERGE)
    return Decision(_from_planned(is_checkpoint))


def _from_planned(is_checkpoint: bool) -> Step:
    """A re-opened task starts over from planned (its resume and attempts cleared)."""
    return Step.CHECKPOINT if is_checkpoint else Step.NEW
