"""The execution report `.hive/report.md`: every approved plan's tasks, their state
and evidence, rewritten by the run's main process as tasks finish."""

from __future__ import annotations

import time
from pathlib import Path

from hive.lifecycle import STATES, State, shown_state
from hive.plan.model import Plan
from hive.plan.parser import display_path
from hive.render import render
from hive.store import agent_signals
from hive.store.files import atomic_write
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState
from hive.store.usage import Totals, described, task_totals


def terminal_status(states: list[str]) -> str:
    if any(s in (State.PLANNED, State.IN_PROGRESS, State.PAUSED) for s in states):
        return "in_progress"
    if State.AWAITING_HUMAN in states:
        return "awaiting_human"
    return "complete" if all(s == State.DONE for s in states) else "completed_with_failures"


def execution_report(paths: Paths, plans: tuple[Plan, ...], recorded: dict[str, TaskState] | None = None) -> str:
    """`recorded`: every task's state by `plan:ID` if the caller keeps them (else read)."""
    recorded = StateStore(paths).read_all() if recorded is None else recorded
    sections, every_state = [], []
    spent = Totals()
    for plan in plans:
        if not plan.approved:
            continue
        rows = []
        for task in plan.tasks:
            st = recorded.get(plan.key(task.id)) or TaskState(plan.name, task.id)
            state = shown_state(st, task.text_hash)
            used = task_totals(st)
            spent.merge(used)
            rows.append(
                {
                    "key": plan.key(task.id),
                    "title": _cell(task.title),
                    "state": state,
                    "icon": STATES[state].icon,
                    "commit": st.merge_commit if state == State.DONE else "",
                    "files": _files(st.files) if state == State.DONE else "",
                    "reason": _cell(_evidence(st, state)),
                    "usage": described(used),
                }
            )
        notes = [
            {"key": plan.key(task.id), "attempt": n.get("attempt", "?"), "text": _cell(str(n.get("text", "")))}
            for task in plan.tasks
            for n in agent_signals.notes(paths, plan.name, task.id)
        ]
        states = [r["state"] for r in rows]
        every_state += states
        sections.append(
            {
                "name": plan.name,
                "title": plan.title,
                "file": display_path(plan.path),
                "status": terminal_status(states),
                "rows": rows,
                "notes": notes,
            }
        )
    counts = {str(s): every_state.count(s) for s in STATES}
    return render(
        "report.md.j2",
        status=terminal_status(every_state) if every_state else "complete",
        updated=time.strftime("%Y-%m-%d %H:%M:%S"),
        total=len(every_state),
        counts=counts,
        plans=sections,
        spent=described(spent),
    )


def write_report(paths: Paths, plans: tuple[Plan, ...], recorded: dict[str, TaskState] | None = None) -> Path:
    atomic_write(paths.report, execution_report(paths, plans, recorded))
    return paths.report


def _evidence(st: TaskState, state: str) -> str:
    text = st.reason
    if state == State.FAILED and st.output_tail:
        text += " — " + st.output_tail.strip().splitlines()[-1]
    return text


def _files(files: tuple[str, ...]) -> str:
    shown = ", ".join(files[:3])
    return f"{len(files)}: {shown}" + (" …" if len(files) > 3 else "") if files else "0"


def _cell(text: str) -> str:
    """One markdown table cell: one line, no pipes."""
    line = " ".join(text.split())
    return (line[:117] + "…" if len(line) > 120 else line).replace("|", "\\|")
