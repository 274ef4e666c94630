"""Plans → validated DAGs: dependency checks, agent checks, loading plans/, critical-path order."""

from __future__ import annotations

import textwrap

import networkx as nx
import pytest

from hive.agent_clis.profile import AgentProfile
from hive.errors import HiveError
from hive.plan.cache import load_plans
from hive.plan.graph import build_graph, check_agents, load_plan, priority_order
from hive.plan.parser import parse_plan
from hive.settings.config import Config


def write(directory, name, body, status=None):
    directory.mkdir(parents=True, exist_ok=True)
    text = textwrap.dedent(body).lstrip("\n")
    if status:
        text = f"---\nstatus: {status}\n---\n" + text
    path = directory / f"{name}.md"
    path.write_text(text)
    return path


def graph_of(tmp_path, body):
    path = write(tmp_path, "p", body)
    plan, problems = parse_plan(path)
    assert problems == []
    graph, graph_problems = build_graph(plan)
    return plan, graph, graph_problems


def located(problems, path, line):
    return [p for p in problems if f"{path.name}:{line}:" in p]


# --- build_graph --------------------------------------------------------------------------------


def test_edges_point_from_dependency_to_dependent(tmp_path):
    plan, graph, problems = graph_of(
        tmp_path,
        """
        ### Task 1: A
        ### Task 2: B
        **Depends on:** 1
        ### Task 3: C
        **Depends on:** 1, 2
        """,
    )
    assert problems == []
    assert set(graph.edges) == {("1", "2"), ("1", "3"), ("2", "3")}
    assert graph.nodes["3"]["task"] is plan.task("3")


def test_unknown_dependency_names_file_line_and_the_unknown_id(tmp_path):
    plan, _, problems = graph_of(
        tmp_path,
        """
        ### Task 1: A

        ### Task 2: B
        **Depends on:** 1, 9
        """,
    )
    assert len(problems) == 1
    [msg] = located(problems, plan.path, 4)
    assert "task 2 depends on unknown task '9'" in msg and "known IDs: 1, 2" in msg


def test_self_dependency_is_an_error(tmp_path):
    plan, graph, problems = graph_of(tmp_path, "### Task 1: A\n**Depends on:** 1\n")
    [msg] = located(problems, plan.path, 2)
    assert "task 1 depends on itself" in msg
    assert graph.number_of_edges() == 0


def test_cycle_is_reported_with_its_path(tmp_path):
    plan, _, problems = graph_of(
        tmp_path,
        """
        ### Task 1: A
        **Depends on:** 3
        ### Task 2: B
        **Depends on:** 1
        ### Task 3: C
        **Depends on:** 2
        """,
    )
    assert len(problems) == 1
    assert "dependency cycle: 1 → 2 → 3 → 1" in problems[0]
    assert f"{plan.path.name}:" in problems[0]


def test_two_task_cycle_is_reported(tmp_path):
    _, _, problems = graph_of(tmp_path, "### Task a: A\n**Depends on:** b\n### Task b: B\n**Depends on:** a\n")
    assert len(problems) == 1
    assert "dependency cycle: a → b → a" in problems[0]


def test_cycle_is_reported_alongside_an_unknown_dependency(tmp_path):
    _, _, problems = graph_of(
        tmp_path,
        """
        ### Task 1: A
        **Depends on:** 2
        ### Task 2: B
        **Depends on:** 1
        ### Task 3: C
        **Depends on:** zz
        """,
    )
    assert any("unknown task 'zz'" in p for p in problems)
    assert any("dependency cycle: 1 → 2 → 1" in p for p in problems)


def test_plan_without_tasks_gives_an_empty_graph(tmp_path):
    plan, _ = parse_plan(write(tmp_path, "p", "# Just notes\n"))  # the parser reports "no tasks"
    graph, problems = build_graph(plan)
    assert problems == [] and graph.number_of_nodes() == 0


# --- check_agents / load_plan -------------------------------------------------------------------


def test_unknown_task_agent_is_an_error_listing_known_profiles(tmp_path):
    path = write(tmp_path, "p", "### Task 1: A\n**Module:** x\n**Agent:** robot\n")
    plan, _ = parse_plan(path)
    [msg] = check_agents(plan, Config())
    assert f"{path.name}:3:" in msg and "unknown Agent 'robot'" in msg
    assert "known: aider, claude, claude-interactive, codex, gemini" in msg


