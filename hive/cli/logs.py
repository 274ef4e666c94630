"""`hive logs`: a task's agent output."""

from __future__ import annotations

import argparse
import os

from hive.errors import HiveError
from hive.store.names import parse_key
from hive.store.paths import Paths, find_root


def run(args: argparse.Namespace) -> int:
    plan, task_id = parse_key(args.task)
    log = Paths(find_root()).log_file(plan, task_id)
    if not log.exists():
        raise HiveError(f"no log for {args.task} yet (it has not started)")
    argv = ["tail", "-n", str(args.lines), *(["-F"] if args.follow else []), str(log)]
    os.execvp(argv[0], argv)
    return 0
