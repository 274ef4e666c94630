"""The dashboard's URLs: its pages, their live updates (server-sent events), the timeline as a
trace, and the actions. Each action calls the function its `hive` verb calls (hive/actions), so it
does and records exactly what the verb does; a user error comes back as the verb's message."""

from __future__ import annotations

import dataclasses
import json
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote

import anyio
from sse_starlette import EventSourceResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from hive.actions.answer import answer
from hive.actions.approve import approve_task
from hive.actions.retry import retry
from hive.actions.review import send_back
from hive.actions.stop import stop
from hive.buglog import record_bug
from hive.errors import HiveError
from hive.reports import timeline, trace
from hive.store.names import parse_key
from hive.store.paths import Paths
from hive.store.state import StateCache, StateStore
from hive.web import attention, pages, taskpage, views, watch
from hive.web.live import Live, Rendered
from hive.web.pages import Context

PING = 15.0  # an idle event stream says it is alive this often (proxies close silent ones)


SAID_KEPT = 50  # what the latest actions answered browsers without scripts, kept to be shown once


@dataclass
class Site:
    """One server: its repository, what its pages share, its live updates."""

    root: Path
    ctx: Context
    live: Live = field(init=False)
    cache: views.Cache = field(init=False)
    arrivals: attention.Arrivals = field(init=False)  # the order of what needs the human
    said: dict[str, str] = field(init=False)  # an action's answer, by the id its redirect carries

    def __post_init__(self) -> None:
        paths = Paths(self.root)
        self.live = Live(self.render, lambda _views, files: watch.stamp(paths, files))
        self.cache = views.Cache(StateCache(paths))
        self.arrivals = attention.Arrivals()
        self.said = {}

    def dashboard(self) -> views.Dashboard:
        d = views.dashboard(self.root, self.cache)
        return dataclasses.replace(d, items=self.arrivals.arrange(d.items))

    def keep_said(self, html: str) -> str:
        """Keep an action's answer for the page a browser without scripts is sent back to."""
        ref = secrets.token_urlsafe(8)
        self.said[ref] = html
        while len(self.said) > SAID_KEPT:
            del self.said[next(iter(self.said))]
        return ref

    def warm(self) -> None:
        """Compile the templates and read every state once, before the URL is printed: the first
        page is then as quick as the next."""
        env = pages.environment()
        for name in env.list_templates():
            env.get_template(name)
        self.dashboard()

    def render(self, view: str) -> Rendered:
        """A view's sections as they are now: the dashboard (""), or a task's page (its key). When
        it cannot be drawn — a plan being edited is invalid for a while, or a bug — its first section
        says why and the others stay as the page has them, until a change draws it again."""
        first = "task" if view else "summary"
        try:
            return self._render(view)
        except HiveError as e:
            return Rendered({first: pages.said(e.problems, error=True)})
        except Exception:  # noqa: BLE001 — the live loop must go on; the traceback goes to .hive/hive.log
            where = record_bug(Paths(self.root).debug_log, f"hive web: drawing {view or 'the dashboard'}")
            return Rendered({first: pages.said([f"internal error while drawing this page ({where})"], error=True)})

    def _render(self, view: str) -> Rendered:
        paths = Paths(self.root)
        if not view:
            d = self.dashboard()
            sections = pages.dashboard_sections(d, self.ctx)
            return Rendered(sections, bool(d.running), watch.output_files(paths, d.running))
        p = taskpage.task_page(self.root, view, self.cache.states)
        return Rendered(pages.task_sections(p, self.ctx), p.running, watch.output_files(paths, [view]))


def routes() -> list[BaseRoute]:
    """The app's routes; each finds its server's Site in `request.app.state.site`."""
    return [
        Route("/", dashboard),
        Route("/tasks/{key}", task),
        Route("/events", events),
        Route("/trace.json", trace_json),
        Route("/actions/{name}", act, methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("hive.web", "static")]), name="static"),
    ]


def _site(request: Request) -> Site:
    site: Site = request.app.state.site
    return site


async def dashboard(request: Request) -> Response:
    site = _site(request)
    try:
        d = await run_in_threadpool(site.dashboard)
    except HiveError as e:  # a plan or the config is invalid (maybe being edited): say what to fix
        return HTMLResponse(pages.message(site.ctx, "The plans or the config have problems", e.problems), 503)
    return HTMLResponse(pages.dashboard_page(d, site.ctx, _said(request)))


