"""`hive answer <plan>:<ID> "text"`: a human answers the question a task's agent asked."""

from __future__ import annotations

import argparse

from hive.actions.answer import answer
from hive.cli.main import doit_hint
from hive.store.paths import find_root


def run(args: argparse.Namespace) -> int:
    root = find_root()
    answered = answer(root, args.task, " ".join(args.text).strip(), args.choice or "")
    for line in [answered.said, *([] if answered.delivered else doit_hint(root))]:
        print(f"hive: {line}")
    return 0
