"""The plan as records: frozen `Plan` and `Task`, built by the parser, never changed."""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from hive.lifecycle import TaskType
from hive.store.names import task_key

TYPES = tuple(t for t in TaskType if t is not TaskType.GATE)  # what a plan may say (gates Hive adds)
NO_REVIEW = "none"  # `**Review:** none` (or `review: none`): not reviewed, whatever the plan or the config say


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    line: int
    type: TaskType = TaskType.AUTO
    depends_on: tuple[str, ...] = ()
    acceptance: str = ""
    verify: str = ""
    files: tuple[str, ...] = ()
    module: str = ""
    parallel_safe: bool = True
    priority: int = 0
    agent: str = ""
    review: str = ""  # `**Review:**`: the profile of the agent that reviews its change ("none": no review)
    timeout: float | None = None
    options: tuple[str, ...] = ()
    discovered_from: str = ""
    description: str = ""
    script: str = ""
    hard_stop: bool = False
    field_lines: tuple[tuple[str, int], ...] = ()
    # the section's last line (1-based): the task is lines `line`..`end` of its file, so a
    # change to one task (`hive plan --split`) can splice the text and keep every other byte
    end: int = 0

    @functools.cached_property
    def text_hash(self) -> str:
        """What makes a changed task pending again: its own words, not its wiring."""
        material = [self.title, self.type, _hash_form(self.description), self.acceptance, self.verify]
        return hashlib.sha256(json.dumps(material).encode()).hexdigest()[:16]

    @property
    def is_checkpoint(self) -> bool:
        """Waits for a human: a checkpoint task, or a synthetic gate (hive.gates)."""
        return TaskType(self.type).is_checkpoint

    def line_of(self, field_name: str) -> int:
        return dict(self.field_lines).get(field_name, self.line)


def _hash_form(text: str) -> str:
    """The description as hashes were made of it before descriptions kept their blank
    lines: runs of blank lines as one, no surrounding whitespace. A Hive upgrade never
    re-opens finished tasks."""
    kept: list[str] = []
    for line in text.splitlines():
        if line.strip() or not kept or kept[-1].strip():
            kept.append(line)
    return "\n".join(kept).strip()


@dataclass(frozen=True)
class Plan:
    name: str
    path: Path
    status: str
    agent: str
    title: str
    context: str
    tasks: tuple[Task, ...] = field(default=())
    warnings: tuple[str, ...] = ()  # file:line: what looks wrong but is valid (shown, never fatal)
    review: str = ""  # front matter `review:`: the reviewer profile of its tasks ("none": no review)
    issues: str = ""  # front matter `issues:`: drafted from the forge's issues by this query; each task ID an issue

    @property
    def approved(self) -> bool:
        return self.status == "approved"

    def task(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)

    def key(self, task_id: str) -> str:
        """A task's `<plan>:<ID>`: its doit name, and what users type."""
        return task_key(self.name, task_id)
