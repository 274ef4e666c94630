"""`hive changes`: a reviewer agent's verdict that the change must change (`hive changes --reason
"…"`, from its session), or a human's review of a task waiting for one (`hive changes plan:ID
--reason "…"`)."""

from __future__ import annotations

import argparse
import os

from hive import agentshim
from hive.actions.review import send_back
from hive.cli.main import doit_hint
from hive.errors import HiveError
from hive.lifecycle import Kind
from hive.store import agent_signals
from hive.store.paths import find_root


def run(args: argparse.Namespace) -> int:
    if args.task:
        root = find_root()
        for line in [send_back(root, args.task, args.reason), *doit_hint(root)]:
            print(f"hive: {line}")
        return 0
    if not os.environ.get(agent_signals.REVIEW_VARIABLE):
        raise HiveError(
            "`hive changes` without a task is a reviewer's verdict, and this is no review's session; "
            'to send a task back yourself: hive changes <plan>:<ID> --reason "what must change"'
        )
    who = agent_signals.AgentIdentity.from_env()
    sent = agent_signals.send(who, Kind.CHANGES, args.reason)
    print(agentshim.said(who.key, "changes", who.attempt, sent))
    return 0
