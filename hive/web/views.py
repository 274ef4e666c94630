"""The dashboard as records, read from Hive's files like `hive status` (reports.status does the
reading): what needs the human, each approved plan's DAG, the timeline, the cost. The templates
draw these; nothing here writes anything."""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hive.adapters.procfs import pid_alive
from hive.engine.limits import profile_pauses
from hive.lifecycle import Progress, State, TaskType
from hive.output import duration, first_line
from hive.plan import discovered
from hive.plan.model import Plan
from hive.project import Project, load_project
from hive.reports import status, tasklog, timeline
from hive.reports.status import TaskStatus
from hive.store import questions, usage
from hive.store.paths import Paths
from hive.store.state import StateCache, TaskState
from hive.web import attention, charts, layout
from hive.web.attention import Item, Spend

TITLE = 34  # characters of a title a node shows (the whole on hover and on its page)
DETAIL = 29  # its monospace line fits the node


@dataclass(frozen=True)
class Node:
    key: str
    id: str
    title: str  # cut to fit
    state: str
    type: str
    x: int
    y: int
    detail: str  # its second line: how long it runs and its last output line, its reason, its merge
    tooltip: str
    critical: bool
    skipped: bool


@dataclass(frozen=True)
class Edge:
    path: str
    critical: bool


@dataclass(frozen=True)
class Graph:
    plan: str
    title: str
    progress: Progress
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    width: int
    height: int
    critical: tuple[str, ...]  # the critical path's task keys, first to last
    node_w: int = layout.NODE_W
    node_h: int = layout.NODE_H


@dataclass(frozen=True)
class CostRow:
    key: str
    title: str
    tokens_in: int
    tokens_out: int
    cost_usd: float | None


@dataclass(frozen=True)
class Cost:
    rows: tuple[CostRow, ...]
    tokens_in: int
    tokens_out: int
    cost_usd: float | None  # None: some tokens were used at a price nobody knew
    spend: Spend
    task_cap: float
    curve: charts.Curve


@dataclass(frozen=True)
class Run:
    pid: int  # the latest run's (0: none began yet)
    started: float
    going: bool


@dataclass(frozen=True)
class Dashboard:
    name: str
    progress: Progress
    counts: dict[str, int]
    run: Run
    items: tuple[Item, ...]
    graphs: tuple[Graph, ...]
    drafts: tuple[str, ...]
    timeline: charts.Timeline
    cost: Cost
    running: tuple[str, ...]  # the keys of the tasks in progress
    errors: tuple[str, ...] = ()  # the problems of approved plans not shown (they do not parse)


@dataclass
class Cache:
    """What one server keeps between two drawings of its dashboard: each state as last read, and
    each finished attempt's signal time (a 1,000-task plan is read anew at each change otherwise)."""

    states: StateCache
    signals: dict[tuple[str, int], float] = field(default_factory=dict)


def dashboard(root: Path, cache: Cache | None = None) -> Dashboard:
    project = load_project(root, strict=False)
    paths = Paths(root)
    now = time.time()
    cache = cache or Cache(StateCache(paths))
    states = cache.states.read_all()
    rows = status.collect(root, project, states)
    started, pid = usage.last_run(paths)
    spend = Spend(usage.totals_of(states.values(), since=started).cost_usd, project.config.budget_run_usd, started)
    approved = [p for p in project.plans.plans if p.approved]
    by_plan = {p.name: [r for r in rows if r.plan == p.name] for p in approved}
    return Dashboard(
        name=root.name,
        progress=status.plan_progress(rows),
        counts=status.counts([r for r in rows if not r.draft]),
        run=Run(pid, started, bool(pid) and pid_alive(pid)),
        items=tuple(_attention(project, paths, rows, states, spend, now)),
        graphs=tuple(graph(p, by_plan[p.name], states, paths, now) for p in approved),
        drafts=tuple(p.name for p in project.plans.plans if not p.approved),
        timeline=charts.timeline(timeline.spans(paths, states, now, cache.signals)),
        cost=_cost(rows, states, spend, project.config.budget_task_usd),
        running=tuple(r.key for r in rows if r.state == State.IN_PROGRESS),
        errors=project.plans.errors,
    )


