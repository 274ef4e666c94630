"""The execution report `.hive/report.md`: every approved plan's tasks, their state
and evidence, rewritten by the run's main process as tasks finish."""

from __future__ import annotations

import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from hive.lifecycle import STATES, State, shown_state
from hive.output import duration
from hive.plan.model import Plan
from hive.plan.parser import display_path
from hive.render import render
from hive.reports import skipped
from hive.reviews import CheckRun
from hive.store import agent_signals
from hive.store.files import atomic_write
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState
from hive.store.usage import Totals, described, task_totals

SKIPPED, SKIPPED_ICON = "skipped", "⏭️"  # a planned task that waits for a stopped one


def terminal_status(states: list[str], waiting: int = 0) -> str:
    """`waiting`: how many of the planned tasks are skipped (they wait for a stopped one)."""
    if states.count(State.PLANNED) > waiting or any(s in (State.IN_PROGRESS, State.PAUSED) for s in states):
        return "in_progress"
    if State.AWAITING_HUMAN in states:
        return "awaiting_human"
    return "complete" if all(s == State.DONE for s in states) else "completed_with_failures"


def execution_report(
    paths: Paths,
    plans: tuple[Plan, ...],
    recorded: dict[str, TaskState] | None = None,
    run_seconds: float | None = None,
) -> str:
    """`recorded`: every task's state by `plan:ID` if the caller keeps them (else read);
    `run_seconds`: how long the run writing it has taken so far."""
    sections, spent = _sections(paths, plans, StateStore(paths).read_all() if recorded is None else recorded)
    every_state = [r["state"] for p in sections for r in p["rows"]]
    waiting = sum(r["shown"] == SKIPPED for p in sections for r in p["rows"])
    merges = sorted(
        (
            {"commit": r["commit"], "key": r["key"], "title": r["title"]}
            for p in sections
            for r in p["rows"]
            if r["commit"]
        ),
        key=lambda m: m["key"],
    )
    checks = [{"key": r["key"], "runs": r["checks"]} for p in sections for r in p["rows"] if len(r["checks"]) > 1]
    return render(
        "report.md.j2",
        status=terminal_status(every_state, waiting) if every_state else "complete",
        updated=time.strftime("%Y-%m-%d %H:%M:%S"),
        run_time=duration(run_seconds) if run_seconds is not None else "",
        total=len(every_state),
        counts={str(s): every_state.count(s) for s in STATES},
        plans=sections,
        merges=merges,
        checks=checks,
        spent=described(spent),
    )


def _sections(
    paths: Paths, plans: tuple[Plan, ...], recorded: dict[str, TaskState], with_notes: bool = True
) -> tuple[list[dict[str, Any]], Totals]:
    """Each approved plan: its rows (one per task), its notes (`with_notes`) and its status; and the usage."""
    sections, spent = [], Totals()
    for plan in plans:
        if not plan.approved:
            continue
        recorded_of = {t.id: recorded.get(plan.key(t.id)) or TaskState(plan.name, t.id) for t in plan.tasks}
        shown = {t.id: shown_state(recorded_of[t.id], t.text_hash) for t in plan.tasks}
        skips = skipped.skips(plan, shown)
        rows: list[dict[str, Any]] = []
        for task in plan.tasks:
            st, state, skip = recorded_of[task.id], shown[task.id], skips.get(task.id)
            used = task_totals(st)
            spent.merge(used)
            rows.append(
                {
                    "key": plan.key(task.id),
                    "title": _cell(task.title),
                    "state": state,
                    "shown": SKIPPED if skip else state,
                    "icon": SKIPPED_ICON if skip else STATES[state].icon,
                    "commit": st.merge_commit if state == State.DONE else "",
                    "files": _files(st.files) if state == State.DONE else "",
                    "reason": _cell(skip.reason if skip else _evidence(st, state)) + _pr_link(st),
                    "usage": described(used),
                    "checks": [_check(c) for c in st.checks],
                }
            )
        noted = agent_signals.notes_of(paths, ((plan.name, t.id) for t in plan.tasks)) if with_notes else {}
        notes = [
            {"key": plan.key(task.id), "attempt": n.get("attempt", "?"), "text": _cell(str(n.get("text", "")))}
            for task in plan.tasks
            for n in noted.get((plan.name, task.id), ())
        ]
        reviews = [
            {"key": plan.key(task.id), "round": r.round, "by": r.shown_by, "verdict": r.verdict, "text": _cell(r.text)}
            for task in plan.tasks
            for r in recorded_of[task.id].reviews
        ]
        status = terminal_status([r["state"] for r in rows], len(skips))
        sections.append(
            {
                "name": plan.name,
                "title": plan.title,
                "file": display_path(plan.path),
                "status": status,
                "rows": rows,
                "notes": notes,
                "reviews": reviews,
            }
        )
    return sections, spent


