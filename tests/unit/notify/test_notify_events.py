"""hive/notify/events.py: which event a held task is, and what its payload tells the
human — above all the exact command that answers it."""

from __future__ import annotations

from pathlib import Path

import pytest

from hive.notify.events import EVENTS, held_event, payload, run_finished_payload, run_status, task_payload
from hive.plan.model import Plan, Task
from hive.store.state import TaskState

ROOT = Path("/repo")
KEYS = {"event", "task", "plan", "title", "state", "reason", "command", "logs", "repo", "time", "text"}

WORK = Task("2", "Build the API", 10)
VERIFY = Task("3", "Check the page", 20, type="checkpoint:human-verify")
DECIDE = Task("4", "Pick a database", 30, type="checkpoint:decision", options=("Postgres", "SQLite"))
GATE = Task("_gate-2", "Gate after 2", 40, type="gate")
PLAN = Plan("auth", Path("plans/auth.md"), "approved", "", "Auth", "", (WORK, VERIFY, DECIDE, GATE))


def state(task: Task, state: str, reason: str = "", **more: object) -> TaskState:
    return TaskState("auth", task.id, state, attempt=1, reason=reason, **more)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("task", "st", "event"),
    [
        (WORK, "failed", "failed"),
        (WORK, "blocked", "blocked"),
        (WORK, "too_big", "too_big"),
        (WORK, "awaiting_human", "checkpoint"),  # a review (auto_merge = false)
        (VERIFY, "awaiting_human", "checkpoint"),
        (GATE, "awaiting_human", "gate"),
        (WORK, "done", None),
        (WORK, "planned", None),
    ],
)
def test_a_held_task_is_the_event_of_its_state(task, st, event):
    assert held_event(task, state(task, st), task_budget_usd=0) == event


def test_a_task_failed_at_its_budget_is_a_budget_event_not_a_failure():
    spent = state(WORK, "failed", history=({"usage": {"cost_usd": 3.0}, "started_at": 1.0},))
    assert held_event(WORK, spent, task_budget_usd=2.0) == "budget"
    assert held_event(WORK, spent, task_budget_usd=5.0) == "failed"
    assert held_event(WORK, spent, task_budget_usd=0) == "failed"  # no cap


@pytest.mark.parametrize(
    ("task", "st", "command", "logs"),
    [
        (WORK, "blocked", "hive retry auth:2", "hive logs auth:2"),
        (WORK, "failed", "hive retry auth:2", "hive logs auth:2"),
        (WORK, "too_big", "hive retry auth:2", "hive logs auth:2"),
        (WORK, "awaiting_human", "hive approve auth:2", "hive logs auth:2"),
        (WORK, "paused", "hive status", "hive logs auth:2"),
        (VERIFY, "awaiting_human", "hive approve auth:3", ""),
        (DECIDE, "awaiting_human", "hive approve auth:4 --choice Postgres|SQLite", ""),
        (GATE, "awaiting_human", "hive approve auth:_gate-2", ""),
    ],
)
def test_the_payload_names_the_exact_command_to_answer_and_to_read_the_log(task, st, command, logs):
    p = task_payload("x", ROOT, PLAN, task, state(task, st, "why"))
    assert (p["command"], p["logs"]) == (command, logs)


def test_a_task_payload_carries_the_event_task_title_state_reason_and_plan():
    p = task_payload("blocked", ROOT, PLAN, WORK, state(WORK, "blocked", "blocked: needs an API key\nmore"))
    assert set(p) == KEYS | {"attempt"}
    assert p["event"] == "blocked" and p["task"] == "auth:2" and p["plan"] == "auth"
    assert p["title"] == "Build the API" and p["state"] == "blocked"
    assert p["reason"] == "blocked: needs an API key\nmore" and p["repo"] == "/repo" and p["attempt"] == 1
    assert p["text"] == "hive: auth:2 (Build the API): blocked: needs an API key — `hive retry auth:2`"


@pytest.mark.parametrize(
    ("event", "reason", "text"),
    [
        ("too_big", "too big: split it", "too big: split it"),
        ("failed", "crashed: exit 3\nTraceback", "failed: crashed: exit 3"),
        ("budget", "budget reached ($3.00 of $2.00)", "budget reached ($3.00 of $2.00)"),
        ("failed", "", "failed"),
    ],
)
def test_the_text_is_one_line_that_names_the_event_once(event, reason, text):
    p = task_payload(event, ROOT, PLAN, WORK, state(WORK, "failed", reason))
    assert p["text"] == f"hive: auth:2 (Build the API): {text} — `hive retry auth:2`"


def test_a_given_command_and_reason_win_over_the_recorded_ones():
    p = task_payload("budget", ROOT, PLAN, WORK, state(WORK, "failed", "old"), "hive status", "budget reached")
    assert (p["command"], p["reason"]) == ("hive status", "budget reached")


def test_run_finished_counts_every_approved_task_by_state():
    draft = Plan("later", Path("plans/later.md"), "draft", "", "Later", "", (Task("1", "x", 1),))
    states = {
        "auth:2": TaskState("auth", "2", "done", task_hash=WORK.text_hash),
        "auth:3": TaskState("auth", "3", "awaiting_human", task_hash=VERIFY.text_hash),
        "auth:4": TaskState("auth", "4", "blocked", task_hash="changed since"),  # its text changed: pending
    }
    p = run_finished_payload(ROOT, (PLAN, draft), states)
    assert set(p) == KEYS | {"counts", "plans"}
    assert p["event"] == "run_finished" and p["task"] == "" and p["plan"] == "auth" and p["plans"] == ["auth"]
    assert p["counts"]["done"] == 1 and p["counts"]["awaiting_human"] == 1 and p["counts"]["planned"] == 2
    assert sum(p["counts"].values()) == 4 and p["counts"]["blocked"] == 0
    assert p["state"] == "awaiting_human" and p["command"] == "hive status"
    assert p["reason"] == "1 done, 1 awaiting_human, 2 planned"
    assert p["text"] == "hive: run finished (awaiting_human): 1 done, 1 awaiting_human, 2 planned — `hive status`"


def test_every_event_has_the_same_keys():
    assert {event: set(payload(event, ROOT)) for event in EVENTS} == {event: KEYS for event in EVENTS}
    assert len(set(EVENTS)) == len(EVENTS) == 12


@pytest.mark.parametrize(
    ("states", "status"),
    [
        (["done", "done"], "complete"),
        ([], "complete"),
        (["done", "blocked", "planned"], "completed_with_failures"),
        (["failed", "awaiting_human", "planned"], "awaiting_human"),
        (["done", "planned"], "in_progress"),  # part of the plan was run, or the run was stopped
    ],
)
def test_a_finished_run_says_what_it_needs_from_its_human_first(states, status):
    assert run_status(states) == status
