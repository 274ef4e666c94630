"""`hive plan --split <plan>:<ID>`: the planner agent (as `hive plan` starts it) writes
the tasks that replace a too_big task; Hive puts them into the plan in its place
(hive.plan.split), rewires its dependents and sets the plan back to draft.

Run again, it goes back to a planner still running for that task, or applies the tasks
a planner already wrote (the user may have fixed them by hand)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from hive.cli.planner import PlanningSession, ended, interact, last_words, launch
from hive.errors import HiveError
from hive.executors import LOCAL
from hive.lifecycle import State
from hive.plan import split
from hive.plan.parser import parse_plan
from hive.project import Project, load_project
from hive.render import fence, render
from hive.store import names
from hive.store.files import atomic_write
from hive.store.names import parse_key
from hive.store.paths import Paths, find_root
from hive.store.state import StateStore


@dataclass(frozen=True)
class Target:
    """The too_big task to split, and the files of its planning session."""

    root: Path
    key: str
    plan_file: Path
    task_id: str

    @property
    def slug(self) -> str:
        plan, _ = parse_key(self.key)
        return f"split-{names.stem(plan, self.task_id)}"

    @property
    def tasks_file(self) -> Path:
        return Paths(self.root).planning_file(self.slug, "tasks")

    def shown(self, path: Path) -> Path:
        return path.relative_to(self.root)


def find(project: Project, key: str) -> Target:
    """The task `key`, if it exists and an agent said it is too big."""
    plan_name, task_id = parse_key(key)
    plan = project.plans.plan(plan_name)
    if task_id not in {t.id for t in plan.tasks}:
        raise HiveError(f"plan {plan_name} has no task {task_id!r}; its tasks: {', '.join(t.id for t in plan.tasks)}")
    st = StateStore(project.paths).read(plan_name, task_id)
    if st.state != State.TOO_BIG:
        raise HiveError(
            f"{key} is {st.state}: `hive plan --split` is for a task an agent said is too big (too_big); "
            f"to split another task, edit {plan.path.relative_to(project.root)} by hand"
        )
    return Target(project.root, key, plan.path, task_id)


def start(target: Target, project: Project) -> PlanningSession:
    """Write the brief and start the planner (after removing what an earlier session left)."""
    paths = Paths(target.root)
    plan_name, task_id = parse_key(target.key)
    st = StateStore(paths).read(plan_name, task_id)
    plan, _ = parse_plan(target.plan_file)
    task = plan.task(task_id)
    section = "\n".join(target.plan_file.read_text(encoding="utf-8").splitlines()[task.line - 1 : task.end]).strip()
    first, second = split.new_ids(task_id, 2)
    paths.planning_file(target.slug, "proposed").unlink(missing_ok=True)
    atomic_write(
        paths.planning_file(target.slug, "brief"),
        render(
            "splitting.md.j2",
            key=target.key,
            task_id=task_id,
            plan_file=target.shown(target.plan_file),
            root=target.root,
            reason=st.reason.removeprefix("too big: "),
            branch=st.branch,
            fragment=target.shown(target.tasks_file),
            section=section,
            fence=fence(section),  # the task's own code blocks stay inside it
            first=first,
            second=second,
            depends_on=task.depends_on,
            dependents=[t.id for t in plan.tasks if task_id in t.depends_on],
        ),
    )
    prompt = (
        f"Read {paths.planning_file(target.slug, 'brief')} and follow it: split task {target.key} "
        f"into smaller tasks with me and write them to {target.shown(target.tasks_file)}."
    )
    return launch(target.root, target.slug, target.tasks_file, prompt, project.config)


def running(target: Target, project: Project) -> PlanningSession | None:
    """The planner of an earlier `hive plan --split` of this task, if it still runs."""
    paths = Paths(target.root)
    profile = project.config.agents[project.config.planner]
    s = PlanningSession(
        target.root,
        target.slug,
        target.tasks_file,
        f"hive-plan-{target.slug}",
        paths.planning_file(target.slug, "brief"),
        LOCAL,
        profile.stall_patterns,
    )
    return s if s.running() else None


def finish(target: Target, project: Project, s: PlanningSession | None) -> list[str]:
    """Apply what the planner wrote; lines for the user, or HiveError."""
    shown = target.shown(target.tasks_file)
    if s is not None and s.running():
        return [
            f"the planning agent is still running (`{' '.join(s.agent().attach_argv())}` to go back to it); "
            f"when it has written {shown}, run `hive plan --split {target.key}` again to put its tasks in the plan"
        ]
    if s is not None:
        s.agent().close()
        if not target.tasks_file.exists():
            raise HiveError(
                f"the planning agent {ended(target.root, s)} without writing {shown}", *last_words(target.root, s)
            )
    proposed = Paths(target.root).planning_file(target.slug, "proposed")
    try:
        result = split.apply(target.plan_file, target.task_id, target.tasks_file, project.config, proposed)
    except HiveError as e:
        raise HiveError(
            *e.problems,
            f"{target.shown(target.plan_file)} is unchanged; fix the tasks in {shown} and run "
            f"`hive plan --split {target.key}` again to put them in, or delete {shown} to ask the planning agent again",
        ) from None
    target.tasks_file.unlink()  # it is in the plan now: a later split of this ID starts afresh
    return _summary(target, result)


def _summary(target: Target, result: split.Split) -> list[str]:
    rel = target.shown(target.plan_file)
    lines = [f"{rel}: task {target.task_id} is now tasks {', '.join(result.ids)}"]
    if result.dependents:
        lines.append(
            f"{', '.join(result.dependents)} now depend on {', '.join(result.ids)} instead of {target.task_id}"
        )
    if result.left_out:
        lines.append(f"left out {result.left_out} lines the planning agent wrote outside its task sections")
    status = "set back to draft" if result.was_approved else "a draft"
    return [*lines, f"{rel} is {status}: review it, then `hive approve {rel}`"]


def run(args: argparse.Namespace) -> int:
    root = find_root()
    project = load_project(root)
    target = find(project, args.split)
    session = running(target, project)
    if session is None and target.tasks_file.exists():
        print(
            f"hive: putting the tasks already written in {target.shown(target.tasks_file)} into the plan "
            f"(delete that file to ask the planning agent again)",
            flush=True,
        )
    elif session is None:
        session = start(target, project)
        print(
            f"hive: planning agent ({project.config.planner}) started in tmux session {session.session}; "
            f"it will write the tasks that replace {target.key} to {target.shown(target.tasks_file)}",
            flush=True,
        )
    if session is not None:
        interact(session)
    for line in finish(target, project, session):
        print(f"hive: {line}")
    return 0
