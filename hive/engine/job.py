"""What one doit task carries: built by the dodo loader for every task of a plan, so
it imports nothing heavy (`doit list` on a long plan builds 10,000 of them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hive.plan.model import Plan, Task
from hive.settings.config import Config
from hive.store import names


@dataclass(frozen=True)
class Job:
    """Everything one doit task needs; built by the compiler, never re-parsed."""

    root: Path
    plan: Plan
    task: Task
    config: Config

    @property
    def key(self) -> str:
        return names.task_key(self.plan.name, self.task.id)
