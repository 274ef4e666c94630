"""The timeline as Chrome's Trace Event format (the JSON chrome://tracing and Perfetto open): one
thread per worker, one complete event ("ph": "X") per phase of an attempt, in microseconds from
the first one. https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU"""

from __future__ import annotations

from typing import Any

from hive.reports.timeline import Span, workers

PID = 1  # one process: the run


def trace(spans: list[Span], title: str) -> dict[str, Any]:
    rows = workers(spans)
    tid = {w: n for n, w in enumerate(rows, 1)}
    origin = min((s.start for s in spans), default=0.0)
    events: list[dict[str, Any]] = [{"ph": "M", "pid": PID, "name": "process_name", "args": {"name": title}}]
    for w in rows:
        events.append({"ph": "M", "pid": PID, "tid": tid[w], "name": "thread_name", "args": {"name": w}})
        events.append(
            {"ph": "M", "pid": PID, "tid": tid[w], "name": "thread_sort_index", "args": {"sort_index": tid[w]}}
        )
    for s in spans:
        events.append(
            {
                "name": f"{s.task} {s.phase}",
                "cat": str(s.phase),
                "ph": "X",
                "pid": PID,
                "tid": tid[s.worker],
                "ts": round((s.start - origin) * 1e6),
                "dur": round((s.end - s.start) * 1e6),
                "args": {"task": s.task, "attempt": s.attempt, "outcome": s.outcome or "running"},
            }
        )
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"title": title, "origin_unix_s": origin}}
