"""The checkpoint report: what a human reviews or decides at a checkpoint or gate,
and the exact commands that answer it."""

from __future__ import annotations

import re

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


_OPTION_LINE = re.compile(r"^\s*[-*]\s+\*\*(?P<name>[^*]+?):?\*\*:?\s*(?P<text>.*)$")

# What the run waits for at each kind of stop (the seed's "Current task" section)
_STATUS = {
    "human-verify": "awaiting verification",
    "decision": "awaiting decision",
    "human-action": "awaiting your manual step",
    "gate": "stopped at a gate",
}


def option_texts(task: Task) -> dict[str, str]:
    """Each of a decision's options with its text, from a `- **Postgres:** pros, cons` list in
    its description (the seed's pros and cons table); an option the list leaves out gets ""."""
    found = {}
    for line in task.description.splitlines():
        m = _OPTION_LINE.match(line)
        if m:
            found[m.group("name").strip().lower()] = m.group("text").strip()
    return {option: found.get(option.lower(), "") for option in task.options}


def decision_text(task: Task) -> str:
    """A decision's description without its `- **Option:** text` lines, which the report
    shows once, beside each option."""
    options = {o.lower() for o in task.options}
    kept = [
        line
        for line in task.description.splitlines()
        if not ((m := _OPTION_LINE.match(line)) and m.group("name").strip().lower() in options)
    ]
    return "\n".join(kept).strip()


def blocked_by(task: Task, dependencies: list[str]) -> str:
    """What the run waits for, said specifically (the seed: "Blocked by is specific")."""
    kind, after = checkpoint_kind(task), ", ".join(dependencies) or "the plan's start"
    if kind == "decision":
        return f"your choice between {', '.join(task.options)}"
    if kind == "human-action":
        return f"a step only you can do: {task.title}"
    if kind == "human-verify":
        return f"your check of what {after} built"
    return f"the hard stop after {after}"


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
    dependencies = [d for d in dependency_results(store, plan, task) if "_gate-" not in d.key]
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
        dependencies=dependencies,
        status=_STATUS[checkpoint_kind(task)],
        blocked_by=blocked_by(task, [d.key for d in dependencies]),
        options=option_texts(task),
        decision=decision_text(task),
    )
