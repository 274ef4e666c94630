"""`hive approve`: approve a plan file, or answer a checkpoint, a gate or a review."""

from __future__ import annotations

import argparse
from pathlib import Path

from hive.actions.approve import approve_plan, approve_task
from hive.cli.main import doit_hint
from hive.errors import HiveError
from hive.project import load_repo_config
from hive.store.paths import find_root


def run(args: argparse.Namespace) -> int:
    root = find_root()
    if args.target.endswith(".md") or Path(args.target).is_file():
        if args.choice or args.done or args.reject is not None or args.task:
            raise HiveError("--choice, --done, --reject and --task answer a checkpoint (plan:ID), not a plan file")
        lines = approve_plan(Path(args.target).resolve(), load_repo_config(root))
    else:
        lines = [approve_task(root, args.target, args.choice, args.done, args.reject, args.task)]
    for line in lines + doit_hint(root):
        print(f"hive: {line}")
    return 0
