"""`hive cleanup`: remove what finished tasks left behind — worktrees and branches
of done tasks (only once git shows they are in main), clean worktrees of too_big
tasks, the workers' spare checkouts, tmux sessions no running task uses, and (when no task runs) what the executor keeps
between runs: the Ray executor's actors on the nodes. Unmerged work goes only with --force.
`[worktrees] teardown` runs in each task's worktree before it goes."""

from __future__ import annotations

import argparse
from pathlib import Path

from hive import executors
from hive.adapters import git, worktrees
from hive.engine import slots, taskenv
from hive.executors import Executor
from hive.lifecycle import State
from hive.project import load_repo_config
from hive.settings.config import Config
from hive.store import names
from hive.store.files import FileLock
from hive.store.paths import Paths, find_root
from hive.store.state import StateStore, TaskState


def cleanup(root: Path, force: bool = False) -> list[str]:
    config = load_repo_config(root)
    executor = executors.executor(config.executor, config, root)
    paths = Paths(root)
    done: list[str] = []
    states = StateStore(paths).read_all()
    running = set()
    for st in states.values():
        claim = FileLock(paths.claim_lock(st.plan, st.id))
        if not claim.try_acquire():
            running.add(st.session)
            continue
        try:
            if st.state == State.IN_PROGRESS:
                running.add(st.session)
            else:
                done += _finished(root, config, st, force)
        finally:
            claim.release()
    for session in executor.names():
        if names.is_task_session(session) and session not in running:
            executor.agent(executors.AgentRef.named(root, session)).close()
            done.append(f"closed {executor.kind} session {session} (no task runs in it)")
    if not running:
        done += executor.tidy()
    done += _spares(root, paths, executor.worktree_base(root, config.worktree_base))
    if force:
        done += _leftovers(root, config, executor, list(states.values()), running)
    git.worktree_prune(root)
    return done


def _spares(root: Path, paths: Paths, base: Path) -> list[str]:
    """The checkouts workers keep for their next task (`[worktrees] reuse`): they hold nothing but
    what main has, and go unless their worker runs now (it may be taking its spare)."""

    def remove(path: Path) -> str:
        return worktrees.remove_any(root, path) or f"removed {path} (a worker's spare checkout, kept for its next task)"

    return slots.idle_spares(paths, base, remove)


def _finished(root: Path, config: Config, st: TaskState, force: bool) -> list[str]:
    """What a finished task left: a done task's worktree and branches (once in main), a too_big
    task's worktree (if clean, or --force). Its teardown runs as a run's would, in the checks'
    sandbox if the project sandboxes (engine.taskenv: the config says so, no run is needed)."""
    said: list[str] = []
    down = taskenv.teardown(config, root, st.plan, st.id, said.append)
    if st.state == State.DONE:
        main = f"refs/heads/{config.main_branch}"
        left = worktrees.remove_merged_leftovers(root, st, main, teardown=down)
        gone = worktrees.delete_superseded(root, st, main, force) if left.branches else []
        return said + [f"{st.key}: {k}" for k in (*left.notes, *gone)]
    if st.state == State.TOO_BIG and st.worktree and Path(st.worktree).exists():
        remove = worktrees.remove_any if force else worktrees.remove_if_clean
        why = remove(root, Path(st.worktree), down)
        return said + [f"{st.key}: " + (why or f"removed {st.worktree} (its branch {st.branch} keeps the work)")]
    return []


def _leftovers(root: Path, config: Config, executor: Executor, states: list[TaskState], running: set[str]) -> list[str]:
    """--force: worktrees no unfinished task records go, whatever they hold. One Hive made for a
    task (its name says whose) is torn down first, unless that task runs now: its running
    attempt shares its Compose project, whose services a teardown here would stop."""
    said: list[str] = []
    for path in worktrees.unused_worktrees(root, executor.worktree_base(root, config.worktree_base), states):
        owner = next((st for st in states if names.worktree_owner(path.name, st.plan, st.id)), None)
        down = None
        if owner is not None and owner.session not in running:
            down = taskenv.teardown(config, root, owner.plan, owner.id, said.append)
        worktrees.remove_any(root, path, down)
        said.append(f"removed leftover worktree {path} (--force)")
    return said


def run(args: argparse.Namespace) -> int:
    for line in cleanup(find_root(), force=args.force) or ["nothing to clean up"]:
        print(f"hive: {line}")
    return 0
