"""hive/lifecycle.py: the states, the outcome table, what a task shows and when it is done."""

from __future__ import annotations

import pytest

from hive.lifecycle import (
    FREE_INTERRUPTIONS,
    INTERRUPTED,
    ORDER,
    OUTCOMES,
    RETRYABLE,
    SIGNALS,
    STATES,
    STOPS,
    TRANSITIONS,
    Kind,
    NotDone,
    Outcome,
    State,
    Verdict,
    shown_state,
    verdict,
)
from hive.store.state import TaskState


class OnMain:
    """A fake `on_main(commit)`: the commits listed are on main; every call is recorded."""

    def __init__(self, *commits: str) -> None:
        self.commits = set(commits)
        self.calls: list[str] = []

    def __call__(self, commit: str) -> bool:
        self.calls.append(commit)
        return commit in self.commits


def task(state: State, task_hash: str = "h1", merge_commit: str = "", reason: str = "") -> TaskState:
    return TaskState("auth", "1", state=state, task_hash=task_hash, merge_commit=merge_commit, reason=reason)


# --- the tables ---------------------------------------------------------------------------------


def test_every_state_has_transitions_and_display_info():
    assert set(TRANSITIONS) == set(State) == set(STATES)
    assert all(target in State for targets in TRANSITIONS.values() for target in targets)


def test_every_state_may_be_recorded_again_so_other_fields_can_change():
    for state in State:
        assert state in TRANSITIONS[state], state


@pytest.mark.parametrize("kind", list(Kind))
def test_every_outcome_has_a_rule_whose_state_follows_in_progress(kind: Kind):
    assert OUTCOMES[kind].state in TRANSITIONS[State.IN_PROGRESS]


def test_every_finished_or_held_state_can_be_reopened_to_planned():
    for state in (State.DONE, *STOPS, *RETRYABLE):
        assert State.PLANNED in TRANSITIONS[state], state


def test_a_task_cannot_skip_running_nor_leave_done_except_by_reopening():
    assert State.DONE not in TRANSITIONS[State.PLANNED]
    assert State.FAILED not in TRANSITIONS[State.PLANNED]
    assert TRANSITIONS[State.DONE] == {State.PLANNED, State.DONE}


def test_held_states_wait_for_a_human_and_only_failed_is_retried_by_the_runner():
    assert set(STOPS) == {State.BLOCKED, State.TOO_BIG, State.AWAITING_HUMAN}
    assert [s for s in State if STATES[s].retried] == [State.FAILED]
    assert set(RETRYABLE) == {State.FAILED, State.BLOCKED, State.TOO_BIG}


def test_status_lists_running_then_rate_limited_then_waiting_for_a_human_first():
    assert ORDER[:3] == (State.IN_PROGRESS, State.PAUSED, State.AWAITING_HUMAN)
    assert sorted(ORDER) == sorted(State)


def test_signal_verbs_are_exactly_the_three_agent_signalled_kinds():
    assert SIGNALS == {"done": Kind.DONE, "blocked": Kind.BLOCKED, "too-big": Kind.TOO_BIG}
    assert all(OUTCOMES[kind].help for kind in SIGNALS.values())


def test_a_reason_is_required_for_blocked_and_too_big_only():
    required = {kind for kind, rule in OUTCOMES.items() if rule.reason_required}
    assert required == {Kind.BLOCKED, Kind.TOO_BIG}


def test_only_failures_are_retried_and_a_human_stop_is_held():
    retried = {kind for kind, rule in OUTCOMES.items() if rule.retried}
    assert retried == {Kind.CRASHED, Kind.SCRIPT_FAILED, Kind.SPAWN_FAILED, Kind.TIMEOUT, Kind.LOST}
    assert OUTCOMES[Kind.STOPPED].state in STOPS and not OUTCOMES[Kind.STOPPED].ended_by_itself


# --- recorded reasons ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "recorded"),
    [
        (Outcome(Kind.BLOCKED, "why"), "blocked: why"),
        (Outcome(Kind.BLOCKED), "blocked: no reason given"),
        (Outcome(Kind.TOO_BIG, "split auth"), "too big: split auth"),
        (Outcome(Kind.TOO_BIG), "too big: no reason given"),
        (Outcome(Kind.CRASHED, "crashed: the agent exited (status 1)"), "crashed: the agent exited (status 1)"),
        (Outcome(Kind.DONE), ""),
        (Outcome(Kind.TIMEOUT, "timeout: {braces} kept"), "timeout: {braces} kept"),
    ],
)
def test_recorded_reason(outcome: Outcome, recorded: str):
    assert outcome.recorded_reason("auth:1") == recorded


def test_a_stopped_attempt_tells_how_to_run_it_again():
    reason = Outcome(Kind.STOPPED, "stopped by `hive stop`").recorded_reason("auth:2.1")
    assert "`hive retry auth:2.1`" in reason and "hive stop" in reason


