"""Start-of-run reconcile, in doit's main process before any worker forks:
make the recorded state match reality, so nothing is shown as running that is
not, merged work leaves no worktrees behind, and crash leftovers are resumed or
reported with the command that cleans them."""

from __future__ import annotations

from pathlib import Path

from hive import doitargs, executors
from hive.adapters import git, worktrees
from hive.engine import slots, taskenv
from hive.errors import CommandError, HiveError, user_message
from hive.executors import AgentRef, Executor
from hive.executors.standing import Where, interrupted, next_step, standing
from hive.lifecycle import State
from hive.project import Project
from hive.settings.config import Config
from hive.store import names, usage
from hive.store.files import FileLock
from hive.store.paths import LOCAL_EXCLUDES, Paths
from hive.store.state import StateStore, TaskState


def start_run(project: Project, argv: list[str]) -> tuple[list[str], dict[str, TaskState]]:
    """Returns lines to tell the user, and every task's state as it is now."""
    root, config = project.root, project.config
    executor = executors.executor(config.executor, config, root)
    main = config.main_ref
    fetched = _fetched(root, config)
    head = git.try_rev_parse(root, main)
    if not head:
        warning = (
            fetched
            or f"warning: branch {config.main_branch!r} does not exist; set [merge] main_branch in .hive/config.toml"
        )
        return [warning], StateStore(project.paths).read_all()
    git.update_ref(root, "refs/hive/run-start", head)
    usage.record_run(project.paths)
    git.exclude_locally(root, LOCAL_EXCLUDES)  # repos set up by an older `hive init` ignored only .doit.db
    git.enable_worktree_config(str(root))  # once, here, before parallel workers would race for .git/config
    notes = []
    wanted = doitargs.parse(argv).processes
    if wanted > config.max_workers:
        notes.append(
            f"doit -n {wanted}, but [parallel] max_workers = {config.max_workers}: at most "
            f"{config.max_workers} agents run at once (the others wait for a free slot)"
        )
    paths = project.paths
    sessions = set(executor.names())
    branches = git.branches(root, "hive/")
    git.worktree_prune(root)
    # what a kill left of a spare checkout is settled first: a spare left on a task's branch
    # would keep that branch from being deleted below
    base = executor.worktree_base(root, config.worktree_base)
    notes += slots.idle_spares(paths, base, lambda spare: worktrees.settle_spare(root, spare))
    store = StateStore(paths)
    states = store.read_all()
    for st in list(states.values()):
        if not _worth_a_look(st, sessions, branches):
            continue
        try:
            notes += _reconcile_task(paths, config, executor, st, sessions, branches)
        except (HiveError, CommandError) as e:  # one task's trouble must not stop the run
            notes.append(f"{st.key}: could not check it before the run: {user_message(e)}")
        states[st.key] = store.read(st.plan, st.id)  # as reconciling left it
    notes += _leftovers(root, config, executor, states, sessions)
    return notes, states


def _fetched(root: Path, config: Config) -> str:
    """PR mode: the forge's base fetched, which tasks start from ("" when it was; else why not)."""
    if not config.pr_mode:
        return ""
    from hive.engine.merge.forge import fetch_base  # pull-request mode only

    try:  # as a merge fetches it: one process at a time (two doits started at once race for the ref)
        fetch_base(root, config.forge_remote, config.base_branch, Paths(root).merge_lock)
    except CommandError as e:
        return (
            f"warning: could not fetch {config.base_branch!r} from {config.forge_remote!r}: {e.output.strip()[-300:]}"
        )
    return ""


def _worth_a_look(st: TaskState, sessions: set[str], branches: set[str]) -> bool:
    """Whether a task's record may need reconciling: a finished task whose session,
    worktree and branches are all gone (most of a long plan's tasks) needs nothing,
    and costs no lock and no git call."""
    if st.state == State.IN_PROGRESS or st.session in sessions:
        return True
    if st.state != State.DONE:
        return False
    if st.worktree and Path(st.worktree).exists():
        return True
    return bool(({h.get("branch", "") for h in st.history} | {st.branch}) & branches)


def _reconcile_task(
    paths: Paths, config: Config, executor: Executor, st: TaskState, sessions: set[str], branches: set[str]
) -> list[str]:
    claim = FileLock(paths.claim_lock(st.plan, st.id))
    if not claim.try_acquire():
        return (
            [f"{st.key}: being run by another doit (pid {claim.holder()}); this run waits for it"]
            if st.state == State.IN_PROGRESS
            else []
        )
    try:
        st = StateStore(paths).read(st.plan, st.id)  # re-read now that nobody else can change it
        if st.state == State.IN_PROGRESS:
            return [_in_progress(paths, config, executor, st)]
        if st.state == State.DONE:
            if st.session in sessions:
                executor.agent(AgentRef.of(paths.root, st)).close()
            said: list[str] = []  # the teardown's warnings, told with the run's other notes
            down = taskenv.teardown(config, paths.root, st.plan, st.id, said.append)
            main = f"refs/heads/{config.main_branch}"
            left = worktrees.remove_merged_leftovers(paths.root, st, main, branches, down)
            said += [f"{st.key}: {k}" for k in left.notes]
            new = [b for b in left.branches if b not in st.kept_branches]
            if new:  # said once, not at every run
                said.append(f"{st.key}: {worktrees.superseded_note(new, main)}")
            if tuple(left.branches) != st.kept_branches:
                StateStore(paths).update(st.plan, st.id, expect=(State.DONE,), kept_branches=tuple(left.branches))
            return said
        if st.session in sessions:  # the terminal of a finished attempt, kept only for its last words
            executor.agent(AgentRef.of(paths.root, st)).close()
        return []
    finally:
        claim.release()


def _in_progress(paths: Paths, config: Config, executor: Executor, st: TaskState) -> str:
    where = standing(paths, executor, st)
    if where.kind == Where.GONE:
        interrupted(paths, executor, st, config.stop_patience, lambda _line: None)
    return f"{st.key}: {next_step(where, st.session, executor.kind, by='this run')}"


def _leftovers(
    root: Path, config: Config, executor: Executor, states: dict[str, TaskState], sessions: set[str]
) -> list[str]:
    notes = []
    for path in worktrees.unused_worktrees(root, executor.worktree_base(root, config.worktree_base), states.values()):
        state = worktrees.health(path)
        if state == worktrees.UNFINISHED:  # a half-made worktree holds no work
            notes.append(worktrees.repair(root, path, state))
        else:
            notes.append(f"leftover worktree {path} (no task uses it): inspect it, then `git worktree remove {path}`")
    known = {st.session for st in states.values()}
    for s in sorted(sessions):
        if names.is_task_session(s) and s not in known:
            argv = executor.agent(AgentRef.named(root, s)).attach_argv()  # none for an attempt no node holds
            look = f"look with `{' '.join(argv)}`, " if argv else ""
            notes.append(f"leftover {executor.kind} session {s} (no task uses it): {look}end it with `hive cleanup`")
    return notes
