"""What the tasks a task depends on did: their state, merge commit, files and notes. Told
to the task's agent in its brief, and to a human in a checkpoint report."""

from __future__ import annotations

from dataclasses import dataclass

from hive.lifecycle import TaskType
from hive.plan.model import Plan, Task
from hive.store.state import StateStore


@dataclass(frozen=True)
class DependencyResult:
    key: str
    title: str
    state: str
    commit: str = ""
    files: tuple[str, ...] = ()
    reason: str = ""


def dependency_results(store: StateStore, plan: Plan, task: Task) -> tuple[DependencyResult, ...]:
    out = []
    for dep_id in task.depends_on:
        dep = plan.task(dep_id)
        if dep.type == TaskType.GATE:
            continue
        st = store.read(plan.name, dep_id)
        out.append(
            DependencyResult(
                key=plan.key(dep_id),
                title=dep.title,
                state=st.state,
                commit=st.merge_commit,
                files=st.files[:30],
                reason=st.reason,
            )
        )
    return tuple(out)
