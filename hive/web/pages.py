"""The dashboard's HTML, from the Jinja templates in hive/web/templates (package data). Autoescape
is on for every template: plan, task, question and log text is always text, never markup (a task
titled `<img src=x onerror=alert(1)>` shows those characters). A page is its sections; the live
updates send the same sections again (hive.web.live), so both draw through one template each."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import jinja2

from hive.output import duration
from hive.store.usage import count, usd
from hive.web.taskpage import TaskPage
from hive.web.views import Dashboard

DASHBOARD_SECTIONS = ("summary", "attention", "plans", "timeline", "cost")
TASK_SECTIONS = ("task", "log")


@dataclass(frozen=True)
class Context:
    """What every page of one server shows the same way."""

    name: str  # the repository's folder
    csrf: str
    read_only: bool

    def values(self) -> dict[str, Any]:
        return {"name": self.name, "csrf": self.csrf, "read_only": self.read_only}


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("hive.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(clock=_clock, duration=duration, usd=usd, count=count)
    return env


def dashboard_page(d: Dashboard, ctx: Context, said: str = "") -> str:
    """The dashboard; `said`: what an action answered a browser without scripts (the HTML of
    `said()`, escaped when it was drawn)."""
    return environment().get_template("dashboard.html.j2").render(d=d, **ctx.values(), said=said)


def dashboard_sections(d: Dashboard, ctx: Context) -> dict[str, str]:
    env = environment()
    return {name: env.get_template(f"_{name}.html.j2").render(d=d, **ctx.values()) for name in DASHBOARD_SECTIONS}


def task_page(p: TaskPage, ctx: Context, said: str = "") -> str:
    return environment().get_template("task.html.j2").render(p=p, **ctx.values(), said=said)


def task_sections(p: TaskPage, ctx: Context) -> dict[str, str]:
    env = environment()
    return {name: env.get_template(f"_{name}.html.j2").render(p=p, **ctx.values()) for name in TASK_SECTIONS}


def said(lines: list[str], error: bool = False) -> str:
    """What an action answered, for the message area of the page that asked."""
    return environment().get_template("said.html.j2").render(lines=lines, error=error)


def message(ctx: Context, heading: str, lines: list[str]) -> str:
    """A page of its own: an error, or what an action answered a browser without scripts."""
    return environment().get_template("message.html.j2").render(heading=heading, lines=lines, **ctx.values(), said="")


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at)) if at else "—"
