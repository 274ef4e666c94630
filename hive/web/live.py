"""The open pages kept up to date by server-sent events, with no polling in the browser and no
work while nobody looks (Gas Town's dashboard used 70 % of a core idle, #4165).

While at least one page is connected, one loop looks every `interval` at a cheap stamp of the
files Hive writes (a few `stat` calls, hive.web.watch). When the state part of it changes (a task
moved, a question came, ...) it renders each open view at once; when only the agents' output
grew, at most every OUTPUT_GAP seconds or ten times as long as a render takes (a 1,000-task
plan's page must not keep a core busy while its agents print: at most a tenth of one). Each
page gets only the sections whose HTML changed. With no page open the loop ends; the server
then only waits for connections."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Hashable
from dataclasses import dataclass, field

import anyio
from anyio import to_thread

INTERVAL = 0.25  # how often an open page's files are looked at: a change shows within about this plus a drawing
REFRESH = 5.0  # while a task runs, its elapsed time is redrawn this often even if nothing changed
OUTPUT_GAP = 1.0  # the least time between two renders for new output alone


@dataclass(frozen=True)
class Rendered:
    sections: dict[str, str]  # section name -> its HTML (the page's element with `sse-swap=<name>`)
    busy: bool = False  # something runs: redraw every REFRESH seconds
    watch: tuple[str, ...] = ()  # what the next stamps must include (e.g. the running tasks' logs)


@dataclass(eq=False)
class _Page:
    view: str
    shown: dict[str, str] = field(default_factory=dict)  # what it has of each section
    queue: asyncio.Queue[dict[str, str]] = field(default_factory=asyncio.Queue)

    def update(self, now: Rendered) -> None:
        for name, html in now.sections.items():
            if self.shown.get(name) != html:
                self.shown[name] = html
                self.queue.put_nowait({"event": name, "data": html})


class Live:
    """`render(view)` draws a view ("" the dashboard, else a task's key); `stamp(views, watch)` says
    cheaply whether anything they show may have changed: (the state's stamp, the output's)."""

    def __init__(
        self,
        render: Callable[[str], Rendered],
        stamp: Callable[[frozenset[str], tuple[str, ...]], tuple[Hashable, Hashable]],
        interval: float = INTERVAL,
    ) -> None:
        self.render = render
        self.stamp = stamp
        self.interval = interval
        self.pages: set[_Page] = set()
        self.latest: dict[str, Rendered] = {}  # each view as last drawn
        self.loop: asyncio.Task[None] | None = None
        self.woken = asyncio.Event()
        self.renders = 0  # how many renders it did: the bench and tests read it
        self.cost = 0.0  # how long the last render took

    async def follow(self, view: str, stop: anyio.Event | None = None) -> AsyncIterator[dict[str, str]]:
        """What one page receives: its view's sections now, then each change, until `stop` (the
        server shuts down: the stream ends as a response should, not cut off)."""
        page = _Page(view)
        self.pages.add(page)
        try:
            if self.loop is None or self.loop.done():
                # stamped before the first drawing: a change while it draws is seen at the first look
                self.loop = asyncio.create_task(self._watch(self.stamp(frozenset({view}), ())))
            page.update(await self._render(view))
            while (event := await _next(page.queue, stop)) is not None:
                yield event
        finally:
            self.pages.discard(page)

    def poke(self) -> None:
        """Look now (an action just changed something)."""
        self.woken.set()

    async def _render(self, view: str) -> Rendered:
        self.renders += 1
        began = time.monotonic()
        now = await to_thread.run_sync(self.render, view)
        self.cost = time.monotonic() - began
        self.latest[view] = now
        return now

    async def _watch(self, last: tuple[Hashable, Hashable]) -> None:
        drawn = time.monotonic()
        while self.pages:
            try:
                await asyncio.wait_for(self.woken.wait(), self.interval)
            except TimeoutError:
                pass
            self.woken.clear()
            views = frozenset(p.view for p in self.pages)
            watch = tuple(sorted({w for v in views if v in self.latest for w in self.latest[v].watch}))
            stamp = self.stamp(views, watch)
            if not self._due(stamp, last, time.monotonic() - drawn, views):
                continue
            last, drawn = stamp, time.monotonic()
            for view in views:
                now = await self._render(view)
                for page in [p for p in self.pages if p.view == view]:
                    page.update(now)

    def _due(
        self, stamp: tuple[Hashable, Hashable], last: tuple[Hashable, Hashable], since: float, views: frozenset[str]
    ) -> bool:
        """Whether to draw the open views again now."""
        if stamp[0] != last[0]:
            return True
        if stamp[1] != last[1]:
            return since >= max(OUTPUT_GAP, 10 * self.cost)
        busy = any(self.latest[v].busy for v in views if v in self.latest)
        return busy and since >= max(REFRESH, 20 * self.cost)


async def _next(queue: asyncio.Queue[dict[str, str]], stop: anyio.Event | None) -> dict[str, str] | None:
    """The queue's next event, or None once `stop` is set."""
    if stop is None:
        return await queue.get()
    getting, stopping = asyncio.ensure_future(queue.get()), asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait({getting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:  # also when the page went away (this task cancelled): leave no task waiting behind
        getting.cancel()
        stopping.cancel()
    return getting.result() if getting in done else None
