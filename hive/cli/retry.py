"""`hive retry`: re-open a task the human has looked at."""

from __future__ import annotations

import argparse

from hive.actions.retry import retry
from hive.cli.main import doit_hint
from hive.store.paths import find_root


def run(args: argparse.Namespace) -> int:
    root = find_root()
    for line in [*(retry(root, key, force=args.force) for key in args.task), *doit_hint(root)]:
        print(f"hive: {line}")
    return 0
