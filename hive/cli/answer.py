"""`hive answer <plan>:<ID> "text"`: a human answers the question a task's agent asked."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hive.cli.main import doit_hint
from hive.store import questions
from hive.store.names import parse_key
from hive.store.paths import Paths, find_root

DELIVERY_PATIENCE = 3.0  # a waiting `hive ask` looks twice a second


def answer(root: Path, key: str, text: str, choice: str = "") -> list[str]:
    plan, task_id = parse_key(key)
    paths = Paths(root)
    q = questions.answer(paths, plan, task_id, text, choice)
    deadline = time.time() + DELIVERY_PATIENCE
    while time.time() < deadline:
        if any(a.number == q.number and a.delivered for a in questions.load(paths, plan, task_id)):
            return [f"{key}: its agent has your answer and goes on"]
        time.sleep(0.1)
    return [
        f"{key}: answer recorded; its agent is not waiting any more, so its next attempt starts with every "
        f"question and answer of the task (run `doit` if no run is going on)",
        *doit_hint(root),
    ]


def run(args: argparse.Namespace) -> int:
    for line in answer(find_root(), args.task, " ".join(args.text).strip(), args.choice or ""):
        print(f"hive: {line}")
    return 0
