"""`hive doctor`: check what the approved plans need — git, tmux, the git identity,
the main branch and checkout, and each agent profile's binary, version, root/sandbox,
credentials and first-run files (on every node that runs agents, with a remote executor).
Exit 1 if any check fails (warnings do not)."""

from __future__ import annotations

import argparse
import json

from hive.checks import FAIL, OK, WARN
from hive.doctor.diagnose import diagnose
from hive.store.paths import find_root


def run(args: argparse.Namespace) -> int:
    root = find_root()
    checks = diagnose(root)
    failed = any(c.failed for c in checks)
    if args.json:
        print(json.dumps({"root": str(root), "ok": not failed, "checks": [c.to_json() for c in checks]}, indent=2))
        return 1 if failed else 0
    print(f"hive doctor: {root}")
    for check in checks:
        print("\n".join(check.lines()))
    counts = {s: sum(c.status == s for c in checks) for s in (OK, WARN, FAIL)}
    print(f"{counts[OK]} passed, {counts[WARN]} warnings, {counts[FAIL]} failed")
    return 1 if failed else 0
