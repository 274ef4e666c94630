"""Notifications: each event a human should hear about during an unattended run
(a checkpoint or gate reached, a task failed for good, blocked or too big, a rate
limit, a budget, the end of the run) as one JSON object, to `[notify] command` on
stdin and/or POSTed to `[notify] webhook`.

- `events`  the payloads, and the exact command that answers each event
- `send`    delivering one (bounded by timeouts; failures come back as lines, never raised)
- `emit`    the calls the engine and the doit reporter make, one line per call site
"""

from __future__ import annotations

from hive.notify.emit import run_budget, run_finished, task_held, task_paused

__all__ = ["run_budget", "run_finished", "task_held", "task_paused"]
