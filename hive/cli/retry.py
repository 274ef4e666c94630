"""`hive retry`: re-open a task the human has looked at."""

from __future__ import annotations

import argparse

from hive.actions.retry import retry
from hive.cli.main import doit_hint
from hive.store.paths import find_root


def run(args: argparse.Namespace) -> int:
    root = find_root()
    for line in [retry(root, args.task, force=args.force), *doit_hint(root)]:
        print(f"hive: {line}")
    return 0
