"""Plans → validated networkx DAGs, and the order doit should see them in."""

from __future__ import annotations

from pathlib import Path

import networkx as nx

from hive.plan.gates import add_gates
from hive.plan.model import NO_REVIEW, Plan, Task
from hive.plan.parser import display_path, parse_plan
from hive.settings.config import Config


def build_graph(plan: Plan) -> tuple[nx.DiGraph, list[str]]:
    """Edges point from a dependency to its dependent."""
    g = nx.DiGraph()
    problems = []
    for t in plan.tasks:
        g.add_node(t.id, task=t)
    for t in plan.tasks:
        for dep in t.depends_on:
            if dep not in g:
                problems.append(
                    f"{display_path(plan.path)}:{t.line_of('depends_on')}: task {t.id} depends on "
                    f"unknown task {dep!r}; known IDs: {', '.join(g.nodes) or 'none'}"
                )
            elif dep == t.id:
                problems.append(f"{display_path(plan.path)}:{t.line_of('depends_on')}: task {t.id} depends on itself")
            else:
                g.add_edge(dep, t.id)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        cycle = None
    if cycle:
        path = " → ".join([u for u, _ in cycle] + [cycle[0][0]])
        first = plan.task(cycle[0][1])
        problems.append(
            f"{display_path(plan.path)}:{first.line_of('depends_on')}: dependency cycle: {path}; "
            f"remove one of these dependencies"
        )
    return g, problems


def check_agents(plan: Plan, config: Config) -> list[str]:
    known = set(config.agents)
    problems = []
    if plan.agent and plan.agent not in known:
        problems.append(
            f"{display_path(plan.path)}:1: front matter agent: {plan.agent!r} is not a known agent "
            f"profile; known: {', '.join(sorted(known))} (add [agents.{plan.agent}] to .hive/config.toml)"
        )
    if plan.review and plan.review != NO_REVIEW and plan.review not in known:
        problems.append(
            f"{display_path(plan.path)}:1: front matter review: {plan.review!r} is not a known agent profile; "
            f"known: {', '.join(sorted(known))}, or none (add [agents.{plan.review}] to .hive/config.toml)"
        )
    for t in plan.tasks:
        if t.agent and t.agent not in known:
            problems.append(
                f"{display_path(plan.path)}:{t.line_of('agent')}: task {t.id}: unknown Agent {t.agent!r}; "
                f"known: {', '.join(sorted(known))} (add [agents.{t.agent}] to .hive/config.toml)"
            )
        if t.review and t.review != NO_REVIEW and t.review not in known:
            problems.append(
                f"{display_path(plan.path)}:{t.line_of('review')}: task {t.id}: unknown Review profile "
                f"{t.review!r}; known: {', '.join(sorted(known))}, or none "
                f"(add [agents.{t.review}] to .hive/config.toml)"
            )
    return problems


def load_plan(path: Path, config: Config, text: str | None = None) -> tuple[Plan, nx.DiGraph, list[str]]:
    """Parse and check one plan: the file, or `text` as that file would read (a change
    is checked before it is written: `hive plan --split`)."""
    plan, problems = parse_plan(path, text)
    graph, graph_problems = build_graph(plan)
    return plan, graph, in_line_order(problems + graph_problems + check_agents(plan, config))


def in_line_order(problems: list[str]) -> list[str]:
    """`file:line: …` problems top to bottom, as the user reads the file (issue 43: they were
    printed in the order the checks ran); one without a line stays in its place at the end."""

    def line(problem: str) -> int:
        parts = problem.split(":", 2)
        return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 1 << 30

    return sorted(problems, key=line)


def compile_plan(path: Path, config: Config) -> tuple[Plan, tuple[str, ...], list[str]]:
    """Parse and validate one plan file, add its gates, and order its tasks for doit.
    Returns (plan, task order, problems)."""
    plan, graph, problems = load_plan(path, config)
    if problems:
        return plan, (), problems
    gated = add_gates(plan, graph, config)
    if gated.tasks != plan.tasks:  # gates are off by default: most plans need no second graph
        graph, _ = build_graph(gated)
    return gated, tuple(t.id for t in priority_order(gated, graph)), []


def priority_order(plan: Plan, graph: nx.DiGraph) -> list[Task]:
    """A topological order that prefers the longest remaining path (then Priority,
    then plan order): doit starts ready tasks greedily in definition order, so this
    keeps the critical path busy."""
    remaining: dict[str, int] = {}
    for node in reversed(list(nx.topological_sort(graph))):
        remaining[node] = 1 + max((remaining[s] for s in graph.successors(node)), default=0)
    index = {t.id: i for i, t in enumerate(plan.tasks)}
    key = {t.id: (-remaining[t.id], -t.priority, index[t.id]) for t in plan.tasks}
    order = list(nx.lexicographical_topological_sort(graph, key=lambda n: key[n]))
    return [graph.nodes[n]["task"] for n in order]
