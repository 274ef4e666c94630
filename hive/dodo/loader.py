"""Plans → doit tasks. `dodo.py` hands over to `load_dodo`.

Each task is `<plan>:<ID>` (with a group task `<plan>`), ordered by the DAG, with
no file_dep and an `uptodate` callable that reads Hive's state: done means the
state says done *and* its merge commit is on main — so losing `.doit.db` re-runs
nothing, and editing a task's text re-opens only that task.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from doit.exceptions import InvalidDodoFile

from hive import crashsafe
from hive.adapters import git
from hive.engine.task import Job
from hive.errors import HiveError
from hive.plan.cache import PlanSet, load_plans
from hive.plan.parser import Plan, Task
from hive.settings.config import Config, load_repo_config
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState, shown_state

NOTHING_TASK = "_hive"


@dataclass(frozen=True)
class Project:
    root: Path
    config: Config
    plans: PlanSet


def load_project(root: Path) -> Project:
    config = load_repo_config(root)
    paths = Paths(root)
    return Project(root, config, load_plans(paths.plans, config, paths.plan_cache))


class StateView:
    """Read-only view of every task's state, read once per process: `doit list
    --status` on 1,000 tasks costs one directory walk and one `git rev-list`."""

    def __init__(self, root: Path, main_branch: str) -> None:
        self.root = root
        self.main_ref = f"refs/heads/{main_branch}"
        self._states: dict[str, TaskState] | None = None
        self._on_main: set[str] | None = None

    def states(self) -> dict[str, TaskState]:
        if self._states is None:
            self._states = StateStore(Paths(self.root)).read_all()
        return self._states

    def get(self, key: str) -> TaskState | None:
        return self.states().get(key)

    def merged(self, commit: str) -> bool:
        if self._on_main is None:
            done = [s for s in self.states().values() if s.state == "done" and s.merge_commit]
            since = min((s.updated_at for s in done), default=0) - 86400
            self._on_main = git.first_parent_since(self.root, self.main_ref, since) if done else set()
        return commit in self._on_main or git.is_ancestor(self.root, commit, self.main_ref)

    def is_done(self, key: str, text_hash: str) -> bool:
        st = self.get(key)
        return bool(st and st.state == "done" and st.task_hash == text_hash and st.merge_commit
                    and self.merged(st.merge_commit))


class DoneCheck:
    """doit `uptodate` callable; its repr is what `doit info` shows for a pending task."""

    def __init__(self, view: StateView, key: str, text_hash: str) -> None:
        self.view, self.key, self.text_hash = view, key, text_hash

    def recorded_done(self) -> bool:
        """Done as far as the state files say (no git call): for summaries."""
        st = self.view.get(self.key)
        return bool(st and st.state == "done" and st.task_hash == self.text_hash)

    def __call__(self) -> bool:
        try:
            return self.view.is_done(self.key, self.text_hash)
        except Exception:  # noqa: BLE001 — an exception here would abort the whole doit run (exit 3)
            return False

    def __repr__(self) -> str:
        st = self.view.get(self.key)
        if st is None:
            return f"hive: {self.key} has not run yet"
        if st.state == "done" and st.task_hash != self.text_hash:
            return f"hive: {self.key} was done, but its text in the plan changed"
        if st.state == "done":
            return f"hive: {self.key} was done, but its merge commit is not on main"
        return f"hive: {self.key} is {st.state}" + (f": {st.reason}" if st.reason else "")


class AllDone:
    """A plan's group task is up to date when every one of its tasks is."""

    def __init__(self, checks: tuple[DoneCheck, ...]) -> None:
        self.checks = checks

    def __call__(self) -> bool:
        return all(c() for c in self.checks)

    def __repr__(self) -> str:
        pending = [c.key for c in self.checks if not c()]
        return f"hive: not done yet: {', '.join(pending[:10])}" + (" …" if len(pending) > 10 else "")


def describe(plan: Plan, task: Task, view: StateView) -> str:
    """The doc line `doit list` shows: title and current state."""
    if not plan.approved:
        return f"{task.title}  [draft plan: hive approve {plan.path.parent.name}/{plan.path.name}]"
    st = view.get(f"{plan.name}:{task.id}")
    if st is None or st.state == "planned":
        state = "pending"
    elif shown_state(st, task.text_hash) == "planned":
        state = f"pending (changed since {st.state})"
    else:
        state = st.state + (f": {_short(st.reason)}" if st.reason and st.state != "done" else "")
    return f"{task.title}  [{state}]"


def generate_tasks(project: Project) -> Iterator[dict]:
    view = StateView(project.root, project.config.main_branch)
    for plan in project.plans.plans:
        checks = {t.id: DoneCheck(view, f"{plan.name}:{t.id}", t.text_hash) for t in plan.tasks}
        done = sum(c.recorded_done() for c in checks.values())
        summary = f"{done}/{len(checks)} done" if plan.approved else "draft"
        yield {"basename": plan.name, "name": None, "doc": f"plan: {plan.title}  [{summary}]",
               "uptodate": [AllDone(tuple(checks.values()))]}
        for task in project.plans.ordered(plan):
            yield {"basename": plan.name, "name": task.id,
                   "actions": [(run_task, [Job(project.root, plan, task, project.config)])],
                   "task_dep": [f"{plan.name}:{dep}" for dep in task.depends_on],
                   "uptodate": [checks[task.id]],
                   "doc": describe(plan, task, view)}
    yield {"basename": NOTHING_TASK, "actions": [_nothing_to_do], "doc": "no approved plan to run",
           "uptodate": [False]}


def run_task(job: Job) -> object:
    """The doit action; the runner (tmux, git, jinja) loads only when a task really runs,
    which keeps `doit list` fast."""
    from hive.engine.runner import run_doit_task
    return run_doit_task(job)


def _nothing_to_do() -> None:
    print("hive: no approved plan in plans/ — write one and run `hive approve plans/<file>.md`", file=sys.stderr)


def doit_config(project: Project | None) -> dict:
    from hive.dodo.reporter import HiveReporter
    approved = [p.name for p in project.plans.plans if p.approved] if project else []
    return {"backend": "sqlite3", "dep_file": ".doit.db", "reporter": HiveReporter,
            "default_tasks": approved or [NOTHING_TASK], "subtasks": True}


def load_dodo(dodo_file: str) -> dict:
    """What a dodo.py needs: DOIT_CONFIG and the task creator. Plan errors are raised
    from the creator as InvalidDodoFile, which doit prints without a traceback (exit 3)."""
    crashsafe.install_for_doit()
    _unmet_dependency_is_a_failure()
    root = Path(dodo_file).resolve().parent
    try:
        project: Project | None = load_project(root)
        error = None
    except HiveError as e:
        project, error = None, e
    if project:
        for warning in project.plans.warnings:
            print(f"hive: warning (draft plan, not loaded): {warning}", file=sys.stderr)

    def task_hive() -> Iterator[dict] | None:
        if project is None:
            problems = error.problems if error else ["unknown error"]
            raise InvalidDodoFile("bad plan or config — nothing was started:\n" + "\n".join(problems))
        return generate_tasks(project)

    task_hive.__doc__ = "Hive plans"
    return {"DOIT_CONFIG": doit_config(project), "task_hive": task_hive}


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


def _short(text: str, n: int = 60) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= n else line[: n - 1] + "…"
