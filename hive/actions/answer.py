"""A human answers the question a task's agent asked (`hive answer`, the dashboard's answer form)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from hive.store import questions
from hive.store.names import parse_key
from hive.store.paths import Paths

DELIVERY_PATIENCE = 3.0  # a waiting `hive ask` looks twice a second


@dataclass(frozen=True)
class Answered:
    said: str
    delivered: bool  # its waiting agent has it; else its next attempt, in a `doit` run, starts with it


def answer(root: Path, key: str, text: str, choice: str = "") -> Answered:
    plan, task_id = parse_key(key)
    paths = Paths(root)
    q = questions.answer(paths, plan, task_id, text, choice)
    deadline = time.time() + DELIVERY_PATIENCE
    while time.time() < deadline:
        if any(a.number == q.number and a.delivered for a in questions.load(paths, plan, task_id)):
            return Answered(f"{key}: its agent has your answer and goes on", True)
        time.sleep(0.1)
    return Answered(
        f"{key}: answer recorded; its agent is not waiting any more, so its next attempt starts with every "
        f"question and answer of the task (run `doit` if no run is going on)",
        False,
    )
