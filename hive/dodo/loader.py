"""Plans → doit tasks. `dodo.py` hands over to `load_dodo`.

Each task is `<plan>:<ID>` (with a group task `<plan>`), ordered by the DAG, with
no file_dep and an `uptodate` callable that reads Hive's state: done means the
state says done *and* its merge commit is on main — so losing `.doit.db` re-runs
nothing, and editing a task's text re-opens only that task.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from doit.exceptions import InvalidDodoFile

from hive import crashsafe, doitargs
from hive.dodo import commands, dispatch, workers
from hive.dodo.uptodate import AllDone, DoneCheck, describe
from hive.engine.job import Job
from hive.errors import HiveError
from hive.executors import capabilities
from hive.lifecycle import shown_state
from hive.output import say
from hive.plan.done import StateView
from hive.plan.model import Plan
from hive.project import Project, load_project
from hive.reports import skipped
from hive.store import usage
from hive.store.paths import DOIT_DB

NOTHING_TASK = "_hive"


def generate_tasks(project: Project, view: StateView | None = None) -> Iterator[dict[str, Any]]:
    if view is None:
        view = StateView(project.root, project.config.main_branch)
    for plan in project.plans.plans:
        checks = {t.id: DoneCheck(view, plan.key(t.id), t.text_hash) for t in plan.tasks}
        waits = _skipped(plan, view) if plan.approved else {}
        done = sum(c.recorded_done() for c in checks.values())
        summary = f"{done}/{len(checks)} done" if plan.approved else "draft"
        yield {
            "basename": plan.name,
            "name": None,
            "doc": f"plan: {plan.title}  [{summary}]",
            "uptodate": [AllDone(tuple(checks.values()))],
        }
        for n, task in enumerate(project.plans.ordered(plan)):
            dispatch.RANKS[plan.key(task.id)] = n  # its place in the order doit starts ready tasks
            yield {
                "basename": plan.name,
                "name": task.id,
                "actions": [(run_task, [Job(project.root, plan, task, project.config)])],
                "task_dep": [plan.key(dep) for dep in task.depends_on],
                "uptodate": [checks[task.id]],
                "doc": describe(plan, task, view, waits.get(task.id, "")),
            }
    yield {"basename": NOTHING_TASK, "actions": [_nothing_to_do], "doc": "no approved plan to run", "uptodate": [False]}


def _skipped(plan: Plan, view: StateView) -> dict[str, str]:
    """Task id -> why it does not run (it waits for a stopped task), for `doit list`."""
    shown = {t.id: shown_state(st, t.text_hash) for t in plan.tasks if (st := view.get(plan.key(t.id)))}
    return {task_id: skip.reason for task_id, skip in skipped.skips(plan, shown).items()}


def run_task(job: Job) -> object:
    """The doit action; the runner (tmux, git, jinja) loads only when a task really runs,
    which keeps `doit list` fast."""
    from hive.engine.runner import run_doit_task

    return run_doit_task(job)


def _nothing_to_do() -> None:
    say("no approved plan in plans/ — write one and run `hive approve plans/<file>.md`")


def doit_config(project: Project | None) -> dict[str, Any]:
    from hive.dodo.reporter import reporter_for

    approved = [p.name for p in project.plans.plans if p.approved] if project else []
    threads = {"par_type": "thread"} if project and capabilities(project.config.executor).threads_only else {}
    # unattended, a run that stopped every task at the first failure read as a stalled run (issue 23)
    keep_going = {"continue": True} if project is None or project.config.keep_going else {}
    return {
        "backend": "sqlite3",
        "dep_file": DOIT_DB,
        "reporter": reporter_for(project),
        "default_tasks": approved or [NOTHING_TASK],
        "subtasks": True,
        **threads,
        **keep_going,
    }


def _not_importing_from(root: Path) -> None:
    """doit put the dodo's folder first on sys.path (and `python -m doit` the working folder):
    a module an agent's merged commit left there (`networkx.py`, `sqlite3/`) would be imported
    with the user's rights by whatever Hive or doit imports later. A dodo.py of an older `hive
    init` did not take it off before importing Hive; this takes it off now."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != root]


def load_dodo(dodo_file: str) -> dict[str, Any]:
    """What a dodo.py needs: DOIT_CONFIG and the task creator. Plan errors are raised
    from the creator as InvalidDodoFile, which doit prints without a traceback (exit 3)."""
    crashsafe.install_for_doit()
    root = Path(dodo_file).resolve().parent
    _not_importing_from(root)
    workers.stop_safely()
    dispatch.keep_hives_order()
    commands.explained()
    _unmet_dependency_is_a_failure()
    _removals_commit_at_once()
    usage.mark_run_start()
    try:
        with _bulk_allocation():
            project: Project | None = load_project(root)
        error = None
    except HiveError as e:
        project, error = None, e
    if project:
        for warning in project.plans.warnings:
            say(f"warning (draft plan, not loaded): {warning}")
        for plan in project.plans.plans:
            for warning in plan.warnings:
                say(f"warning: {warning}")

    def task_hive() -> Iterator[dict[str, Any]] | None:
        if project is None:
            problems = error.problems if error else ["unknown error"]
            raise InvalidDodoFile("bad plan or config — nothing was started:\n" + "\n".join(problems))
        _workers_fit(project, sys.argv[1:])
        view = StateView(project.root, project.config.main_branch)
        _agents_can_start(project, view)
        return _built_in_bulk(generate_tasks(project, view))

    task_hive.__doc__ = "Hive plans"
    return {"DOIT_CONFIG": doit_config(project), "task_hive": task_hive}


@contextmanager
def _bulk_allocation() -> Iterator[None]:
    """Loading a plan and turning it into doit tasks makes tens of thousands of objects
    that live as long as the process: Python's cyclic GC would walk them all again and
    again while they are made (a third of a warm `doit list` of 10,000 tasks). Frozen
    afterwards, the collections of a long run skip them too."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.freeze()


def _built_in_bulk(tasks: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """doit turns each yielded dict into its Task while the generator waits, so both
    happen inside the scope."""
    with _bulk_allocation():
        yield from tasks


def _workers_fit(project: Project, argv: list[str]) -> None:
    """An executor whose client cannot be forked runs with worker threads; asking doit
    for worker processes would fail every task one by one, so it is refused up front."""
    if not capabilities(project.config.executor).threads_only:
        return
    if doitargs.parse(argv).parallel_type == "process":
        raise InvalidDodoFile(
            f'[executor] kind = "{project.config.executor}" runs doit\'s workers as threads (its client '
            f"cannot be forked): drop `-P process` (`doit -n N` uses threads with it)"
        )


def _agents_can_start(project: Project, view: StateView) -> None:
    """Before a run (not `doit list`), the cheap part of `hive doctor`: a missing
    agent program (or Claude Code as root without IS_SANDBOX) would otherwise fail
    every task it runs, one by one with retries, after making each one's worktree."""
    from hive.doctor import preflight
    from hive.forges import NO_TOKEN, token
    from hive.sandbox import policy

    if not preflight.runs_tasks(sys.argv[1:]):  # `doit list` works without the agents, and stays fast
        return
    refused, warnings = policy.preflight(project.config)  # checks run here; a Ray node checks its own
    if project.config.pr_mode and not token.find():  # no agent works on what could not be proposed
        refused = [*refused, NO_TOKEN]
    remote = capabilities(project.config.executor).remote_checkout
    if refused:
        raise InvalidDodoFile(preflight.message(refused))
    for warning in warnings:
        say(warning)
    if remote:  # `hive doctor` checks them on their hosts
        return
    from hive.doctor.profiles_used import pending

    problems = preflight.problems(project, sys.argv[1:], pending(view))
    if problems:
        raise InvalidDodoFile(preflight.message(problems))


def _unmet_dependency_is_a_failure() -> None:
    """SPEC: under `doit -c` a failed task gives exit 1. doit marks every task that
    depends on it — and the plan's group task — UnmetDependency, a TaskError, so the
    run would exit 2 as if a bug had happened. doit has no option for this: its
    runner's failure handler is wrapped so a dependency that did not run only keeps
    the exit code its failed dependency already set."""
    from doit import runner
    from doit.exceptions import UnmetDependency

    original = runner.Runner._handle_task_error
    if getattr(original, "hive_wrapped", False):
        return

    def handle(self: runner.Runner, node: object, base_fail: object) -> None:
        before = self.final_result
        original(self, node, base_fail)
        if isinstance(base_fail, UnmetDependency) and before != runner.SUCCESS:
            self.final_result = before

    handle.hive_wrapped = True  # type: ignore[attr-defined]
    runner.Runner._handle_task_error = handle


def _removals_commit_at_once() -> None:
    """doit's sqlite backend deletes a failed task's entry in a transaction it commits only when
    the run ends: a second `doit` on the repository (SPEC: two runs at once are safe) that fails
    a task of its own then waits on the lock for sqlite's 5 s and dies with "database is locked"
    (a traceback, exit 3: the soak's seed 62, two runs each holding a trapped task). Each removal
    is committed at once instead; the DB is a cache, as ever."""
    from doit.dependency import SqliteDB

    original = SqliteDB.remove
    if getattr(original, "hive_wrapped", False):
        return

    def remove(self: SqliteDB, task_id: str) -> None:
        original(self, task_id)
        self._conn.commit()

    remove.hive_wrapped = True  # type: ignore[attr-defined]
    SqliteDB.remove = remove
