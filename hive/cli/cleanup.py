"""`hive cleanup`: remove what finished tasks left behind — worktrees and branches
of done tasks (only once git shows they are in main), clean worktrees of too_big
tasks, tmux sessions no running task uses, and (when no task runs) what the executor keeps
between runs: the Ray executor's actors on the nodes. Unmerged work goes only with --force."""

from __future__ import annotations

import argparse
from pathlib import Path

from hive import executors
from hive.adapters import git, worktrees
from hive.lifecycle import State
from hive.project import load_repo_config
from hive.store import names
from hive.store.files import HeldLock
from hive.store.paths import Paths, find_root
from hive.store.state import StateStore


def cleanup(root: Path, force: bool = False) -> list[str]:
    config = load_repo_config(root)
    executor = executors.executor(config.executor, config, root)
    paths = Paths(root)
    main = f"refs/heads/{config.main_branch}"
    done: list[str] = []
    states = StateStore(paths).read_all()
    running = set()
    for st in states.values():
        claim = HeldLock(paths.claim_lock(st.plan, st.id))
        if not claim.try_acquire():
            running.add(st.session)
            continue
        try:
            if st.state == State.IN_PROGRESS:
                running.add(st.session)
            elif st.state == State.DONE:
                kept = worktrees.remove_merged_leftovers(root, st, main)
                done += [f"{st.key}: {k}" for k in kept]
            elif st.state == State.TOO_BIG and st.worktree and Path(st.worktree).exists():
                why = (
                    worktrees.remove_if_clean(root, Path(st.worktree))
                    if not force
                    else worktrees.remove_any(root, Path(st.worktree))
                )
                done.append(f"{st.key}: " + (why or f"removed {st.worktree} (its branch {st.branch} keeps the work)"))
        finally:
            claim.release()
    for session in executor.names():
        if names.is_task_session(session) and session not in running:
            executor.agent(executors.AgentRef.named(root, session)).close()
            done.append(f"closed {executor.kind} session {session} (no task runs in it)")
    if not running:
        done += executor.tidy()
    if force:
        for path in worktrees.unused_worktrees(
            root, executor.worktree_base(root, config.worktree_base), states.values()
        ):
            worktrees.remove_any(root, path)
            done.append(f"removed leftover worktree {path} (--force)")
    git.worktree_prune(root)
    return done


def run(args: argparse.Namespace) -> int:
    for line in cleanup(find_root(), force=args.force) or ["nothing to clean up"]:
        print(f"hive: {line}")
    return 0
