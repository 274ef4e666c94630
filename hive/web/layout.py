"""A plan's DAG laid out for drawing: each task in the column of its dependency depth (the
longest chain of dependencies before it), the tasks of a column ordered to keep edges short
(a few barycenter sweeps, as Sugiyama-style layouts do), and the critical path — the chain of
tasks whose durations add up to the most — found on the way. Pure: it knows ids, dependencies
and weights, not states or HTML."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

NODE_W = 210
NODE_H = 54
GAP_X = 56
GAP_Y = 14
MARGIN = 10
SWEEPS = 4  # down, up, down, up: enough to settle a plan's few crossings


@dataclass(frozen=True)
class Placed:
    id: str
    column: int
    row: int

    @property
    def x(self) -> int:
        return MARGIN + self.column * (NODE_W + GAP_X)

    @property
    def y(self) -> int:
        return MARGIN + self.row * (NODE_H + GAP_Y)


@dataclass(frozen=True)
class Layout:
    nodes: dict[str, Placed]
    edges: tuple[tuple[str, str], ...]  # (dependency, dependent)
    critical: tuple[str, ...]  # the critical path's tasks, first to last

    @property
    def width(self) -> int:
        return 2 * MARGIN + max((p.column + 1 for p in self.nodes.values()), default=0) * (NODE_W + GAP_X) - GAP_X

    @property
    def height(self) -> int:
        return 2 * MARGIN + max((p.row + 1 for p in self.nodes.values()), default=0) * (NODE_H + GAP_Y) - GAP_Y

    def on_critical_path(self, src: str, dst: str) -> bool:
        return (src, dst) in self._critical_edges

    @functools.cached_property
    def _critical_edges(self) -> frozenset[tuple[str, str]]:
        return frozenset(zip(self.critical, self.critical[1:], strict=False))


def layout(tasks: Sequence[tuple[str, Sequence[str]]], weights: Mapping[str, float]) -> Layout:
    """`tasks`: (id, its dependencies) in plan order, dependencies before dependents or not;
    `weights`: how long each takes (missing: 1)."""
    deps = {tid: tuple(d for d in ds if d != tid) for tid, ds in tasks}
    known = set(deps)
    deps = {tid: tuple(d for d in ds if d in known) for tid, ds in deps.items()}
    order, loops = _topological(deps)
    deps = {tid: tuple(d for d in ds if (tid, d) not in loops) for tid, ds in deps.items()}
    depth: dict[str, int] = {}
    for tid in order:
        depth[tid] = 1 + max((depth[d] for d in deps[tid]), default=-1)
    columns: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for tid, _ in tasks:
        columns[depth[tid]].append(tid)
    dependents: dict[str, list[str]] = {tid: [] for tid in deps}
    for tid, ds in deps.items():
        for d in ds:
            dependents[d].append(tid)
    _sweep(columns, deps, dependents)
    nodes = {tid: Placed(tid, c, r) for c, column in enumerate(columns) for r, tid in enumerate(column)}
    edges = tuple((d, tid) for tid, _ in tasks for d in deps[tid])
    return Layout(nodes, edges, _critical(order, deps, weights))


def _topological(deps: Mapping[str, Sequence[str]]) -> tuple[list[str], set[tuple[str, str]]]:
    """Dependencies first, and the dependencies that close a cycle (which a valid plan has not:
    each is left out where it is met)."""
    out: list[str] = []
    loops: set[tuple[str, str]] = set()
    state: dict[str, int] = {}  # 1: being visited, 2: done
    for start in deps:
        stack = [(start, iter(deps[start]))]
        state.setdefault(start, 1)
        if state[start] == 2:
            continue
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                state[node] = 2
                out.append(node)
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(deps[child])))
            elif state[child] == 1:
                loops.add((node, child))
    return out, loops


def _sweep(
    columns: list[list[str]], deps: Mapping[str, Sequence[str]], dependents: Mapping[str, Sequence[str]]
) -> None:
    """Order each column by the mean row of its neighbours in the column before (sweeping
    down) or after (sweeping up); a task without such neighbours keeps its place."""
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        indices = range(1, len(columns)) if down else range(len(columns) - 2, -1, -1)
        for c in indices:
            neighbour = columns[c - 1] if down else columns[c + 1]
            row = {tid: r for r, tid in enumerate(neighbour)}
            links = deps if down else dependents

            def centre(
                tid: str, r: int, row: dict[str, int] = row, links: Mapping[str, Sequence[str]] = links
            ) -> float:
                near = [row[n] for n in links[tid] if n in row]
                return sum(near) / len(near) if near else float(r)

            columns[c] = [tid for _, _, tid in sorted((centre(t, r), r, t) for r, t in enumerate(columns[c]))]


def _critical(order: Sequence[str], deps: Mapping[str, Sequence[str]], weights: Mapping[str, float]) -> tuple[str, ...]:
    """The chain with the largest total weight (ties: the one met first in plan order)."""
    total: dict[str, float] = {}
    via: dict[str, str | None] = {}
    for tid in order:
        before = max(deps[tid], key=lambda d: total[d], default=None)
        total[tid] = weights.get(tid, 1.0) + (total[before] if before is not None else 0.0)
        via[tid] = before
    if not total:
        return ()
    node: str | None = max(order, key=lambda t: total[t])
    chain = []
    while node is not None:
        chain.append(node)
        node = via[node]
    return tuple(reversed(chain))


def edge_path(src: Placed, dst: Placed) -> str:
    """An SVG path from the right of `src` to the left of `dst`, as a gentle S."""
    x1, y1 = src.x + NODE_W, src.y + NODE_H / 2
    x2, y2 = dst.x, dst.y + NODE_H / 2
    bend = max((x2 - x1) / 2, 20)
    return f"M{x1:.0f},{y1:.0f} C{x1 + bend:.0f},{y1:.0f} {x2 - bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}"