def test_unknown_front_matter_agent_is_an_error_at_line_one(tmp_path):
    path = write(tmp_path, "p", "---\nagent: robot\n---\n### Task 1: A\n")
    plan, _ = parse_plan(path)
    [msg] = check_agents(plan, Config())
    assert f"{path.name}:1:" in msg and "front matter agent: 'robot'" in msg and "claude" in msg


def test_agents_from_config_profiles_are_known(tmp_path):
    path = write(tmp_path, "p", "---\nagent: codex\n---\n### Task 1: A\n**Agent:** robot\n")
    plan, _ = parse_plan(path)
    config = Config(agents={**Config().agents, "robot": AgentProfile("robot", ("robot",))})
    assert check_agents(plan, config) == []
    assert len(check_agents(plan, Config())) == 1


def test_load_plan_collects_parse_graph_and_agent_problems(tmp_path):
    path = write(
        tmp_path,
        "p",
        """
        ### Task 1: A
        **Priority:** high
        ### Task 2: B
        **Depends on:** 7
        **Agent:** robot
        """,
    )
    _, graph, problems = load_plan(path, Config())
    assert len(problems) == 3, problems
    assert located(problems, path, 2) and located(problems, path, 4) and located(problems, path, 5)
    assert set(graph.nodes) == {"1", "2"}


# --- load_plans ---------------------------------------------------------------------------------

GOOD = "### Task 1: A\n### Task 2: B\n**Depends on:** 1\n"
BAD = "### Task 1: A\n**Depends on:** 9\n"


def test_load_plans_loads_every_plan_with_its_order(tmp_path):
    plans = tmp_path / "plans"
    write(plans, "auth", GOOD, status="approved")
    write(plans, "notes", GOOD)
    (plans / "README.txt").write_text("not a plan")
    ps = load_plans(plans, Config())
    assert [p.name for p in ps.plans] == ["auth", "notes"]
    assert ps.plan("auth").approved and not ps.plan("notes").approved
    assert ps.orders == {"auth": ("1", "2"), "notes": ("1", "2")}
    assert [t.id for t in ps.ordered(ps.plan("auth"))] == ["1", "2"]
    assert ps.warnings == ()


def test_load_plans_without_plans_directory_is_empty(tmp_path):
    ps = load_plans(tmp_path / "missing", Config())
    assert ps.plans == () and ps.orders == {} and ps.warnings == ()


def test_invalid_approved_plan_raises_with_every_problem(tmp_path):
    plans = tmp_path / "plans"
    write(plans, "good", GOOD, status="approved")
    path = write(plans, "bad", BAD + "### Task 3:\n", status="approved")
    with pytest.raises(HiveError) as err:
        load_plans(plans, Config())
    assert len(err.value.problems) == 2
    assert any(f"{path.name}:5:" in p and "unknown task '9'" in p for p in err.value.problems)
    assert any(f"{path.name}:6:" in p and "no title" in p for p in err.value.problems)


def test_invalid_draft_plan_only_warns_and_is_left_out(tmp_path):
    plans = tmp_path / "plans"
    write(plans, "good", GOOD, status="approved")
    path = write(plans, "sketch", BAD, status="draft")
    ps = load_plans(plans, Config())
    assert [p.name for p in ps.plans] == ["good"] and "sketch" not in ps.orders
    assert len(ps.warnings) == 1 and f"{path.name}:5:" in ps.warnings[0]


def test_plan_without_front_matter_is_a_draft_and_only_warns(tmp_path):
    plans = tmp_path / "plans"
    write(plans, "loose", BAD)
    ps = load_plans(plans, Config())
    assert ps.plans == () and len(ps.warnings) == 1


def test_two_plans_with_the_same_name_is_an_error(tmp_path):
    plans = tmp_path / "plans"
    write(plans, "a", GOOD, status="approved")
    write(plans, "b", "---\nplan: a\nstatus: approved\n---\n" + GOOD)
    with pytest.raises(HiveError) as err:
        load_plans(plans, Config())
    [msg] = err.value.problems
    assert "b.md:1:" in msg and "plan name 'a' is also used by" in msg and "a.md" in msg


