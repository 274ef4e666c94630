"""`hive attach`: the user's terminal on a running agent, through its executor."""

from __future__ import annotations

import argparse

from hive import executors
from hive.errors import HiveError
from hive.lifecycle import State
from hive.project import load_repo_config
from hive.store.names import parse_key
from hive.store.paths import Paths, find_root
from hive.store.state import StateStore


def run(args: argparse.Namespace) -> int:
    plan, task_id = parse_key(args.task)
    root = find_root()
    st = StateStore(Paths(root)).read(plan, task_id)
    config = load_repo_config(root)
    executor = executors.executor(config.executor, config, root)
    if st.state != State.IN_PROGRESS or st.session not in executor.names():
        raise HiveError(f"{args.task} has no running agent (it is {st.state}); see `hive logs {args.task}`")
    return executor.agent(executors.AgentRef.of(root, st)).attach(replace_process=True)
