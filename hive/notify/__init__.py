"""Notifications: each event a human should hear about during an unattended run
(a checkpoint or gate reached, an agent's question, a task failed for good, blocked or too big, a rate
limit, a budget, the end of the run; on request a task done and the start of a run)
as one JSON object, to each channel `[notify]` sets (hive.notifiers: a command's stdin,
a webhook), for the events `[notify] events` names.

- `events`  the payloads, and the exact command that answers each event
- `emit`    the calls the engine and the doit reporter make, one line per call site
"""

from __future__ import annotations

from hive.notify.emit import (
    pr_review,
    question,
    run_budget,
    run_finished,
    run_started,
    task_done,
    task_paused,
    task_stopped,
)

__all__ = [
    "pr_review",
    "question",
    "run_budget",
    "run_finished",
    "run_started",
    "task_done",
    "task_paused",
    "task_stopped",
]
