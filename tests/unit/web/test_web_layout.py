"""hive/web/layout.py: a plan's DAG in columns by dependency depth, few crossings, and the
critical path as the chain of the largest total weight."""

from __future__ import annotations

import time

from hive.web import layout
from hive.web.layout import NODE_H, NODE_W, Layout


def crossings(placed: Layout) -> int:
    """Edges between the same two columns that cross each other."""
    lines = [(placed.nodes[a], placed.nodes[b]) for a, b in placed.edges]
    count = 0
    for i, (a1, b1) in enumerate(lines):
        for a2, b2 in lines[i + 1 :]:
            if a1.column == a2.column and b1.column == b2.column:
                count += (a1.row - a2.row) * (b1.row - b2.row) < 0
    return count


def test_each_task_is_in_the_column_of_its_longest_chain_of_dependencies():
    placed = layout.layout([("1", ()), ("2", ("1",)), ("3", ("1", "2")), ("4", ())], {})
    assert {t: p.column for t, p in placed.nodes.items()} == {"1": 0, "2": 1, "3": 2, "4": 0}
    assert placed.edges == (("1", "2"), ("1", "3"), ("2", "3"))
    # nodes do not overlap: one column apart by at least a node's width, rows by its height
    spots = {(p.x, p.y) for p in placed.nodes.values()}
    assert len(spots) == 4
    assert placed.nodes["2"].x - placed.nodes["1"].x >= NODE_W and placed.nodes["4"].y - placed.nodes["1"].y >= NODE_H
    assert placed.width >= 3 * NODE_W and placed.height >= 2 * NODE_H


def test_the_sweeps_undo_crossings_the_plan_order_would_draw():
    # a1 -> b2 and a2 -> b1 in plan order cross; the layout puts b1 and b2 the other way round
    tasks = [("a1", ()), ("a2", ()), ("b1", ("a2",)), ("b2", ("a1",)), ("c", ("b1", "b2"))]
    naive = Layout({t: layout.Placed(t, c, r) for t, c, r in
                    [("a1", 0, 0), ("a2", 0, 1), ("b1", 1, 0), ("b2", 1, 1), ("c", 2, 0)]},
                   (("a2", "b1"), ("a1", "b2"), ("b1", "c"), ("b2", "c")), ())  # fmt: skip
    assert crossings(naive) == 1
    assert crossings(layout.layout(tasks, {})) == 0


def test_the_critical_path_is_the_heaviest_chain_not_the_longest():
    tasks = [("a", ()), ("b", ("a",)), ("c", ("b",)), ("slow", ()), ("end", ("c", "slow"))]
    assert layout.layout(tasks, {}).critical == ("a", "b", "c", "end")  # equal weights: the most tasks
    heavy = layout.layout(tasks, {"slow": 10.0})
    assert heavy.critical == ("slow", "end")
    assert heavy.on_critical_path("slow", "end") and not heavy.on_critical_path("c", "end")


def test_unknown_dependencies_and_a_cycle_do_not_stop_the_drawing():
    """A valid plan has neither; the dashboard still draws what it is given."""
    placed = layout.layout([("1", ("9",)), ("2", ("3",)), ("3", ("2",))], {})
    assert set(placed.nodes) == {"1", "2", "3"} and ("9", "1") not in placed.edges


def test_an_edge_runs_from_the_right_of_the_dependency_to_the_left_of_the_dependent():
    a, b = layout.Placed("a", 0, 0), layout.Placed("b", 1, 2)
    path = layout.edge_path(a, b)
    assert path.startswith(f"M{a.x + NODE_W},{a.y + NODE_H // 2} C")
    assert path.endswith(f"{b.x},{b.y + NODE_H // 2}")


def test_a_thousand_tasks_are_laid_out_quickly():
    tasks = [(str(i), tuple(str(d) for d in (i - 1, i // 2) if d > 0 and d != i)) for i in range(1, 1001)]
    began = time.perf_counter()
    placed = layout.layout(tasks, {})
    assert len(placed.nodes) == 1000
    assert time.perf_counter() - began < 1.0
