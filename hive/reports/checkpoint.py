"""The checkpoint report: what a human reviews or decides at a checkpoint or gate,
and the exact commands that answer it."""

from __future__ import annotations

from hive.lifecycle import State, TaskType, progress, shown_state
from hive.plan.model import Plan, Task
from hive.plan.parser import display_path
from hive.render import render
from hive.reports.dependencies import dependency_results
from hive.store.state import StateStore


def checkpoint_kind(task: Task) -> str:
    return task.type.split(":", 1)[1] if task.type.startswith("checkpoint:") else "gate"


def answer_commands(key: str, task: Task) -> list[str]:
    """Every way to answer this checkpoint, exactly as typed."""
    kind = checkpoint_kind(task)
    if kind == "decision":
        return [f"hive approve {key} --choice {option}" for option in task.options]
    if kind == "human-action":
        return [f"hive approve {key} --done"]
    return [f"hive approve {key}", f'hive approve {key} --reject "what is wrong"']


def how_to_answer(key: str, task: Task) -> str:
    """One line for status and errors."""
    if checkpoint_kind(task) == "decision":
        return f"hive approve {key} --choice {'|'.join(task.options)}"
    return answer_commands(key, task)[0]


def checkpoint_report(store: StateStore, plan: Plan, task: Task, main_branch: str) -> str:
    key = plan.key(task.id)
    states = {t.id: store.read(plan.name, t.id) for t in plan.tasks}
    shown = {t.id: shown_state(states[t.id], t.text_hash) for t in plan.tasks}
    done = progress((t.type, shown[t.id]) for t in plan.tasks)
    completed = [
        {"key": plan.key(t.id), "title": t.title, "commit": states[t.id].merge_commit, "files": states[t.id].files[:6]}
        for t in plan.tasks
        if t.type != TaskType.GATE and shown[t.id] == State.DONE
    ]
    return render(
        "checkpoint.md.j2",
        key=key,
        task=task,
        plan=plan,
        kind=checkpoint_kind(task),
        plan_file=display_path(plan.path),
        done_count=done.done,
        total=done.total,
        completed=completed,
        main_branch=main_branch,
        answers=answer_commands(key, task),
        dependencies=[d for d in dependency_results(store, plan, task) if "_gate-" not in d.key],
    )
