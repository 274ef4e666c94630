"""hive/executors/standing.py: where a task recorded as running stands when no run watches it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from hive.executors import AgentRef, Executor
from hive.executors.standing import Where, interrupted, standing
from hive.lifecycle import INTERRUPTED, Kind, Resume, State
from hive.store import agent_signals
from hive.store.agent_signals import AgentIdentity
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState

SESSION = "hive-w1-auth-1-abcdef-a2"


class FakeExecutor:
    """locate() finds the sessions listed in `live`; stop() is recorded."""

    kind = "fake"

    def __init__(self, token: int | None = None) -> None:
        self.live = {SESSION: token} if token is not None else {}
        self.stopped: list[tuple[AgentRef, float, bool]] = []

    def locate(self, name: str) -> int | None:
        return self.live.get(name)

    def agent(self, ref: AgentRef) -> FakeAgent:
        return FakeAgent(self, ref)


@dataclass
class FakeAgent:
    executor: FakeExecutor
    ref: AgentRef

    def stop(self, patience: float, finished: bool, report) -> str:
        self.executor.stopped.append((self.ref, patience, finished))
        return ""


def fake(token: int | None = None) -> Executor:
    return cast(Executor, FakeExecutor(token))


def running_task(**fields) -> TaskState:
    return TaskState(
        "auth", "1", state=State.IN_PROGRESS, attempt=2, attempts_used=1, session=SESSION, agent_token=77, **fields
    )


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths(tmp_path)


def test_a_signal_of_this_attempt_comes_first(paths: Paths):
    agent_signals.send(AgentIdentity(paths.root, "auth", "1", 2), Kind.DONE, "")
    where = standing(paths, fake(token=5), running_task(merging="m1"))
    assert where.kind == Where.SIGNALLED and where.signal is not None and where.signal.kind == Kind.DONE


def test_a_signal_of_an_older_attempt_does_not_count(paths: Paths):
    agent_signals.send(AgentIdentity(paths.root, "auth", "1", 1), Kind.DONE, "")
    assert standing(paths, fake(), running_task()).kind == Where.GONE


@pytest.mark.parametrize("fields", [{"merging": "m1"}, {"resume": Resume.MERGE}])
def test_a_merge_under_way_is_merged_again(paths: Paths, fields: dict):
    assert standing(paths, fake(token=5), running_task(**fields)).kind == Where.MERGING


def test_a_live_agent_is_reattached_with_its_token_as_found_now(paths: Paths):
    where = standing(paths, fake(token=5), running_task())
    assert (where.kind, where.token) == (Where.RUNNING, 5)


def test_nothing_left_is_gone(paths: Paths):
    assert standing(paths, fake(), running_task()).kind == Where.GONE


def test_interrupted_stops_the_leftovers_and_records_the_attempt_as_not_counting(paths: Paths):
    store = StateStore(paths)
    st = store.update("auth", "1", state=State.IN_PROGRESS, attempt=2, attempts_used=1, session=SESSION, agent_token=77)
    ex = FakeExecutor()
    after = interrupted(paths, cast(Executor, ex), st, 2.5, report=lambda line: None)
    assert ex.stopped == [(AgentRef(str(paths.root), "auth:1", 2, SESSION, 77), 2.5, True)]
    assert (after.state, after.reason, after.attempts_used) == (State.FAILED, INTERRUPTED, 0)
    assert store.read("auth", "1") == after
