"""One task's page as a record: its brief, its attempts with how each ended and why, its agents'
notes, its questions and their answers, its live log (as `hive logs -f` shows it: escapes
stripped; the page escapes the text), what it merged, and what it cost."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from hive import logcap
from hive.adapters import git
from hive.errors import CommandError, HiveError
from hive.lifecycle import RETRYABLE, State
from hive.plan.model import Plan, Task
from hive.project import load_project
from hive.reports import status, tasklog
from hive.reports.checkpoint import checkpoint_report
from hive.reports.status import TaskStatus
from hive.store import agent_signals, questions, usage
from hive.store.names import parse_key
from hive.store.paths import Paths
from hive.store.questions import Question
from hive.store.state import StateCache, StateStore, TaskState
from hive.web import attention
from hive.web.attention import Item

LOG_LINES = 400
LOG_WINDOW = 256 * 1024  # the end of a long log is what the page shows: read no more of it


@dataclass(frozen=True)
class AttemptRow:
    number: int
    worker: str
    started: float
    took: float
    outcome: str  # "running" for the one in progress
    reason: str
    usage: str  # its tokens and cost, as people read them


@dataclass(frozen=True)
class TaskPage:
    key: str
    plan: Plan
    task: Task
    row: TaskStatus
    state: TaskState
    attempts: tuple[AttemptRow, ...]
    notes: tuple[dict[str, object], ...]
    questions: tuple[Question, ...]
    item: Item | None  # what it waits for from the human, with the actions that answer it
    can_retry: bool
    can_stop: bool
    checkpoint: str  # the checkpoint report it stopped with
    commits: tuple[str, ...]  # what its merge brought to main, one line each
    brief: str  # what its latest agent was given
    log: tuple[str, ...]
    log_remote: bool  # the running attempt's log comes from its host
    usage: str

    @property
    def running(self) -> bool:
        return self.row.state == State.IN_PROGRESS


def task_page(root: Path, key: str, states: StateCache | None = None) -> TaskPage:
    """`states`: the server's StateCache (a page drawn again at each change reads only what changed)."""
    plan_name, task_id = parse_key(key)
    project = load_project(root, strict=False)
    plan = project.plans.plan(plan_name)
    try:
        task = plan.task(task_id)
    except KeyError:
        raise HiveError(f"plan {plan_name} has no task {task_id!r}") from None
    paths = Paths(root)
    store = StateStore(paths)
    every = (states or StateCache(paths)).read_all()  # the others' too: whether it waits for a stopped task
    st = every.get(key) or store.read(plan_name, task_id)
    row = status.collect(root, project, every, only=key)[0]
    asked = tuple(questions.load(paths, plan_name, task_id))
    waiting = questions.waiting(asked) if row.question else None
    items = attention.items([plan], [row], {key: st}, {key: waiting} if waiting else {}, project.config.budget_task_usd)
    log, remote = _log(root, store, plan_name, task_id, st)
    return TaskPage(
        key=key,
        plan=plan,
        task=task,
        row=row,
        state=st,
        attempts=_attempts(st),
        notes=tuple(agent_signals.notes(paths, plan_name, task_id)),
        questions=asked,
        item=items[0] if items else None,
        can_retry=st.state in RETRYABLE,
        can_stop=st.state == State.IN_PROGRESS,
        checkpoint=_checkpoint(project.config.main_branch, store, plan, task, st),
        commits=_merged(root, st.merge_commit) if st.state == State.DONE else (),
        brief=_read(paths.context_copy(plan_name, task_id, st.attempt)) if st.attempt else "",
        log=log,
        log_remote=remote,
        usage=usage.described(usage.task_totals(st)),
    )


def _checkpoint(main_branch: str, store: StateStore, plan: Plan, task: Task, st: TaskState) -> str:
    """A checkpoint's report as things stand now (the file is what the last run printed)."""
    if st.state != State.AWAITING_HUMAN or not task.is_checkpoint:
        return ""
    return checkpoint_report(store, plan, task, main_branch)


def _attempts(st: TaskState) -> tuple[AttemptRow, ...]:
    rows = [
        AttemptRow(
            int(h.get("attempt", 0)),
            str(h.get("worker", "")),
            float(h.get("started_at") or 0),
            float(h.get("finished_at") or 0) - float(h.get("started_at") or 0),
            str(h.get("outcome", "")),
            str(h.get("reason", "")),
            usage.described(_totals(h.get("usage"))),
        )
        for h in st.history
    ]
    if st.state == State.IN_PROGRESS:
        took = time.time() - st.started_at if st.started_at else 0.0
        rows.append(
            AttemptRow(st.attempt, st.worker, st.started_at, took, "running", "", usage.described(_totals(st.usage)))
        )
    return tuple(reversed(rows))  # the latest first


def _totals(entry: object) -> usage.Totals:
    totals = usage.Totals()
    if isinstance(entry, dict):
        totals.add(entry)
    return totals


def _log(root: Path, store: StateStore, plan: str, task_id: str, st: TaskState) -> tuple[tuple[str, ...], bool]:
    """The end of its log, from the host that holds it."""
    try:
        read = tasklog.reader(root, store, plan, task_id)
    except HiveError:  # its host cannot be asked (a Ray cluster that is down): what is here
        read = tasklog.file_reader(store.paths.log_file(plan, task_id))
    remote = st.state == State.IN_PROGRESS and bool(st.node)
    size = logcap.size(store.paths.log_file(plan, task_id))  # logical, as the reader's offsets are
    data, _end = tasklog.read_all(read, 0 if remote else max(size - LOG_WINDOW, 0))
    return tuple(tasklog.shown_lines(data)[-LOG_LINES:]), remote


def _merged(root: Path, commit: str) -> tuple[str, ...]:
    """The commits its merge brought to main (its first parent is main before it), with their files."""
    if not commit:
        return ()
    try:
        return tuple(git.log_with_files(root, f"{commit}^1..{commit}"))
    except CommandError:  # not a merge (nothing to merge), or gone from this clone
        return ()


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
