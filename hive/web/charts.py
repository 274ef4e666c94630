"""The geometry of the dashboard's two charts, drawn server-side as SVG by the templates: the
timeline (one row per worker, a bar per phase of each attempt, like Bazel's profile) and the
spend over time (a step line of the cost of each attempt as it ended)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from hive.output import duration
from hive.reports.timeline import Span, workers

WIDTH = 1000  # the drawing's width in SVG units (the page scales it)
ROW = 24
LABEL = 44  # the left column with the workers' names
AXIS = 18
TICKS = 6
MIN_LABEL = 46  # a bar narrower than this shows its task on hover only


@dataclass(frozen=True)
class Bar:
    row: int
    x: float
    width: float
    phase: str
    task: str
    label: str  # shown in the bar when it is wide enough ("" otherwise)
    tooltip: str

    @property
    def y(self) -> int:
        return AXIS + self.row * ROW + 3


@dataclass(frozen=True)
class Timeline:
    workers: tuple[str, ...]
    bars: tuple[Bar, ...]
    ticks: tuple[tuple[float, str], ...]  # x, the time there
    width: int = WIDTH
    row: int = ROW
    axis: int = AXIS
    left: int = LABEL

    @property
    def height(self) -> int:
        return AXIS + max(len(self.workers), 1) * ROW + 4


def timeline(spans: Sequence[Span]) -> Timeline:
    rows = workers(spans)
    if not spans:
        return Timeline((), (), ())
    start = min(s.start for s in spans)
    end = max(s.end for s in spans)
    scale = (WIDTH - LABEL - 4) / max(end - start, 1.0)
    index = {w: n for n, w in enumerate(rows)}
    bars = []
    for s in spans:
        x, w = LABEL + (s.start - start) * scale, max((s.end - s.start) * scale, 1.0)
        took = duration(s.end - s.start)
        bars.append(
            Bar(
                index[s.worker],
                round(x, 1),
                round(w, 1),
                s.phase,
                s.task,
                s.task if w >= MIN_LABEL and s.phase == "agent" else "",
                f"{s.task} attempt {s.attempt}: {s.phase} {took}" + ("" if s.outcome else " (running)"),
            )
        )
    # the first tick says when; the others how long after (a short run's ticks would all read the same clock)
    ticks = tuple(
        (
            round(LABEL + i * (WIDTH - LABEL - 4) / TICKS, 1),
            _clock(start) if i == 0 else f"+{_after(i * (end - start) / TICKS)}",
        )
        for i in range(TICKS + 1)
    )
    return Timeline(tuple(rows), tuple(bars), ticks)


@dataclass(frozen=True)
class Curve:
    points: str  # an SVG polyline's points ("" when nothing was spent)
    total: float
    first: str  # the time of the first spend, and of the last
    last: str
    width: int = WIDTH
    height: int = 90


def spend_curve(spent: Sequence[tuple[float, float]], height: int = 90) -> Curve:
    """`spent`: (when, USD) of each attempt's cost; a step line of their running sum."""
    spent = sorted((at, usd) for at, usd in spent if usd > 0)
    if not spent:
        return Curve("", 0.0, "", "")
    start, end = spent[0][0], max(spent[-1][0], spent[0][0] + 1.0)
    total = sum(usd for _, usd in spent)

    def x_of(at: float) -> float:
        return (at - start) / (end - start) * (WIDTH - 8) + 4

    def y_of(usd: float) -> float:
        return height - 4 - usd / total * (height - 12)

    points, running = [f"{x_of(start):.1f},{height - 4}"], 0.0
    for at, usd in spent:
        points.append(f"{x_of(at):.1f},{y_of(running):.1f}")
        running += usd
        points.append(f"{x_of(at):.1f},{y_of(running):.1f}")
    return Curve(" ".join(points), total, _clock(start), _clock(end), height=height)


def _after(seconds: float) -> str:
    return duration(round(seconds, 1) if seconds < 10 else round(seconds))


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))
