"""What needs the human, in the order it came (oldest first) — the top of the dashboard (Gas City's "attention model"):
questions from agents, checkpoints and gates, branches awaiting review, blocked, too big and
failed tasks with their reason, rate-limit pauses with when they resume, a spent budget,
discovered work, pull requests that wait for a person on the forge. Each item names the actions
that answer it; the page draws one form per action, and each form calls the same function as the
`hive` verb (hive/actions)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from hive.lifecycle import Resume, State, TaskType
from hive.plan.discovered import Discovered
from hive.plan.model import Plan, Task
from hive.reports.checkpoint import answer_commands, blocked_by, checkpoint_kind
from hive.reports.status import TaskStatus
from hive.store import usage
from hive.store.questions import Question
from hive.store.state import TaskState


class Kind(StrEnum):
    QUESTION = "question"
    CHECKPOINT = "checkpoint"
    GATE = "gate"
    REVIEW = "review"
    PULL_REQUEST = "pull_request"  # its PR on the forge waits for a person there (a review, a decision)
    HELD = "held"  # its change does what a task may not do on its own (engine/hold.py)
    BLOCKED = "blocked"
    TOO_BIG = "too_big"
    FAILED = "failed"
    BUDGET = "budget"
    PAUSED = "paused"
    STUCK = "stuck"
    DISCOVERED = "discovered"


class Action(StrEnum):
    """A form on the page; each posts to /actions/<its route> (hive.web.routes)."""

    ANSWER = "answer"  # text, or one of the options
    APPROVE = "approve"  # a human-verify checkpoint, a gate, a reviewed branch, discovered work
    CHOOSE = "choose"  # a decision checkpoint's options
    DONE = "done"  # a human-action checkpoint's step is done
    REJECT = "reject"  # with what is wrong: re-opens the task before it (or discards discovered work)
    CHANGES = "changes"  # a review: what must change goes back to the task's author (`hive changes`)
    RETRY = "retry"
    STOP = "stop"


@dataclass(frozen=True)
class Item:
    kind: Kind
    key: str  # plan:ID ("" for what is not one task's: a profile's pause, the run's budget)
    title: str
    text: str  # what it is, for people
    at: float  # when it came up: the newest first
    actions: tuple[Action, ...] = ()
    options: tuple[str, ...] = ()  # a question's or a decision's choices
    details: str = ""
    reopens: tuple[str, ...] = ()  # REJECT at a checkpoint: the tasks it may re-open (asked when several)
    command: str = ""  # the same from a terminal
    link: str = ""  # where it is answered, when that is not here: a pull request's page on the forge

    @property
    def id(self) -> str:
        """The same item while it needs the same answer (the page keeps its element: issue 38); a
        task that now asks something else (a question, then a checkpoint) is a new one."""
        return f"need-{self.kind}-" + (self.key or "-".join(self.title.split()))


@dataclass(frozen=True)
class Spend:
    """The latest run's spend against `[budget] run_usd`."""

    spent: float
    cap: float  # 0: no cap
    since: float  # when that run began (0: no run recorded its start, as before issue 26)

    @property
    def reached(self) -> bool:
        return bool(self.cap and self.since) and self.spent >= self.cap


def items(
    plans: Sequence[Plan],
    rows: Sequence[TaskStatus],
    states: Mapping[str, TaskState],
    asked: Mapping[str, Question],
    task_budget: float,
    extra: Sequence[Item] = (),
) -> list[Item]:
    """Every item of the approved plans' tasks, with `extra` (pauses, budget, discovered work)."""
    tasks = {plan.key(t.id): t for plan in plans for t in plan.tasks}
    found = list(extra)
    for row in rows:
        st = states.get(row.key)
        task = tasks.get(row.key)
        if row.draft or st is None or task is None:
            continue
        item = _of_task(row, st, task, asked.get(row.key), task_budget)
        if item is not None:
            found.append(item)
    return sorted(found, key=lambda i: (i.at, i.key))


