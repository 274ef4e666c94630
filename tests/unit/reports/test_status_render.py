"""`hive status`'s headline: the same progress a checkpoint report shows."""

from __future__ import annotations

from hive.lifecycle import progress
from hive.reports.status import TaskStatus, plan_progress, render


def row(plan: str, task_id: str, state: str, kind: str = "auto", draft: bool = False) -> TaskStatus:
    return TaskStatus(plan, task_id, f"task {task_id}", state, draft=draft, type=kind)


def test_progress_counts_the_plans_tasks_and_not_its_gates():
    shown = progress(
        [("auto", "done"), ("gate", "done"), ("checkpoint:decision", "awaiting_human"), ("script", "planned")]
    )
    assert (shown.done, shown.total, str(shown)) == (1, 3, "1/3")


def test_status_headline_counts_approved_plans_without_gates_and_each_plan_when_several():
    rows = [
        row("auth", "1", "done"),
        row("auth", "_gate-1", "done", kind="gate"),
        row("auth", "2", "awaiting_human", kind="checkpoint:human-verify"),
        row("auth", "3", "planned"),
        row("billing", "1", "done"),
        row("ideas", "1", "planned", draft=True),
    ]
    assert str(plan_progress(rows)) == "2/4"
    headline = render(rows).splitlines()[0]
    assert headline.endswith("] 2/4 done  1 awaiting_human  1 planned  (auth 1/3, billing 1/1)"), headline
    assert "ideas:1       planned (draft) task 1" in render(rows), "a draft's tasks are still listed"


def test_status_headline_with_only_draft_plans_says_how_to_run_one():
    assert render([row("ideas", "1", "planned", draft=True)]).startswith("no approved plan: `hive approve plans/")
