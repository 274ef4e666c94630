"""What one doit task carries: built by the dodo loader for every task of a plan, so
it imports nothing heavy (`doit list` on a long plan builds 10,000 of them)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from hive.plan.model import Plan, Task
from hive.settings.config import Config
from hive.store import names


class Job(NamedTuple):
    """Everything one doit task needs; built by the compiler, never re-parsed (a tuple:
    `doit list` makes one per task, and a frozen dataclass costs 3× as much to make)."""

    root: Path
    plan: Plan
    task: Task
    config: Config

    @property
    def key(self) -> str:
        return names.task_key(self.plan.name, self.task.id)