def test_planset_lookup_of_unknown_plan_names_the_known_ones(tmp_path):
    plans = tmp_path / "plans"
    write(plans, "auth", GOOD, status="approved")
    with pytest.raises(HiveError, match="no plan named 'nope'; plans: auth"):
        load_plans(plans, Config()).plan("nope")


# --- priority_order -----------------------------------------------------------------------------


def order_of(tmp_path, body):
    plan, graph, problems = graph_of(tmp_path, body)
    assert problems == []
    order = [t.id for t in priority_order(plan, graph)]
    assert sorted(order) == sorted(t.id for t in plan.tasks)
    pos = {n: i for i, n in enumerate(order)}
    assert all(pos[u] < pos[v] for u, v in graph.edges), f"{order} is not a topological order"
    return order


def test_priority_order_puts_the_longest_chain_first(tmp_path):
    order = order_of(
        tmp_path,
        """
        ### Task a: Alone
        ### Task b: Chain start
        ### Task c: Chain middle
        **Depends on:** b
        ### Task d: Chain end
        **Depends on:** c
        """,
    )
    assert order.index("b") < order.index("a")
    assert order[0] == "b"


def test_priority_order_prefers_the_critical_path_in_a_wider_graph(tmp_path):
    order = order_of(
        tmp_path,
        """
        ### Task 1: Short
        ### Task 2: Root
        ### Task 3: Side
        **Depends on:** 2
        ### Task 4: Long 1
        **Depends on:** 2
        ### Task 5: Long 2
        **Depends on:** 4
        ### Task 6: Join
        **Depends on:** 3, 5
        """,
    )
    assert order[0] == "2"
    assert order.index("4") < order.index("3")  # 4 has 3 tasks left (4,5,6), 3 has two
    assert order.index("1") > order.index("4")


def test_priority_field_breaks_ties_between_equal_paths(tmp_path):
    order = order_of(tmp_path, "### Task x: X\n### Task y: Y\n**Priority:** 3\n### Task z: Z\n**Priority:** -1\n")
    assert order == ["y", "x", "z"]


def test_plan_order_breaks_remaining_ties(tmp_path):
    order = order_of(tmp_path, "### Task 3: C\n### Task 1: A\n### Task 2: B\n")
    assert order == ["3", "1", "2"]


def test_priority_order_returns_task_records(tmp_path):
    plan, graph, _ = graph_of(tmp_path, GOOD)
    tasks = priority_order(plan, graph)
    assert tasks == [plan.task("1"), plan.task("2")]
    assert nx.is_directed_acyclic_graph(graph)


def test_compiled_plans_are_cached_and_a_changed_plan_or_config_is_recompiled(tmp_path):
    plans, cache = tmp_path / "plans", tmp_path / "cache"
    path = write(plans, "auth", GOOD, status="approved")
    first = load_plans(plans, Config(), cache)
    assert len(list(cache.glob("auth.*.pickle"))) == 1
    assert load_plans(plans, Config(), cache) == first
    path.write_text(path.read_text().replace("### Task 2: B", "### Task 2: Better"))
    again = load_plans(plans, Config(), cache)
    assert again.plan("auth").task("2").title == "Better"
    assert len(list(cache.glob("auth.*.pickle"))) == 1, "the stale entry is replaced"
    gated = load_plans(plans, Config(gate_first_batch=True), cache)
    assert "_gate-first-batch" in gated.orders["auth"]


def test_a_corrupt_cache_entry_is_rebuilt(tmp_path):
    plans, cache = tmp_path / "plans", tmp_path / "cache"
    write(plans, "auth", GOOD, status="approved")
    load_plans(plans, Config(), cache)
    [entry] = cache.glob("auth.*.pickle")
    entry.write_bytes(b"not a pickle")
    assert [t.id for t in load_plans(plans, Config(), cache).plan("auth").tasks] == ["1", "2"]


def test_problems_are_never_cached(tmp_path):
    plans, cache = tmp_path / "plans", tmp_path / "cache"
    write(plans, "bad", BAD, status="approved")
    with pytest.raises(HiveError):
        load_plans(plans, Config(), cache)
    assert not cache.exists() or not list(cache.glob("*.pickle"))
