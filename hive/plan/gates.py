"""Hard-stop gates: synthetic checkpoint tasks `<plan>:_gate-<ID>` that stop the
run after a task marked `<!-- checkpoint -->`, and (when switched on in [gates])
after the first batch and after dependency hubs. Dependents of the gated task
wait for the gate; a gate after `N-tests` also waits for `N-impl`, so a
test/implementation pair is never split."""

from __future__ import annotations

import dataclasses

import networkx as nx

from hive.lifecycle import TaskType
from hive.plan.model import Plan, Task
from hive.settings.config import Config

FIRST_BATCH = "_gate-first-batch"


def add_gates(plan: Plan, graph: nx.DiGraph, config: Config) -> Plan:
    """The plan with its gate tasks: dependencies live in `depends_on` only (the
    caller builds the graph again from them)."""
    gates: dict[str, tuple[tuple[str, ...], list[str]]] = {}  # gate id -> (after, reasons)
    for t in plan.tasks:
        reasons = []
        if t.hard_stop:
            reasons.append("<!-- checkpoint --> in the plan")
        if config.hub_threshold and graph.out_degree(t.id) >= config.hub_threshold:
            reasons.append(f"{graph.out_degree(t.id)} tasks depend on it")
        if reasons:
            gates[f"_gate-{t.id}"] = (_with_pair(plan, t.id), reasons)
    if config.gate_first_batch:
        roots = tuple(t.id for t in plan.tasks if graph.in_degree(t.id) == 0)
        gates[FIRST_BATCH] = (_close_pairs(plan, roots), ["first batch ([gates] first_batch)"])
    tasks = {t.id: t for t in plan.tasks}
    extra_deps: dict[str, list[str]] = {}
    gate_tasks = []
    for gid, (after, reasons) in gates.items():
        blocked = _blocked(plan, graph, gid, after)
        if not blocked:
            continue  # nothing waits behind it: the run ends there anyway
        for b in blocked:
            extra_deps.setdefault(b, []).append(gid)
        first = tasks[after[0]]
        gate_tasks.append(
            Task(
                id=gid,
                title=f"Review after {', '.join(after)} before going on",
                line=first.line,
                type=TaskType.GATE,
                depends_on=after,
                description="; ".join(reasons),
            )
        )
    if not gate_tasks:
        return plan
    new_tasks = tuple(
        dataclasses.replace(t, depends_on=t.depends_on + tuple(extra_deps.get(t.id, ()))) for t in plan.tasks
    ) + tuple(gate_tasks)
    return dataclasses.replace(plan, tasks=new_tasks)


def _with_pair(plan: Plan, task_id: str) -> tuple[str, ...]:
    """A gate after `N-tests` waits for `N-impl` as well."""
    if task_id.endswith("-tests"):
        impl = task_id[: -len("-tests")] + "-impl"
        if any(t.id == impl for t in plan.tasks):
            return task_id, impl
    return (task_id,)


def _close_pairs(plan: Plan, ids: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for i in ids:
        out += [x for x in _with_pair(plan, i) if x not in out]
    return tuple(out)


def _blocked(plan: Plan, graph: nx.DiGraph, gate_id: str, after: tuple[str, ...]) -> list[str]:
    if gate_id == FIRST_BATCH:
        return [t.id for t in plan.tasks if t.id not in after]
    return sorted({s for a in after for s in graph.successors(a)} - set(after))
