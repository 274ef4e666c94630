"""The run as bars over time: each attempt of each task on the worker that ran it, split into its
phases — setup (worktree and brief), agent, queue (waiting for its turn in the merge queue), check
(the merged result built and checked), review (a reviewer agent reads it) and merge (main moved).
Read from what Hive already keeps: the attempts in each task's state, the phase marks in
`.hive/events.jsonl` and the time in each attempt's signal file. `hive timeline` prints it or
exports it (reports.trace); `hive web` draws it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from hive.lifecycle import State
from hive.store import agent_signals
from hive.store.paths import Paths
from hive.store.state import TaskState


class Phase(StrEnum):
    SETUP = "setup"
    AGENT = "agent"
    QUEUE = "queue"
    CHECK = "check"
    REVIEW = "review"  # a reviewer agent reads its change (engine/review.py)
    MERGE = "merge"


# the event that starts each phase after the first (the attempt's claim starts `setup`)
_MARKS = {"spawned": Phase.AGENT, "checking": Phase.CHECK, "reviewing": Phase.REVIEW, "merging": Phase.MERGE}


@dataclass(frozen=True)
class Span:
    worker: str
    task: str  # plan:ID
    attempt: int
    phase: Phase
    start: float
    end: float
    outcome: str = ""  # how its attempt ended ("" while it runs)

    @property
    def running(self) -> bool:
        return not self.outcome


@dataclass(frozen=True)
class Attempt:
    """One attempt as the state keeps it: where and when it ran, and how it ended."""

    task: str
    number: int
    worker: str
    start: float
    end: float
    outcome: str  # "" while it runs


def attempts(states: Iterable[TaskState], now: float) -> list[Attempt]:
    """Every attempt that ran on a worker (a checkpoint never does), the running ones up to `now`."""
    found = []
    for st in states:
        for h in st.history:
            if h.get("worker") and h.get("started_at"):
                end = float(h.get("finished_at") or h["started_at"])
                found.append(Attempt(st.key, int(h.get("attempt", 0)), h["worker"], h["started_at"], end, h["outcome"]))
        if st.state == State.IN_PROGRESS and st.worker and st.started_at:
            found.append(Attempt(st.key, st.attempt, st.worker, st.started_at, max(now, st.started_at), ""))
    return found


def marks(events: Path) -> dict[tuple[str, int], dict[str, float]]:
    """(task, attempt) -> the first time of each phase mark (`_MARKS`) in the events log."""
    out: dict[tuple[str, int], dict[str, float]] = {}
    try:
        lines = events.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return out
    for line in lines:
        if not any(f'"{mark}"' in line for mark in _MARKS):
            continue  # most lines are state changes: skip them unparsed
        try:
            e = json.loads(line)
            key, event, at = (str(e["task"]), int(e["attempt"])), str(e["event"]), float(e["time"])
        except (ValueError, KeyError, TypeError):
            continue
        if event in _MARKS:
            out.setdefault(key, {}).setdefault(event, at)
    return out


def spans(
    paths: Paths, states: Mapping[str, TaskState], now: float, signals: dict[tuple[str, int], float] | None = None
) -> list[Span]:
    """Every phase of every attempt, oldest first. `signals`: each finished attempt's signal time
    as an earlier call read it, kept by a caller that asks again and again (the dashboard)."""
    seen = marks(paths.events)
    known = {} if signals is None else signals
    out: list[Span] = []
    for a in attempts(states.values(), now):
        signalled = known.get((a.task, a.number))
        if signalled is None:
            plan, _, task_id = a.task.partition(":")
            signal = agent_signals.read(paths.signal_file(plan, task_id, a.number))
            signalled = signal.time if signal else 0.0
            if a.outcome:  # a running attempt may signal yet
                known[(a.task, a.number)] = signalled
        out += split(a, seen.get((a.task, a.number), {}), signalled)
    return sorted(out, key=lambda s: (s.start, s.worker))


def split(a: Attempt, marked: Mapping[str, float], signalled: float) -> list[Span]:
    """One attempt cut at its phase marks: each phase lasts until the next one begins. Without a
    `checking` mark (a run by an older Hive) the time after the agent's signal is all `check`."""
    starts = [(a.start, Phase.SETUP)]
    starts += [(at, phase) for event, phase in _MARKS.items() if (at := marked.get(event))]
    if signalled:
        starts.append((signalled, Phase.QUEUE if "checking" in marked else Phase.CHECK))
    starts = sorted((min(max(at, a.start), a.end), phase) for at, phase in starts)
    ends = [at for at, _ in starts[1:]] + [a.end]
    return [
        Span(a.worker, a.task, a.number, phase, begin, end, a.outcome)
        for (begin, phase), end in zip(starts, ends, strict=True)
        if end > begin
    ]


def workers(spans: Iterable[Span]) -> list[str]:
    """The workers in order: w1, w2, ... (a worker named otherwise after them)."""
    names = {s.worker for s in spans}
    return sorted(names, key=lambda w: (0, int(w[1:]), w) if w[1:].isdigit() else (1, 0, w))
