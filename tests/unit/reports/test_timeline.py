"""hive/reports/timeline.py and trace.py: each attempt cut into its phases from what Hive records
(its state's history, the events log's marks, its agent's signal), and the Chrome trace of it."""

from __future__ import annotations

import json
from pathlib import Path

from hive.reports import timeline, trace
from hive.reports.timeline import Attempt, Phase, Span
from hive.store.files import append_line, atomic_write
from hive.store.paths import Paths
from hive.store.state import TaskState


def test_an_attempt_is_cut_at_its_marks_and_its_signal_each_phase_lasting_until_the_next():
    a = Attempt("p:1", 1, "w1", 100.0, 110.0, "done")
    marks = {"spawned": 101.0, "checking": 106.5, "merging": 109.0}
    spans = timeline.split(a, marks, signalled=105.0)
    assert [(s.phase, s.start, s.end) for s in spans] == [
        (Phase.SETUP, 100.0, 101.0),
        (Phase.AGENT, 101.0, 105.0),
        (Phase.QUEUE, 105.0, 106.5),
        (Phase.CHECK, 106.5, 109.0),
        (Phase.MERGE, 109.0, 110.0),
    ]


def test_without_a_checking_mark_the_time_after_the_signal_is_all_check():
    """Events an older Hive wrote have no `checking` mark: no queue is made up."""
    spans = timeline.split(Attempt("p:1", 1, "w1", 0.0, 10.0, "done"), {"spawned": 1.0, "merging": 9.0}, 4.0)
    assert [s.phase for s in spans] == [Phase.SETUP, Phase.AGENT, Phase.CHECK, Phase.MERGE]


def test_an_attempt_that_failed_in_its_agent_is_setup_and_agent_and_a_running_one_ends_now():
    failed = timeline.split(Attempt("p:1", 1, "w2", 0.0, 8.0, "failed"), {"spawned": 0.5}, 0.0)
    assert [(s.phase, s.end) for s in failed] == [(Phase.SETUP, 0.5), (Phase.AGENT, 8.0)]
    running = timeline.split(Attempt("p:2", 1, "w1", 0.0, 3.0, ""), {"spawned": 1.0}, 0.0)
    assert running[-1].running and running[-1].end == 3.0


def _state(paths: Paths, st: TaskState) -> None:
    atomic_write(paths.state_file(st.plan, st.id), st.to_json())


def test_spans_read_the_history_the_events_and_the_signal_files(tmp_path: Path):
    paths = Paths(tmp_path)
    done = TaskState(
        "p",
        "1",
        state="done",
        attempt=2,
        history=(
            {"attempt": 1, "worker": "w1", "started_at": 10.0, "finished_at": 14.0, "outcome": "failed"},
            {"attempt": 2, "worker": "w2", "started_at": 20.0, "finished_at": 30.0, "outcome": "done"},
        ),
    )
    running = TaskState("p", "2", state="in_progress", attempt=1, worker="w1", started_at=25.0)
    checkpoint = TaskState("p", "3", state="awaiting_human")  # never ran on a worker
    for st in (done, running, checkpoint):
        _state(paths, st)
    for task, attempt, event, at in (("p:1", 1, "spawned", 11.0), ("p:1", 2, "spawned", 21.0),
                                      ("p:1", 2, "checking", 27.0), ("p:1", 2, "merging", 29.0),
                                      ("p:2", 1, "spawned", 26.0), ("p:2", 1, "in_progress", 25.0)):  # fmt: skip
        append_line(paths.events, json.dumps({"time": at, "task": task, "attempt": attempt, "event": event}))
    append_line(paths.events, "not json, as a torn last line after a kill -9 might be")
    atomic_write(paths.signal_file("p", "1", 2), json.dumps({"signal": "done", "time": 25.0}))
    states = {st.key: st for st in (done, running, checkpoint)}
    spans = timeline.spans(paths, states, now=40.0)
    got = [(s.task, s.attempt, s.worker, s.phase, s.start, s.end) for s in spans]
    assert got == [
        ("p:1", 1, "w1", Phase.SETUP, 10.0, 11.0),
        ("p:1", 1, "w1", Phase.AGENT, 11.0, 14.0),
        ("p:1", 2, "w2", Phase.SETUP, 20.0, 21.0),
        ("p:1", 2, "w2", Phase.AGENT, 21.0, 25.0),
        ("p:2", 1, "w1", Phase.SETUP, 25.0, 26.0),
        ("p:1", 2, "w2", Phase.QUEUE, 25.0, 27.0),
        ("p:2", 1, "w1", Phase.AGENT, 26.0, 40.0),
        ("p:1", 2, "w2", Phase.CHECK, 27.0, 29.0),
        ("p:1", 2, "w2", Phase.MERGE, 29.0, 30.0),
    ]
    assert timeline.workers(spans) == ["w1", "w2"]


def test_workers_are_ordered_by_number():
    spans = [Span(w, "p:1", 1, Phase.AGENT, 0.0, 1.0, "done") for w in ("w10", "w2", "node-a", "w1")]
    assert timeline.workers(spans) == ["w1", "w2", "w10", "node-a"]


def test_the_trace_is_chrome_trace_event_json_one_thread_per_worker_in_microseconds_from_the_first():
    spans = [
        Span("w1", "p:1", 1, Phase.AGENT, 100.0, 102.5, "done"),
        Span("w2", "p:2", 1, Phase.MERGE, 101.0, 101.25, ""),
    ]
    doc = json.loads(json.dumps(trace.trace(spans, "hive shop")))
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
    assert names == {1: "w1", 2: "w2"}
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert slices == [
        {"name": "p:1 agent", "cat": "agent", "ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 2_500_000,
         "args": {"task": "p:1", "attempt": 1, "outcome": "done"}},
        {"name": "p:2 merge", "cat": "merge", "ph": "X", "pid": 1, "tid": 2, "ts": 1_000_000, "dur": 250_000,
         "args": {"task": "p:2", "attempt": 1, "outcome": "running"}},
    ]  # fmt: skip
    assert doc["otherData"] == {"title": "hive shop", "origin_unix_s": 100.0}
