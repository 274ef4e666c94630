"""Reports for humans: the checkpoint report (what to review or decide, and the
exact command to answer) and the execution report `.hive/report.md`."""
from __future__ import annotations

import time
from pathlib import Path

from hive.engine.brief import render
from hive.engine.continuation import dependency_results
from hive.plan.parser import Plan, Task, display_path
from hive.store.files import atomic_write
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState, shown_state

ICONS = {"done": "✅", "failed": "❌", "blocked": "⛔", "too_big": "🪓", "awaiting_human": "⏸", "in_progress": "⏳",
         "planned": "·"}


def checkpoint_kind(task: Task) -> str:
    return task.type.split(":", 1)[1] if task.type.startswith("checkpoint:") else "gate"


def answer_commands(key: str, task: Task) -> list[str]:
    """Every way to answer this checkpoint, exactly as typed."""
    kind = checkpoint_kind(task)
    if kind == "decision":
        return [f"hive approve {key} --choice {option}" for option in task.options]
    if kind == "human-action":
        return [f"hive approve {key} --done"]
    return [f"hive approve {key}", f"hive approve {key} --reject \"what is wrong\""]


def how_to_answer(key: str, task: Task) -> str:
    """One line for status and errors."""
    if checkpoint_kind(task) == "decision":
        return f"hive approve {key} --choice {'|'.join(task.options)}"
    return answer_commands(key, task)[0]


def checkpoint_report(store: StateStore, plan: Plan, task: Task, main_branch: str) -> str:
    key = f"{plan.name}:{task.id}"
    real = [t for t in plan.tasks if t.type != "gate"]
    states = {t.id: store.read(plan.name, t.id) for t in real}
    completed = [{"key": f"{plan.name}:{t.id}", "title": t.title, "commit": states[t.id].merge_commit,
                  "files": states[t.id].files[:6]} for t in real if states[t.id].state == "done"]
    return render("checkpoint.md.j2", key=key, task=task, plan=plan, kind=checkpoint_kind(task),
                  plan_file=display_path(plan.path), done_count=len(completed), total=len(real),
                  completed=completed, main_branch=main_branch, answers=answer_commands(key, task),
                  dependencies=[d for d in dependency_results(store, plan, task) if "_gate-" not in d.key])


def terminal_status(states: list[str]) -> str:
    if any(s in ("planned", "in_progress") for s in states):
        return "in_progress"
    if "awaiting_human" in states:
        return "awaiting_human"
    return "complete" if all(s == "done" for s in states) else "completed_with_failures"


def execution_report(root: Path, plans: tuple[Plan, ...], recorded: dict[str, TaskState] | None = None) -> str:
    """`recorded`: every task's state by `plan:ID` if the caller keeps them (else read)."""
    recorded = StateStore(Paths(root)).read_all() if recorded is None else recorded
    sections, every_state = [], []
    for plan in plans:
        if not plan.approved:
            continue
        rows = []
        for task in plan.tasks:
            st = recorded.get(f"{plan.name}:{task.id}") or TaskState(plan.name, task.id)
            state = shown_state(st, task.text_hash)
            rows.append({"key": f"{plan.name}:{task.id}", "title": _cell(task.title), "state": state,
                         "icon": ICONS.get(state, ""), "commit": st.merge_commit if state == "done" else "",
                         "files": _files(st.files) if state == "done" else "",
                         "reason": _cell(_evidence(st, state))})
        states = [r["state"] for r in rows]
        every_state += states
        sections.append({"name": plan.name, "title": plan.title, "file": display_path(plan.path),
                         "status": terminal_status(states), "rows": rows})
    counts = {s: every_state.count(s) for s in ICONS}
    return render("report.md.j2", status=terminal_status(every_state) if every_state else "complete",
                  updated=time.strftime("%Y-%m-%d %H:%M:%S"), total=len(every_state), counts=counts,
                  plans=sections)


def write_report(root: Path, plans: tuple[Plan, ...], recorded: dict[str, TaskState] | None = None) -> Path:
    path = Paths(root).report
    atomic_write(path, execution_report(root, plans, recorded))
    return path


def _evidence(st: TaskState, state: str) -> str:
    text = st.reason
    if state == "failed" and st.output_tail:
        text += " — " + st.output_tail.strip().splitlines()[-1]
    return text


def _files(files: tuple[str, ...]) -> str:
    shown = ", ".join(files[:3])
    return f"{len(files)}: {shown}" + (" …" if len(files) > 3 else "") if files else "0"


def _cell(text: str) -> str:
    """One markdown table cell: one line, no pipes."""
    line = " ".join(text.split())
    return (line[:117] + "…" if len(line) > 120 else line).replace("|", "\\|")
