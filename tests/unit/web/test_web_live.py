"""hive/web/live.py and watch.py: an open page gets its sections, then only what changed; the state's
changes are drawn at once, the agents' output at most every OUTPUT_GAP; with no page open nothing
is drawn or looked at; and the stamp moves with every kind of change Hive writes."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Hashable
from pathlib import Path

import pytest

from hive.store.files import append_line, atomic_write, create_exclusive
from hive.store.paths import Paths
from hive.web import live, watch
from hive.web.live import Live, Rendered


class World:
    """What the fake render and stamp read: a state counter and an output counter."""

    def __init__(self) -> None:
        self.state = 0
        self.output = 0

    def render(self, _view: str) -> Rendered:
        return Rendered({"a": f"A{self.state}", "b": "B", "log": f"L{self.output}"})

    def stamp(self, _views: frozenset[str], _watch: tuple[str, ...]) -> tuple[Hashable, Hashable]:
        return self.state, self.output


async def next_event(stream: AsyncIterator[dict[str, str]], timeout: float = 2.0) -> dict[str, str]:
    return await asyncio.wait_for(anext(stream), timeout)


def test_a_page_gets_every_section_then_only_what_changed_and_nothing_is_drawn_once_it_closes():
    async def main() -> None:
        world = World()
        hub = Live(world.render, world.stamp, interval=0.01)
        stream = hub.follow("")
        first = [await next_event(stream) for _ in range(3)]
        assert first == [{"event": "a", "data": "A0"}, {"event": "b", "data": "B"}, {"event": "log", "data": "L0"}]
        world.state = 1
        assert await next_event(stream) == {"event": "a", "data": "A1"}
        await stream.aclose()
        assert hub.loop is not None
        await asyncio.wait_for(hub.loop, 1.0)  # the loop ends with the last page
        drawn = hub.renders
        world.state = 2
        await asyncio.sleep(0.1)
        assert hub.renders == drawn, "no page open: nothing drawn"

    asyncio.run(main())


def test_new_output_alone_is_drawn_at_most_every_output_gap(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(live, "OUTPUT_GAP", 0.2)

    async def main() -> None:
        world = World()
        hub = Live(world.render, world.stamp, interval=0.01)
        stream = hub.follow("")
        for _ in range(3):
            await next_event(stream)
        drawn = hub.renders
        began = time.monotonic()
        while time.monotonic() - began < 0.5:  # an agent printing 100 lines a second
            world.output += 1
            await asyncio.sleep(0.01)
        assert hub.renders - drawn <= 4, f"{hub.renders - drawn} renders for half a second of output"
        assert (await next_event(stream))["event"] == "log"
        world.state += 1  # a state change is not held back by the output's gap
        began = time.monotonic()
        while (await next_event(stream))["event"] != "a":
            pass
        assert time.monotonic() - began < 0.15
        await stream.aclose()

    asyncio.run(main())


def test_a_poke_looks_at_once_instead_of_at_the_next_interval():
    async def main() -> None:
        world = World()
        hub = Live(world.render, world.stamp, interval=30.0)
        stream = hub.follow("")
        for _ in range(3):
            await next_event(stream)
        world.state = 5
        hub.poke()
        assert await next_event(stream, timeout=2.0) == {"event": "a", "data": "A5"}
        await stream.aclose()

    asyncio.run(main())


def test_two_pages_of_one_view_each_get_what_they_miss():
    async def main() -> None:
        world = World()
        hub = Live(world.render, world.stamp, interval=0.01)
        one = hub.follow("")
        for _ in range(3):
            await next_event(one)
        world.state = 1
        assert await next_event(one) == {"event": "a", "data": "A1"}
        two = hub.follow("")  # opened later: its first sections are the newest
        assert await next_event(two) == {"event": "a", "data": "A1"}
        world.state = 2
        assert await next_event(one) == {"event": "a", "data": "A2"}
        for _ in range(2):
            await next_event(two)  # b, log
        assert await next_event(two) == {"event": "a", "data": "A2"}
        await one.aclose()
        await two.aclose()

    asyncio.run(main())


def test_the_stamp_moves_with_each_kind_of_change_hive_writes(tmp_path: Path):
    paths = Paths(tmp_path)
    log = paths.log_file("p", "1")
    watched = watch.output_files(paths, ["p:1"])
    assert watched == (str(log), str(paths.notes_file("p", "1")))
    seen = [watch.stamp(paths, watched)]

    def moved(change) -> bool:
        change()
        seen.append(watch.stamp(paths, watched))
        return seen[-1][0] != seen[-2][0]

    state_file = paths.state_file("p", "1")
    assert moved(lambda: atomic_write(state_file, "{}"))  # a new state file
    time.sleep(0.01)  # mtimes in ns, but a filesystem may keep them coarser
    assert moved(lambda: atomic_write(state_file, '{"state": "done"}'))  # replaced by a rename
    assert moved(lambda: append_line(paths.events, json.dumps({"event": "merging"})))
    assert moved(lambda: create_exclusive(paths.questions_dir("p", "1") / "1.json", "{}"))
    time.sleep(0.01)
    assert moved(lambda: create_exclusive(paths.questions_dir("p", "1") / "1.answer.json", "{}"))
    (tmp_path / "plans").mkdir()
    assert moved(lambda: (tmp_path / "plans" / "p.md").write_text("# p\n"))  # a new plan
    assert moved(lambda: (tmp_path / "plans" / "p.md").write_text("---\nstatus: approved\n---\n# p\n"))  # approved
    assert moved(lambda: atomic_write(paths.run_record, "{}"))
    before = watch.stamp(paths, watched)
    log.parent.mkdir(parents=True)
    log.write_text("output\n")
    after = watch.stamp(paths, watched)
    assert after[0] == before[0] and after[1] != before[1], "output moves the output's stamp only"
    assert watch.stamp(paths, watched) == after, "nothing changed, nothing moves"
