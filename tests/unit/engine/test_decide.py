"""hive/engine/decide.py: every row of the re-run table, on TaskState records built in memory."""

from __future__ import annotations

import builtins
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import pytest

from hive.engine.decide import Decision, Facts, Step, decide
from hive.executors.standing import Standing, Where
from hive.lifecycle import INTERRUPTED, Kind, Resume, State
from hive.store.agent_signals import Signal
from hive.store.state import TaskState

MAX = 2


def st(state: State, **fields) -> TaskState:
    return TaskState("auth", "1", state=state, **fields)


class Row(NamedTuple):
    name: str
    st: TaskState
    facts: Facts
    checkpoint: bool
    expected: Decision


ROWS = [
    Row(
        "merge reached main before the run stopped",
        st(State.IN_PROGRESS, merging="m1"),
        Facts(merged_already=True, standing=Standing(Where.RUNNING, token=5)),
        False,
        Decision(Step.MERGED_ALREADY),
    ),
    Row(
        "merged_already wins over outdated",
        st(State.FAILED, merging="m1"),
        Facts(merged_already=True, outdated="its text in the plan changed"),
        True,
        Decision(Step.MERGED_ALREADY),
    ),
    Row(
        "a merge intent that did not reach main is merged again",
        st(State.IN_PROGRESS, merging="m1"),
        Facts(standing=Standing(Where.MERGING)),
        False,
        Decision(Step.MERGE),
    ),
    Row(
        "done with a stale merge record is just done",
        st(State.DONE, merging="m1"),
        Facts(merged_already=True),
        False,
        Decision(Step.DONE),
    ),
    Row(
        "signalled while no run watched",
        st(State.IN_PROGRESS, agent_token=7),
        Facts(standing=Standing(Where.SIGNALLED, Signal(Kind.DONE, "", 1.0))),
        False,
        Decision(Step.SIGNALLED, signal=Signal(Kind.DONE, "", 1.0)),  # acted on as found, not read again
    ),
    Row(
        "running with a new token: attach and record it",
        st(State.IN_PROGRESS, agent_token=7),
        Facts(standing=Standing(Where.RUNNING, token=42)),
        False,
        Decision(Step.ATTACH, token=42),
    ),
    Row(
        "running with the recorded token: attach, nothing to record",
        st(State.IN_PROGRESS, agent_token=42),
        Facts(standing=Standing(Where.RUNNING, token=42)),
        False,
        Decision(Step.ATTACH),
    ),
    Row(
        "gone: a new attempt, the last one interrupted",
        st(State.IN_PROGRESS, agent_token=7),
        Facts(standing=Standing(Where.GONE)),
        False,
        Decision(Step.NEW, interrupted=True),
    ),
    Row(
        "no standing found counts as gone", st(State.IN_PROGRESS), Facts(), False, Decision(Step.NEW, interrupted=True)
    ),
    Row(
        "in progress ignores outdated text",
        st(State.IN_PROGRESS),
        Facts(outdated="changed", standing=Standing(Where.RUNNING, token=0)),
        False,
        Decision(Step.ATTACH),
    ),
    Row(
        "outdated done task re-opens",
        st(State.DONE),
        Facts(outdated="its text in the plan changed"),
        False,
        Decision(Step.NEW, reopen="its text in the plan changed"),
    ),
    Row(
        "outdated checkpoint re-opens to a checkpoint",
        st(State.DONE),
        Facts(outdated="why"),
        True,
        Decision(Step.CHECKPOINT, reopen="why"),
    ),
    Row(
        "outdated held task re-opens", st(State.BLOCKED), Facts(outdated="why"), False, Decision(Step.NEW, reopen="why")
    ),
    Row(
        "outdated failed task re-opens even out of attempts",
        st(State.FAILED, attempts_used=MAX, reason="crashed"),
        Facts(outdated="why"),
        False,
        Decision(Step.NEW, reopen="why"),
    ),
    Row(
        "a permanent failure waits for a human even with attempts left",
        st(State.FAILED, attempts_used=1, reason="not logged in", permanent=True),
        Facts(),
        False,
        Decision(Step.STOPPED),
    ),
    Row(
        "a rate-limited task goes on (after its pause)",
        st(State.PAUSED, resume_at=5.0),
        Facts(),
        False,
        Decision(Step.NEW),
    ),
    Row("done", st(State.DONE), Facts(), False, Decision(Step.DONE)),
    Row("done checkpoint stays done", st(State.DONE), Facts(), True, Decision(Step.DONE)),
    Row("blocked waits", st(State.BLOCKED), Facts(), False, Decision(Step.STOPPED)),
    Row("too big waits", st(State.TOO_BIG), Facts(), False, Decision(Step.STOPPED)),
    Row("awaiting a human waits", st(State.AWAITING_HUMAN), Facts(), True, Decision(Step.STOPPED)),
    Row(
        "failed out of attempts waits",
        st(State.FAILED, attempts_used=MAX, reason="crashed"),
        Facts(),
        False,
        Decision(Step.STOPPED),
    ),
    Row(
        "failed beyond attempts waits",
        st(State.FAILED, attempts_used=MAX + 1, reason="crashed"),
        Facts(),
        False,
        Decision(Step.STOPPED),
    ),
    Row(
        "failed with attempts left retries",
        st(State.FAILED, attempts_used=MAX - 1, reason="crashed"),
        Facts(),
        False,
        Decision(Step.NEW),
    ),
    Row(
        "an interruption never counts (store.mark_interrupted gave its attempt back)",
        st(State.FAILED, attempts_used=MAX - 1, reason=INTERRUPTED),
        Facts(),
        False,
        Decision(Step.NEW),
    ),
    Row(
        "a reason is text for people: one that reads like an interruption decides nothing",
        st(State.FAILED, attempts_used=MAX, reason=INTERRUPTED),
        Facts(),
        False,
        Decision(Step.STOPPED),
    ),
    Row("planned checkpoint stops for a human", st(State.PLANNED), Facts(), True, Decision(Step.CHECKPOINT)),
    Row(
        "approved work on its branch is merged",
        st(State.PLANNED, resume=Resume.MERGE),
        Facts(),
        False,
        Decision(Step.MERGE),
    ),
    Row(
        "a merge that failed with attempts left is merged again",
        st(State.FAILED, resume=Resume.MERGING, attempts_used=MAX - 1, reason="error: git failed"),
        Facts(),
        False,
        Decision(Step.MERGE),
    ),
    Row("planned starts", st(State.PLANNED), Facts(), False, Decision(Step.NEW)),
    Row(
        "an agent's question without its answer waits for the human",
        st(State.AWAITING_HUMAN, resume=Resume.ANSWER, reason="asked: which database?"),
        Facts(answered=False),
        False,
        Decision(Step.STOPPED),
    ),
    Row(
        "an answered question starts the attempt that goes on with it",
        st(State.AWAITING_HUMAN, resume=Resume.ANSWER, reason="asked: which database?"),
        Facts(answered=True),
        False,
        Decision(Step.NEW),
    ),
    Row(
        "a PR open on the forge is looked at again (issue 45)",
        st(State.AWAITING_HUMAN, resume=Resume.PR, reason="PR #12: waiting for review"),
        Facts(),
        False,
        Decision(Step.FOLLOW),
    ),
    Row(
        "a PR paused by the forge's rate limit is looked at again once it may be",
        st(State.PAUSED, resume=Resume.PR, reason="paused: the forge's rate limit until 14:05"),
        Facts(),
        False,
        Decision(Step.FOLLOW),
    ),
    Row(
        "an answer is not an approval: a review waits for `hive approve`",
        st(State.AWAITING_HUMAN, resume=Resume.REVIEW),
        Facts(answered=True),
        False,
        Decision(Step.STOPPED),
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_decide(row: Row):
    assert decide(row.st, row.facts, row.checkpoint, MAX) == row.expected


def test_the_table_reaches_every_step():
    assert {row.expected.step for row in ROWS} == set(Step)


@contextmanager
def no_io(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args, **kwargs):
        raise AssertionError(f"decide did I/O: {args!r}")

    with monkeypatch.context() as m:
        for target, name in [
            (builtins, "open"),
            (os, "open"),
            (os, "stat"),
            (os, "lstat"),
            (os, "scandir"),
            (os, "listdir"),
            (os, "replace"),
            (os, "link"),
            (subprocess, "Popen"),
        ]:
            m.setattr(target, name, refuse)
        yield


def test_decide_is_pure(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with no_io(monkeypatch):
        decisions = [decide(row.st, row.facts, row.checkpoint, MAX) for row in ROWS]
        again = [decide(row.st, row.facts, row.checkpoint, MAX) for row in ROWS]
    assert decisions == again == [row.expected for row in ROWS]
    assert list(tmp_path.iterdir()) == []