def _attention(
    project: Project, paths: Paths, rows: list[TaskStatus], states: Mapping[str, TaskState], spend: Spend, now: float
) -> list[Item]:
    asked = _waiting(paths, {r.key: (r.plan, r.id) for r in rows if r.question})
    pauses = [(h.profile, h.until, h.reason) for h in profile_pauses(paths)]
    found = [(d, _mtime(d.path)) for d in discovered.pending(paths)]
    extra = attention.paused_profiles(pauses, now) + attention.budget(spend) + attention.discovered(found)
    return attention.items(project.plans.plans, rows, states, asked, project.config.budget_task_usd, extra)


def _waiting(paths: Paths, asking: Mapping[str, tuple[str, str]]) -> dict[str, questions.Question]:
    found = questions.waiting_questions(paths, asking.values())
    return {key: found[task] for key, task in asking.items() if task in found}


def graph(plan: Plan, rows: Sequence[TaskStatus], states: Mapping[str, TaskState], paths: Paths, now: float) -> Graph:
    by_id = {r.id: r for r in rows}
    placed = layout.layout([(t.id, t.depends_on) for t in plan.tasks], _weights(plan, states, now))
    critical = set(placed.critical)
    nodes = []
    for t in plan.tasks:
        row, at = by_id[t.id], placed.nodes[t.id]
        nodes.append(
            Node(
                row.key,
                t.id,
                _cut(t.title, TITLE),
                row.state,
                t.type,
                at.x,
                at.y,
                _cut(_detail(row, paths), DETAIL),
                f"{row.key} {t.title} — {row.state}" + (f": {first_line(row.reason)}" if row.reason else ""),
                t.id in critical,
                bool(row.skipped_because),
            )
        )
    edges = tuple(
        Edge(layout.edge_path(placed.nodes[a], placed.nodes[b]), placed.on_critical_path(a, b)) for a, b in placed.edges
    )
    return Graph(
        plan.name,
        plan.title,
        status.plan_progress(list(rows)),
        tuple(nodes),
        edges,
        placed.width,
        placed.height,
        tuple(plan.key(i) for i in placed.critical),
    )


def _weights(plan: Plan, states: Mapping[str, TaskState], now: float) -> dict[str, float]:
    """How long each task took, takes so far, or (not run yet) may take: the median of those
    that ran. A checkpoint's wait for its human is not work: it weighs nothing."""
    took: dict[str, float] = {}
    for t in plan.tasks:
        st = states.get(plan.key(t.id))
        if st is None:
            continue
        spent = sum(float(h.get("finished_at") or 0) - float(h.get("started_at") or 0) for h in st.history)
        if st.state == State.IN_PROGRESS and st.started_at:
            spent += now - st.started_at
        if spent > 0:
            took[t.id] = spent
    guess = statistics.median(took.values()) if took else 1.0
    return {t.id: 0.0 if TaskType(t.type).is_checkpoint else took.get(t.id, guess) for t in plan.tasks}


def _detail(row: TaskStatus, paths: Paths) -> str:
    if row.state == State.IN_PROGRESS:
        last = tasklog.last_line(paths.log_file(row.plan, row.id))
        return " · ".join(p for p in (duration(row.elapsed or 0.0), last) if p)
    if row.state == State.DONE and TaskType(row.type).is_checkpoint:
        return first_line(row.reason)  # what the human answered: it merged nothing
    if row.state == State.DONE and row.commit:
        return f"merged {row.commit[:10]}"
    if row.skipped_because:
        return f"waits for {', '.join(row.skipped_because)}"
    return first_line(row.reason)


def _cost(rows: Sequence[TaskStatus], states: Mapping[str, TaskState], spend: Spend, task_cap: float) -> Cost:
    spent = [r for r in rows if r.tokens_in or r.tokens_out or r.cost_usd]
    ordered = sorted(spent, key=lambda r: (-(r.cost_usd or 0.0), r.key))
    total = status.totals(list(rows))
    points = [
        (float(h.get("finished_at") or 0), float(h["usage"].get("cost_usd") or 0))
        for st in states.values()
        for h in st.history
        if h.get("usage")
    ]
    points += [(st.updated_at, float(st.usage.get("cost_usd") or 0)) for st in states.values() if st.usage]
    return Cost(
        tuple(CostRow(r.key, r.title, r.tokens_in, r.tokens_out, r.cost_usd) for r in ordered),
        total["tokens_in"],
        total["tokens_out"],
        total["cost_usd"],
        spend,
        task_cap,
        charts.spend_curve(points),
    )


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
