"""`hive status`: every task's state and why (reports.status builds the records)."""

from __future__ import annotations

import argparse
import json

from hive.project import load_project
from hive.reports import status
from hive.store.paths import find_root


def run(args: argparse.Namespace) -> int:
    root = find_root()
    project = load_project(root, strict=False)
    rows = status.collect(root, project)
    found = status.discovered_items(root)
    errors = project.plans.errors
    if args.json:
        progress = status.plan_progress(rows)
        print(
            json.dumps(
                {
                    "counts": status.counts(rows),
                    "progress": {"done": progress.done, "total": progress.total},
                    "totals": status.totals(rows),
                    "tasks": [r.to_json() for r in rows],
                    "discovered": found,
                    "errors": list(errors),
                },
                indent=2,
            )
        )
    else:
        if errors:
            print(status.render_errors(errors))
        print(status.render(rows) if rows else "no plans yet: write one in plans/ (its format: docs/plans.md)")
        if found:
            print(status.render_discovered(found))
    return 0
