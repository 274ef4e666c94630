"""RayExecutor when the node an attempt was placed on goes away (found by `python -m tests.soak --ray`):
before anything started there (a worker node killed as a run began), and while no node holds
the attempt's unit (Ray waits to place it again), when the attempt is ended. Ray is stood in
for here, so the order of events is exact; the soak does it on a real cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")
from ray.exceptions import ActorUnschedulableError

from hive.errors import HiveError
from hive.executors.base import AgentRef, Checkout, Launch
from hive.executors.ray import executor as ray_executor
from hive.executors.ray.executor import PLACEMENTS, RayExecutor


class Call:
    def __init__(self, value: Any) -> None:
        self.value = value


class Method:
    def __init__(self, actor: Actor, name: str) -> None:
        self.actor, self.name = actor, name

    def remote(self, *args: Any) -> Call:
        self.actor.calls.append(self.name)
        if self.actor.node in self.actor.world.dead:
            return Call(ActorUnschedulableError("The node specified via NodeAffinitySchedulingStrategy doesn't exist"))
        return Call([] if self.name == "seen" else None)


class Actor:
    def __init__(self, world: World, node: str) -> None:
        self.world, self.node, self.calls = world, node, []

    def __getattr__(self, name: str) -> Method:
        return Method(self, name)


class Group:
    def __init__(self, node: str, name: str = "") -> None:
        self.node, self.name = node, name  # node "": not placed

    def ready(self) -> Call:
        return Call(None)


class World:
    """The nodes a placement lands on, in turn; which are dead; what was said and removed."""

    def __init__(self, placements: list[str], dead: set[str]) -> None:
        self.placements, self.dead = placements, dead
        self.removed: list[str] = []
        self.groups: dict[str, Group] = {}  # by name: what get_placement_group finds
        self.said: list[str] = []
        self.waited_gone: list[str] = []
        self.actors: dict[str, Actor] = {}


class FakeCluster:
    resource = "hive_agent"

    def __init__(self, world: World) -> None:
        self.world = world

    def connect(self) -> None: ...
    def offered(self) -> None: ...
    def group_name(self, name: str) -> str:
        return f"proj:{name}"

    def agent(self, node: str) -> Actor:
        return self.world.actors.setdefault(node, Actor(self.world, node))

    def renew(self, node: str) -> Actor:
        self.world.actors.pop(node, None)
        return self.agent(node)

    def forget(self, node: str) -> None:
        self.world.actors.pop(node, None)

    def node_address(self, node: str) -> str:
        return f"addr-{node}"

    def await_gone(self, node: str) -> None:
        self.world.waited_gone.append(node)

    def close_later(self, call: Call) -> None:
        raise AssertionError("no call goes to the actor of a node that is gone")


def get(call: Call, timeout: float | None = None) -> Any:
    if isinstance(call.value, Exception):
        raise call.value
    return call.value


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> World:
    w = World([], set())
    fake_ray = type("ray", (), {})()
    fake_ray.get = get
    fake_ray.wait = lambda calls, timeout=None: (calls, [])
    fake_ray.util = type("util", (), {})()
    fake_ray.util.placement_group = lambda bundles, strategy, name, lifetime: Group(w.placements.pop(0))
    fake_ray.util.remove_placement_group = lambda group: w.removed.append(group.name or group.node)

    def get_placement_group(name: str) -> Group:
        if name not in w.groups:
            raise ValueError(f"Failed to look up placement group with name: {name}")
        return w.groups[name]

    fake_ray.util.get_placement_group = get_placement_group
    monkeypatch.setattr(ray_executor, "ray", fake_ray)
    monkeypatch.setattr(ray_executor, "node_of", lambda group: group.node)
    monkeypatch.setattr(ray_executor, "say", w.said.append)
    monkeypatch.setattr(RayExecutor, "_start_there", lambda self, link, launch, seen: 4242)
    return w


def launch(tmp_path: Path) -> Launch:
    wt = tmp_path / "wt"
    ref = AgentRef(str(tmp_path), "p:1", 1, "hive-w1-p-1-abc-a1")
    return Launch(ref, ["agent"], {}, wt, tmp_path / "log", tmp_path / "exit", tmp_path / "env",
                  checkout=Checkout(tmp_path, "hive/p-1-a1"))  # fmt: skip


def executor(world: World, tmp_path: Path) -> RayExecutor:
    ex = RayExecutor.__new__(RayExecutor)
    ex.root, ex.cluster, ex._links = tmp_path, FakeCluster(world), {}  # type: ignore[assignment]
    return ex


def test_an_attempt_whose_node_is_gone_before_it_started_is_placed_on_another(world: World, tmp_path: Path):
    world.placements, world.dead = ["n1", "n2"], {"n1"}
    ex = executor(world, tmp_path)
    assert ex.start(launch(tmp_path)).ref == AgentRef(str(tmp_path), "p:1", 1, "hive-w1-p-1-abc-a1", 4242)
    assert world.removed == ["n1"], "the unit of the resource on the dead node is given back"
    assert world.waited_gone == ["n1"]
    assert world.said == [
        "hive-w1-p-1-abc-a1: its Ray node addr-n1 went away before it started there (ActorUnschedulableError); "
        "placing it again"
    ]
    assert world.actors["n2"].calls == ["seen"] and "n1" not in world.actors  # forgotten, made anew if asked again
    assert ex._links["hive-w1-p-1-abc-a1"].group.node == "n2"


def test_an_attempt_no_node_would_take_fails_with_a_clear_message(world: World, tmp_path: Path):
    world.placements = ["n1", "n2", "n3"]
    world.dead = set(world.placements)
    ex = executor(world, tmp_path)
    with pytest.raises(
        HiveError, match=rf"its Ray node addr-n3 went away before it started there .*, {PLACEMENTS} times"
    ):
        ex.start(launch(tmp_path))
    assert world.removed == ["n1", "n2", "n3"] and ex._links == {}


def test_ending_an_attempt_no_node_holds_gives_its_unit_back(world: World, tmp_path: Path):
    """Its node died: Ray keeps the group, unplaced, to place it again. The run that takes
    the attempt as interrupted (or `hive cleanup`) ends it, and its unit must not stay taken."""
    name = "hive-w3-p-4-abc-a1"
    world.groups = {g: Group("", g) for g in (f"proj:{name}", "proj:hive-w1-p-5-def-a1")}
    ex = executor(world, tmp_path)
    ref = AgentRef(str(tmp_path), "p:4", 1, name, 4242)
    assert ex.agent(ref).stop(patience=1.0, finished=False, report=print) == ""
    assert world.removed == [f"proj:{name}"]
    ex.agent(AgentRef.named(tmp_path, "hive-w1-p-5-def-a1")).close()
    ex.agent(AgentRef.named(tmp_path, "hive-w1-p-6-ghi-a1")).close()  # no such attempt: nothing to give back
    assert world.removed == [f"proj:{name}", "proj:hive-w1-p-5-def-a1"]
