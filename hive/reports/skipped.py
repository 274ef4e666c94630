"""Which tasks a run skips, and why: a planned task that waits (directly, or through other
waiting tasks) for one that failed, is blocked, too big or waits for a human does not run
until that one is done. `doit list`, `hive status`, the report and a run's last line say so
with the tasks it waits for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hive.lifecycle import State
from hive.plan.model import Plan

STOPPED = (State.FAILED, State.BLOCKED, State.TOO_BIG, State.AWAITING_HUMAN)  # a task behind one waits


def skipped_because(plan: Plan, shown: Mapping[str, State]) -> dict[str, tuple[str, ...]]:
    """Task id -> the keys of the stopped tasks it waits for, for each planned task that waits
    for one (`shown`: each task's shown state by id; a task not in it has not run)."""
    causes: dict[str, tuple[str, ...]] = {}
    depends_on = {t.id: t.depends_on for t in plan.tasks}  # plan.task() looks through the list: 1,000² on a big plan

    def of(task_id: str) -> tuple[str, ...]:
        if task_id not in causes:
            causes[task_id] = ()  # a plan is a DAG (checked on load); this only ends a walk early
            found: list[str] = []
            for dep in depends_on[task_id]:
                state = shown.get(dep, State.PLANNED)
                if state in STOPPED:
                    found.append(plan.key(dep))
                elif state != State.DONE:
                    found += of(dep)
            causes[task_id] = tuple(dict.fromkeys(found))
        return causes[task_id]

    return {
        task.id: why
        for task in plan.tasks
        if shown.get(task.id, State.PLANNED) == State.PLANNED and (why := of(task.id))
    }


def reason(waits_for: tuple[str, ...], shown_by_key: Mapping[str, State]) -> str:
    """`skipped: waits for auth:2 (failed), auth:3 (blocked)`."""
    return "skipped: waits for " + ", ".join(f"{key} ({shown_by_key.get(key, State.PLANNED)})" for key in waits_for)


@dataclass(frozen=True)
class Skip:
    waits_for: tuple[str, ...]  # the keys of the stopped tasks it waits for
    reason: str  # `skipped: waits for …`, for people


def skips(plan: Plan, shown: Mapping[str, State]) -> dict[str, Skip]:
    """`skipped_because`, each with its sentence: what `doit list`, `hive status` and the report show."""
    by_key = {plan.key(task_id): state for task_id, state in shown.items()}
    return {task_id: Skip(why, reason(why, by_key)) for task_id, why in skipped_because(plan, shown).items()}