async def task(request: Request) -> Response:
    site = _site(request)
    try:
        p = await run_in_threadpool(taskpage.task_page, site.root, request.path_params["key"], site.cache.states)
    except HiveError as e:
        return HTMLResponse(pages.message(site.ctx, "No such task", e.problems), 404)
    return HTMLResponse(pages.task_page(p, site.ctx, _said(request)))


def _said(request: Request) -> str:
    """What the action a browser without scripts posted answered (shown once: `?said=` of its redirect)."""
    return _site(request).said.pop(request.query_params.get("said", ""), "")


async def events(request: Request) -> Response:
    """A page's live updates: its view's sections as server-sent events, each named for its section."""
    view = request.query_params.get("task", "")
    if view:
        try:
            parse_key(view)
        except HiveError as e:
            return Response(str(e), 400)
    stop = anyio.Event()  # set by sse-starlette when the server shuts down
    follow = _site(request).live.follow(view, stop)
    return EventSourceResponse(follow, ping=PING, shutdown_event=stop, shutdown_grace_period=1)


async def trace_json(request: Request) -> Response:
    document = await run_in_threadpool(_trace, _site(request).root)
    headers = {"content-disposition": 'attachment; filename="hive-trace.json"'}
    return Response(json.dumps(document), media_type="application/json", headers=headers)


async def act(request: Request) -> Response:
    """One of ACTIONS: what its verb says back, for the page's message area (or a page of its own
    for a browser without scripts)."""
    site = _site(request)
    action = ACTIONS.get(request.path_params["name"])
    if action is None:
        return Response("no such action", 404)
    form = dict(parse_qsl((await request.body()).decode("utf-8", errors="replace"), keep_blank_values=True))
    try:
        lines, code = await run_in_threadpool(action, site.root, form), 200
    except HiveError as e:
        lines, code = e.problems, 400
    site.live.poke()  # the change shows on every open page now, not at the next look
    said = pages.said(lines, error=code != 200)
    if request.headers.get("hx-request"):
        return HTMLResponse(said, code)
    # a plain form (no scripts, or posted before htmx wired it): back to its page, the answer on it
    back = _back(form.get("back", ""))
    return RedirectResponse(f"{back}?said={site.keep_said(said)}", status_code=303)


def _back(path: str) -> str:
    """Where a plain form's page is: the dashboard, or a task's page (never another site's URL)."""
    if path.startswith("/tasks/"):
        try:
            parse_key(path.removeprefix("/tasks/"))
            return "/tasks/" + quote(path.removeprefix("/tasks/"), safe=":")
        except HiveError:
            return "/"
    return "/"


def _trace(root: Path) -> dict[str, object]:
    paths = Paths(root)
    return trace.trace(timeline.spans(paths, StateStore(paths).read_all(), time.time()), f"hive {root.name}")


# --- the actions: a form's fields to the arguments of the verb's function ----------------------------

Form = Mapping[str, str]  # a posted form's fields (the pages post application/x-www-form-urlencoded)


def _key(form: Form) -> str:
    """The task it acts on (`hive stop` without one would stop every agent: a form always names one)."""
    key = form.get("key", "")
    if not key:
        raise HiveError("the form named no task: reload the page and use its buttons")
    return key


def _text(form: Form, name: str) -> str | None:
    value = form.get(name)
    return value.strip() if value is not None else None


def _answer(root: Path, form: Form) -> list[str]:
    return [answer(root, _key(form), _text(form, "text") or "", _text(form, "choice") or "").said]


def _approve(root: Path, form: Form) -> list[str]:
    reject = _text(form, "reject")
    if reject == "":
        raise HiveError("a rejection needs its reason: say what is wrong (the next agent reads it)")
    choice, task = _text(form, "choice") or None, _text(form, "task") or None
    return [approve_task(root, _key(form), choice, bool(form.get("done")), reject, task)]


def _changes(root: Path, form: Form) -> list[str]:
    return [send_back(root, _key(form), _text(form, "text") or "")]


def _retry(root: Path, form: Form) -> list[str]:
    return [retry(root, _key(form), force=bool(form.get("force")))]


def _stop(root: Path, form: Form) -> list[str]:
    lines: list[str] = []
    stop(root, _key(form), lines.append)
    return lines


ACTIONS: dict[str, Callable[[Path, Form], list[str]]] = {
    "answer": _answer,
    "approve": _approve,
    "changes": _changes,
    "retry": _retry,
    "stop": _stop,
}
