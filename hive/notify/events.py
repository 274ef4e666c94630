"""What a notification says: one JSON object per event, the same keys for every
event, and in `command` the exact command that answers or inspects it (pure: no
I/O, so every event is unit-tested)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hive.lifecycle import STATES, Resume, State, TaskType, shown_state
from hive.plan.model import Plan, Task
from hive.reports.checkpoint import how_to_answer
from hive.settings.schema import NOTIFY_EVENTS
from hive.store.questions import Question, answer_command
from hive.store.state import TaskState
from hive.store.usage import task_totals

CHECKPOINT = "checkpoint"
GATE = "gate"
QUESTION = "question"
FAILED = "failed"
BLOCKED = "blocked"
TOO_BIG = "too_big"
PAUSED = "paused"
BUDGET = "budget"
TASK_DONE = "task_done"
PR_REVIEW = "pr_review"  # a task's pull request waits for a person's review on the forge
RUN_STARTED = "run_started"
RUN_FINISHED = "run_finished"
EVENTS = NOTIFY_EVENTS  # `[notify] events` chooses among them

STATUS = "hive status"


def held_event(task: Task, st: TaskState, task_budget_usd: float) -> str | None:
    """The event for a task the run stops at (None: nothing a human must hear about)."""
    if st.state == State.AWAITING_HUMAN and st.resume == Resume.ANSWER:
        return QUESTION  # its agent asked, and ended before the answer
    if st.resume == Resume.PR:
        return None  # its PR: `pr_review` says once that it waits for a person (engine/pullrequest.py)
    if st.state == State.AWAITING_HUMAN:
        return GATE if task.type == TaskType.GATE else CHECKPOINT  # a review (auto_merge = false) is a checkpoint too
    if st.state == State.FAILED and task_budget_usd and task_totals(st).cost_usd >= task_budget_usd:
        return BUDGET  # stopped at its [budget] task_usd: not an ordinary failure
    return {State.FAILED: FAILED, State.BLOCKED: BLOCKED, State.TOO_BIG: TOO_BIG}.get(State(st.state))


def task_payload(
    event: str, root: Path, plan: Plan, task: Task, st: TaskState, command: str = "", reason: str = ""
) -> dict[str, Any]:
    """A task's event. `command` defaults to what answers it: `hive approve …` for a
    checkpoint or a review, `hive retry …` for a task held for good, else `hive status`;
    `reason` to the recorded one."""
    key = plan.key(task.id)
    if not command:
        if task.is_checkpoint:
            command = how_to_answer(key, task)
        elif st.state == State.AWAITING_HUMAN:
            command = f"hive approve {key}"
        elif STATES[State(st.state)].retryable:
            command = f"hive retry {key}"
        else:
            command = STATUS
    # a checkpoint or gate runs no agent: there is no log to read
    logs = "" if task.is_checkpoint else f"hive logs {key}"
    return payload(
        event,
        root,
        task=key,
        plan=plan.name,
        title=task.title,
        state=st.state,
        reason=reason or st.reason,
        command=command,
        logs=logs,
        attempt=st.attempt,
    )


def question_payload(root: Path, plan: Plan, task: Task, st: TaskState, question: Question) -> dict[str, Any]:
    """A task's agent asks its human (`hive ask`): the question, its options and the
    command that answers it."""
    return {
        **task_payload(
            QUESTION, root, plan, task, st, answer_command(plan.key(task.id), question), f"asks: {question.text}"
        ),
        "state": State.AWAITING_HUMAN,
        "question": question.text,
        "options": list(question.options),
        "details": question.details,
    }


def run_started_payload(root: Path, plans: Iterable[Plan], states: Mapping[str, TaskState]) -> dict[str, Any]:
    """The start of a `doit` run: how many tasks of the approved plans are left to do."""
    approved = [p for p in plans if p.approved]
    left = [
        t for p in approved for t in p.tasks
        if shown_state(states.get(p.key(t.id)) or TaskState(p.name, t.id), t.text_hash) != State.DONE
    ]  # fmt: skip
    names = [p.name for p in approved]
    return payload(
        RUN_STARTED,
        root,
        plan=names[0] if len(names) == 1 else "",
        state="in_progress",
        reason=f"{len(left)} task(s) to do",
        command=STATUS,
        plans=names,
    )


def run_finished_payload(root: Path, plans: Iterable[Plan], states: Mapping[str, TaskState]) -> dict[str, Any]:
    """The end of a `doit` run: every approved plan's tasks counted by state (as in
    `.hive/report.md`), and what the run ended with (`run_status`)."""
    approved = [p for p in plans if p.approved]
    shown: list[str] = []
    for plan in approved:
        for task in plan.tasks:
            st = states.get(plan.key(task.id)) or TaskState(plan.name, task.id)
            shown.append(shown_state(st, task.text_hash))
    counts = {str(s): shown.count(s) for s in STATES}
    status = run_status(shown)
    names = [p.name for p in approved]
    return payload(
        RUN_FINISHED,
        root,
        plan=names[0] if len(names) == 1 else "",
        state=status,
        reason=", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no tasks",
        command=STATUS,
        counts=counts,
        plans=names,
    )


def run_status(states: list[str]) -> str:
    """What a finished run needs from its human, first what needs them most: unlike
    the report's status, tasks still planned behind a held one do not make it
    "in_progress" — that is left for a run that stopped, or ran part of a plan."""
    if State.AWAITING_HUMAN in states:
        return "awaiting_human"
    if any(s in (State.FAILED, State.BLOCKED, State.TOO_BIG) for s in states):
        return "completed_with_failures"
    return "complete" if all(s == State.DONE for s in states) else "in_progress"


def payload(  # noqa: PLR0913 — one keyword-only argument per field every event carries
    event: str,
    root: Path,
    *,
    task: str = "",
    plan: str = "",
    title: str = "",
    state: str = "",
    reason: str = "",
    command: str = "",
    logs: str = "",
    **extra: object,
) -> dict[str, Any]:
    """Every event has these keys ("" when they do not apply); `text` is one line for
    a human (what chat webhooks such as Slack's show)."""
    run = "run started" if event == RUN_STARTED else f"run finished ({state})"
    text = f"hive: {task} ({title}): {_headed(event, reason)}" if task else f"hive: {run}: {reason}"
    text += f" — `{command}`" if command else ""
    return {
        "event": event,
        "task": task,
        "plan": plan,
        "title": title,
        "state": state,
        "reason": reason,
        "command": command,
        "logs": logs,
        "repo": str(root),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "text": text,
        **extra,
    }


def _headed(event: str, reason: str) -> str:
    """The reason's first line, headed by the event unless it already says it
    ("blocked: no key", not "blocked: blocked: no key")."""
    head = event.replace("_", " ")
    line = reason.strip().splitlines()[0] if reason.strip() else ""
    if line.lower().startswith(head):
        return line
    return f"{head}: {line}" if line else head
