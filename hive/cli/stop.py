"""`hive stop [task]`: stop running agents in stages, saying each step."""

from __future__ import annotations

import argparse

from hive.actions.stop import stop
from hive.store.paths import find_root


def run(args: argparse.Namespace) -> int:
    count = stop(find_root(), args.task, lambda line: print(f"hive: {line}", flush=True))
    if not count:
        print("hive: no agent is running")
    return 0
