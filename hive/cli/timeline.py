"""`hive timeline`: each attempt on its worker, phase by phase; `--trace FILE` writes the same as
Chrome Trace Event JSON for chrome://tracing or Perfetto."""

from __future__ import annotations

import argparse
import json
import time
from itertools import groupby
from pathlib import Path

from hive.output import duration
from hive.reports import timeline, trace
from hive.store.files import atomic_write
from hive.store.paths import Paths, find_root
from hive.store.state import StateStore


def run(args: argparse.Namespace) -> int:
    root = find_root()
    paths = Paths(root)
    spans = timeline.spans(paths, StateStore(paths).read_all(), time.time())
    if args.trace:
        out = Path(args.trace)
        atomic_write(out, json.dumps(trace.trace(spans, f"hive {root.name}"), indent=1))
        print(f"hive: wrote {len(spans)} phase(s) of {len(timeline.workers(spans))} worker(s) to {out}")
        print("hive: open it in https://ui.perfetto.dev or chrome://tracing")
        return 0
    if not spans:
        print("hive: no attempt has run yet")
    for line in lines(spans):
        print(line)
    return 0


def lines(spans: list[timeline.Span]) -> list[str]:
    """One line per attempt, by worker: when it began, how long each phase took, how it ended."""
    out = []
    order = {w: n for n, w in enumerate(timeline.workers(spans))}
    ordered = sorted(spans, key=lambda s: (order[s.worker], s.start))
    for (worker, task, attempt), group in groupby(ordered, key=lambda s: (s.worker, s.task, s.attempt)):
        phases = list(group)
        began = time.strftime("%H:%M:%S", time.localtime(phases[0].start))
        took = duration(phases[-1].end - phases[0].start)
        steps = " · ".join(f"{s.phase} {duration(s.end - s.start)}" for s in phases)
        out.append(f"{worker:<4} {began}  {task} #{attempt}  {took:>6}  {steps}  {phases[-1].outcome or 'running'}")
    return out