# How a run's last line names what its tasks came to, in this order.
_TALLIED = (
    ("done", "done"),
    ("failed", "failed"),
    ("blocked", "blocked"),
    ("too_big", "too big"),
    ("skipped", "skipped"),
    ("awaiting_human", "awaiting you"),
    ("paused", "paused"),
    ("planned", "not run"),
    ("in_progress", "running"),
)


def run_summary(
    paths: Paths,
    plans: tuple[Plan, ...],
    recorded: dict[str, TaskState],
    run_seconds: float,
    only: Collection[str] = (),
) -> str:
    """A `doit` run's last line: `run finished in 12m04s — 5 done, 1 failed, 2 skipped, 1
    awaiting you (`hive status`); report: .hive/report.md`. `only`: the task keys the run was
    asked for (`doit f:e`), whose tally it is; empty: every approved plan's."""
    sections, _ = _sections(paths, plans, recorded, with_notes=False)
    shown = [r["shown"] for p in sections for r in p["rows"] if not only or r["key"] in only]
    told = ", ".join(f"{shown.count(state)} {words}" for state, words in _TALLIED if shown.count(state))
    report = display_path(paths.report)
    return f"run finished in {duration(run_seconds)} — {told or 'no tasks'} (`hive status`); report: {report}"


def write_report(
    paths: Paths,
    plans: tuple[Plan, ...],
    recorded: dict[str, TaskState] | None = None,
    run_seconds: float | None = None,
) -> Path:
    atomic_write(paths.report, execution_report(paths, plans, recorded, run_seconds), durable=False)
    return paths.report


def _evidence(st: TaskState, state: str) -> str:
    text = st.reason
    if state == State.FAILED and st.output_tail:
        text += " — " + st.output_tail.strip().splitlines()[-1]
    return text


def _pr_link(st: TaskState) -> str:
    """Its pull request (pull-request mode), as a link: the forge's page for it."""
    if not st.pr or not st.pr_url.startswith(("https://", "http://")):
        return ""
    return f" ([PR #{st.pr}]({_cell(st.pr_url).replace(')', '%29').replace(' ', '%20')}))"


def _check(run: CheckRun) -> str:
    """One run of a task's checks: `passed on 3f2a9c1e04 in 1.2 s`, and the tasks of a batch it verified."""
    verdict = "passed" if run.passed else "failed"
    together = f" (a batch of {len(run.batch)}: {', '.join(run.batch)})" if run.batch else ""
    return f"{verdict} on {run.base[:10]} in {run.seconds:.1f} s{together}"


def _files(files: tuple[str, ...]) -> str:
    shown = ", ".join(files[:3])
    return f"{len(files)}: {shown}" + (" …" if len(files) > 3 else "") if files else "0"


def _cell(text: str) -> str:
    """One markdown table cell: one line, no pipes."""
    line = " ".join(text.split())
    return (line[:117] + "…" if len(line) > 120 else line).replace("|", "\\|")