# --- shown_state --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "recorded_hash", "now_hash", "shown"),
    [
        (State.DONE, "h1", "h2", State.PLANNED),  # its text changed: pending again
        (State.DONE, "h1", "h1", State.DONE),
        (State.DONE, "", "h2", State.DONE),  # no hash recorded: nothing to compare
        (State.IN_PROGRESS, "h1", "h2", State.IN_PROGRESS),  # a running task stays running
        (State.FAILED, "h1", "h2", State.PLANNED),
        (State.BLOCKED, "h1", "h1", State.BLOCKED),
    ],
)
def test_shown_state(state: State, recorded_hash: str, now_hash: str, shown: State):
    assert shown_state(task(state, recorded_hash), now_hash) == shown


# --- verdict: is it done, and why not ----------------------------------------------------------


def test_a_planned_task_is_unfinished_never_outdated():
    on_main = OnMain()
    why = verdict(task(State.PLANNED, "h1"), "other", on_main)
    assert (why.why_not, why.outdated) == (NotDone.UNFINISHED, "")
    assert on_main.calls == []


def test_changed_text_makes_a_finished_or_held_task_outdated():
    for st in (task(State.DONE, "h1", "c1"), task(State.BLOCKED, "h1")):
        why = verdict(st, "h2", OnMain("c1"))
        assert (why.done, why.why_not, why.outdated) == (False, NotDone.TEXT_CHANGED, "its text in the plan changed")


def test_a_merge_commit_off_main_makes_done_outdated_naming_the_branch():
    on_main = OnMain("other")
    why = verdict(task(State.DONE, "h1", "c1"), "h1", on_main, main_branch="trunk")
    assert (why.why_not, why.outdated) == (NotDone.MERGE_LEFT_MAIN, "its merge commit is no longer on trunk")
    assert on_main.calls == ["c1"]


def test_done_without_a_merge_commit_is_outdated_when_git_is_asked():
    on_main = OnMain()
    assert verdict(task(State.DONE, "h1", ""), "h1", on_main).outdated == "its merge commit is no longer on main"
    assert on_main.calls == []


def test_on_main_none_skips_git():
    assert verdict(task(State.DONE, "h1", "c1"), "h1", None) == Verdict()
    assert verdict(task(State.DONE, "h1", ""), "h1", None).done


def test_only_done_tasks_are_checked_against_main_and_a_held_one_says_its_state():
    on_main = OnMain()
    why = verdict(task(State.BLOCKED, "h1", "c1", reason="needs a key"), "h1", on_main)
    assert (why.why_not, why.reason, why.outdated) == (NotDone.UNFINISHED, "it is blocked: needs a key", "")
    assert on_main.calls == []


@pytest.mark.parametrize(
    ("st", "text_hash", "on_main", "why_not"),
    [
        (None, "h1", None, NotDone.NEVER_RAN),
        (task(State.DONE, "h1", "c1"), "h1", OnMain("c1"), None),
        (task(State.DONE, "h1", "c1"), "h1", OnMain(), NotDone.MERGE_LEFT_MAIN),
        (task(State.DONE, "h1", "c1"), "h2", OnMain("c1"), NotDone.TEXT_CHANGED),
        (task(State.DONE, "h1", ""), "h1", OnMain(), NotDone.MERGE_LEFT_MAIN),  # never merged
        (task(State.IN_PROGRESS, "h1", "c1"), "h1", OnMain("c1"), NotDone.UNFINISHED),
        (task(State.IN_PROGRESS, "h1", "c1"), "h2", OnMain("c1"), NotDone.UNFINISHED),  # running: never outdated
        (task(State.AWAITING_HUMAN, "h1", "c1"), "h1", None, NotDone.UNFINISHED),
    ],
)
def test_verdict(st: TaskState | None, text_hash: str, on_main: OnMain | None, why_not: NotDone | None):
    why = verdict(st, text_hash, on_main)
    assert (why.why_not, why.done) == (why_not, why_not is None)
    assert bool(why.reason) == (why_not is not None)


def test_an_attempt_lost_with_its_host_is_free_until_too_many_in_a_row_were_interrupted():
    lost = Outcome(Kind.LOST, "its Ray node 10.0.0.7 or its agent there died")
    interrupted, failed = {"outcome": INTERRUPTED}, {"outcome": "failed"}
    assert lost.history_outcome == INTERRUPTED  # it reads as interrupted in the next brief
    assert not lost.counts(())
    assert not lost.counts((failed,) + (interrupted,) * (FREE_INTERRUPTIONS - 1))
    assert lost.counts((interrupted,) * FREE_INTERRUPTIONS)  # a node that dies every time: no endless retries
    assert not lost.counts((interrupted,) * FREE_INTERRUPTIONS + (failed,))  # a streak ends with any other outcome
    assert Outcome(Kind.CRASHED).counts((interrupted,) * 5) and not Outcome(Kind.RATE_LIMITED).counts(())
    assert Outcome(Kind.CRASHED).history_outcome == ""
