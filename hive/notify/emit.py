"""Where the engine and the reporter call in: one call per event. Nothing here
may fail a task or a run — a notification that does not arrive is a warning on
stderr and a line in `.hive/hive.log`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hive.buglog import record_bug, record_warning
from hive.notifiers import deliver
from hive.notify import events
from hive.output import say
from hive.settings.config import Config
from hive.store import names, questions, usage
from hive.store.paths import Paths
from hive.store.questions import Question
from hive.store.state import TaskState

if TYPE_CHECKING:
    from hive.engine.task import TaskContext
    from hive.project import Project


def task_stopped(h: TaskContext, st: TaskState) -> None:
    """The run stops at this task: failed for good, blocked, too big, over its budget,
    or waiting for a human (a checkpoint, a gate, a review)."""
    event = events.held_event(h.task, st, h.cfg.budget_task_usd)
    if event == events.QUESTION:
        asked = questions.waiting(questions.load(h.paths, h.plan_name, h.task.id))
        if asked is not None:
            question(h, asked)
        return
    if event and _wanted(h.cfg, event):
        _send(h.cfg, h.paths, events.task_payload(event, h.root, h.job.plan, h.task, st))


def question(h: TaskContext, asked: Question) -> None:
    """A task's agent asks its human: said once per question, by whichever process sees
    it first (the run watching the agent, or the one that finds it ended)."""
    marker = f"question-{names.stem(h.plan_name, h.task.id)}-{asked.number}-{asked.asked_at:.0f}"
    if _wanted(h.cfg, events.QUESTION) and _first_time(h.paths, marker):
        _send(h.cfg, h.paths, events.question_payload(h.root, h.job.plan, h.task, h.read(), asked))


def task_done(h: TaskContext, st: TaskState) -> None:
    """The task's work is merged into main (off unless `[notify] events` asks for it)."""
    if _wanted(h.cfg, events.TASK_DONE):
        show = f"git show {st.merge_commit[:10]}" if st.merge_commit else events.STATUS
        _send(h.cfg, h.paths, events.task_payload(events.TASK_DONE, h.root, h.job.plan, h.task, st, show))


def pr_review(h: TaskContext, st: TaskState) -> None:
    """The task's pull request waits for a person's review on the forge: said once per PR."""
    if _wanted(h.cfg, events.PR_REVIEW) and _first_time(h.paths, f"pr-{names.stem(h.plan_name, h.task.id)}-{st.pr}"):
        _send(h.cfg, h.paths, events.task_payload(events.PR_REVIEW, h.root, h.job.plan, h.task, st, st.pr_url))


def task_paused(h: TaskContext, st: TaskState) -> None:
    """A rate limit paused the task; the run goes on by itself at its resume time."""
    if _wanted(h.cfg, events.PAUSED):
        _send(h.cfg, h.paths, events.task_payload(events.PAUSED, h.root, h.job.plan, h.task, st, events.STATUS))


def run_budget(h: TaskContext, reason: str) -> None:
    """The run's `[budget] run_usd` is spent: said once per run, though every task
    that is not started any more passes here."""
    if not _wanted(h.cfg, events.BUDGET) or not _first_time(h.paths, f"budget-{usage.run_started():.3f}"):
        return
    payload = events.task_payload(events.BUDGET, h.root, h.job.plan, h.task, h.read(), events.STATUS, reason)
    _send(h.cfg, h.paths, payload)


def run_started(project: Project, states: Mapping[str, TaskState]) -> None:
    """A `doit` run that runs tasks began (off unless `[notify] events` asks for it)."""
    if _wanted(project.config, events.RUN_STARTED):
        _send(project.config, project.paths, events.run_started_payload(project.root, project.plans.plans, states))


def run_finished(project: Project, states: Mapping[str, TaskState]) -> None:
    """A `doit` run ended: every approved plan's tasks counted by state."""
    if _wanted(project.config, events.RUN_FINISHED):
        payload = events.run_finished_payload(project.root, project.plans.plans, states)
        _send(project.config, project.paths, payload)


def _wanted(config: Config, event: str) -> bool:
    """A channel is set, and `[notify] events` names the event."""
    return any(config.notify.values()) and event in config.notify_events


def _first_time(paths: Paths, name: str) -> bool:
    """True for the first caller across this run's processes (a marker file made with O_EXCL)."""
    marker = paths.notified(name)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    except OSError:
        pass  # better said twice than never
    return True


def _send(config: Config, paths: Paths, payload: dict[str, Any]) -> None:
    title = f"notify {payload['event']} {payload['task']}".rstrip()
    try:
        problems = deliver(payload, paths.root, config.notify)
    except Exception as e:  # noqa: BLE001 — a bug here must not fail the task being reported on
        problems = [f"internal error while notifying: {e!r} ({record_bug(paths.debug_log, title)})"]
    for problem in problems:
        record_warning(paths.debug_log, title, problem)
        say(f"warning: {problem}")