class Arrivals:
    """The order items have on the page: the order they came in (oldest first), kept while the page
    is served, so a new one joins at the end and never pushes what a person is reading or about to
    click down the page (issue 38: a checkpoint on top moved a question's buttons 390 px)."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}  # item id -> when it came (a count that only grows)
        self.count = 0
        self.lock = threading.Lock()  # pages are drawn in worker threads

    def arrange(self, items: Sequence[Item]) -> tuple[Item, ...]:
        """`items` (oldest first) in the order they first came; what is gone is forgotten."""
        with self.lock:
            for item in items:
                if item.id not in self.seen:
                    self.seen[item.id], self.count = self.count, self.count + 1
            now = {item.id for item in items}
            self.seen = {key: n for key, n in self.seen.items() if key in now}
            return tuple(sorted(items, key=lambda i: self.seen[i.id]))


def _of_task(row: TaskStatus, st: TaskState, task: Task, question: Question | None, task_budget: float) -> Item | None:
    at = st.updated_at
    if row.question and question is not None:
        return Item(
            Kind.QUESTION,
            row.key,
            row.title,
            row.question,
            question.asked_at or at,
            (Action.ANSWER,),
            row.options,
            row.details,
            command=row.answer_command,
        )
    if row.state == State.AWAITING_HUMAN:
        return _awaiting(row, st, task, at)
    if row.state in (State.BLOCKED, State.TOO_BIG):
        kind = Kind.BLOCKED if row.state == State.BLOCKED else Kind.TOO_BIG
        return Item(kind, row.key, row.title, row.reason, at, (Action.RETRY,), command=f"hive retry {row.key}")
    if row.state == State.FAILED:
        over = task_budget and usage.task_totals(st).cost_usd >= task_budget
        kind = Kind.BUDGET if over else Kind.FAILED
        return Item(kind, row.key, row.title, row.reason, at, (Action.RETRY,), command=f"hive retry {row.key}")
    if row.state == State.PAUSED and row.resume_at:
        when = time.strftime("%H:%M:%S", time.localtime(row.resume_at))
        return Item(Kind.PAUSED, row.key, row.title, f"rate-limited: goes on by itself at {when} — {row.reason}", at)
    if row.state == State.IN_PROGRESS and row.stuck:
        return Item(Kind.STUCK, row.key, row.title, row.reason or "no output for a long while", at, (Action.STOP,))
    return None


def _awaiting(row: TaskStatus, st: TaskState, task: Task, at: float) -> Item | None:
    if st.resume == Resume.PR:  # answered on the forge, not here; waiting for its CI needs nobody
        if not st.pr_person:
            return None
        link = st.pr_url if st.pr_url.startswith(("https://", "http://")) else ""
        return Item(Kind.PULL_REQUEST, row.key, row.title, row.reason, at, link=link)
    if st.resume == Resume.REVIEW:  # merge it, or send it back with your review
        both = (Action.APPROVE, Action.CHANGES)
        return Item(Kind.REVIEW, row.key, row.title, row.reason, at, both, command=f"hive approve {row.key}")
    if st.resume == Resume.HELD:  # merge it as it is, run it again told to leave those files alone, or say more
        three = (Action.APPROVE, Action.RETRY, Action.CHANGES)
        return Item(Kind.HELD, row.key, row.title, row.reason, at, three, command=f"hive approve {row.key}")
    if not task.is_checkpoint:
        return None  # answered: its next attempt goes on with the answer once a run takes it
    kind = checkpoint_kind(task)
    reopens = tuple(d for d in task.depends_on if not d.startswith("_gate-"))
    first = {"decision": Action.CHOOSE, "human-action": Action.DONE}.get(kind, Action.APPROVE)
    actions: tuple[Action, ...] = (first, Action.REJECT) if reopens else (first,)
    return Item(
        Kind.GATE if task.type == TaskType.GATE else Kind.CHECKPOINT,
        row.key,
        row.title,
        f"{kind}: waits for {blocked_by(task, [f'{row.plan}:{d}' for d in reopens])}",
        at,
        actions,
        task.options,
        task.description.strip(),
        reopens,
        answer_commands(row.key, task)[0],
    )


def paused_profiles(holds: Sequence[tuple[str, float, str]], now: float) -> list[Item]:
    """Agent profiles a rate limit holds: (profile, until, reason) each."""
    return [
        Item(
            Kind.PAUSED,
            "",
            f"agent profile {profile}",
            f"rate-limited: no task starts on it before {time.strftime('%H:%M:%S', time.localtime(until))}"
            + (f" — {reason}" if reason else ""),
            until,
        )
        for profile, until, reason in holds
        if until > now
    ]


def budget(spend: Spend) -> list[Item]:
    if not spend.reached:
        return []
    text = (
        f"the latest run spent {usage.usd(spend.spent)} of its {usage.usd(spend.cap)} ([budget] run_usd): no new "
        f"task starts; raise run_usd in .hive/config.toml and run `doit` again to go on"
    )
    return [Item(Kind.BUDGET, "", "the run's budget", text, spend.since)]


def discovered(found: Sequence[tuple[Discovered, float]]) -> list[Item]:
    """Work agents filed for review (it never runs unapproved), each with when it was filed."""
    return [
        Item(
            Kind.DISCOVERED,
            d.key,
            d.title,
            f"discovered by {d.discovered_from}: approving adds it to the plan",
            at,
            (Action.APPROVE, Action.REJECT),
            details=d.details,
            command=f"hive approve {d.key}",
        )
        for d, at in found
    ]
