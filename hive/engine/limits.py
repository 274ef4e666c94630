"""What may stop an agent or hold back the next one: its usage against the
budgets (`[budget] task_usd`, `run_usd`), and a rate limit on its profile."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from hive import crashsafe
from hive.agent_clis import configured_model
from hive.agent_clis.profile import AgentProfile
from hive.agent_clis.stream import Usage
from hive.engine.task import TaskContext
from hive.lifecycle import State
from hive.output import duration, say
from hive.store.files import atomic_write, locked
from hive.store.paths import Paths
from hive.store.state import TaskState
from hive.store.usage import attempt_entry, run_started, task_totals, totals_of, usd

MAX_PAUSE = 3600.0
WAIT_SLICE = 1.0  # a paused run looks again this often: the profile's pause or the task may change meanwhile


def model_of(profile: AgentProfile) -> str:
    """The model, for a CLI whose output does not name it: the profile's, else its CLI's config's."""
    return profile.model or configured_model(profile.stream, os.environ)


class AttemptMeter:
    """Records a running attempt's usage in its state; says when it must stop."""

    def __init__(self, h: TaskContext) -> None:
        self.h = h
        self.model = model_of(h.profile())

    def record(self, usage: Usage) -> str | None:
        h = self.h
        model = usage.model or self.model
        entry = attempt_entry(
            usage.tokens_in, usage.tokens_out, usage.cli_cost_usd, model, h.cfg.prices, usage.by_model
        )
        st = h.update((State.IN_PROGRESS,), usage=entry)
        cap = h.cfg.budget_task_usd
        spent = task_totals(st).cost_usd
        if cap and spent >= cap:
            return f"budget reached for this task ({usd(spent)} of {usd(cap)}, [budget] task_usd)"
        return None


def task_budget_left(h: TaskContext, st: TaskState) -> float | None:
    """What the task may still spend (None: no cap)."""
    if not h.cfg.budget_task_usd:
        return None
    return max(h.cfg.budget_task_usd - task_totals(st).cost_usd, 0.0)


def run_budget_reached(h: TaskContext) -> str:
    """Why no new attempt may start: this run spent its `run_usd` ("" if it may)."""
    cap = h.cfg.budget_run_usd
    if not cap:
        return ""
    spent = totals_of(h.store.read_all().values(), since=run_started()).cost_usd
    return f"budget reached ({usd(spent)} of {usd(cap)}, [budget] run_usd)" if spent >= cap else ""


def pause_until(resume_at: float, pauses: int, now: float, backoff: float = 60.0) -> float:
    """When a rate-limited task goes on: the reset time the CLI gave, else backoff·2ⁿ (≤ 1 h)."""
    if resume_at > now:
        return min(resume_at, now + 24 * 3600)
    return now + min(backoff * 2.0**pauses, MAX_PAUSE)


@dataclass(frozen=True)
class ProfilePause:
    """A rate-limited profile: no task starts on it before `until`."""

    profile: str
    until: float
    reason: str = ""


def pause_profile(paths: Paths, profile: str, until: float, reason: str) -> None:
    """Pause `profile` until `until` (a later pause wins)."""
    with locked(paths.locks / "holds.lock"):
        current = read_pause(paths.pause_file(profile))
        if current and current.until >= until:
            return
        atomic_write(paths.pause_file(profile), json.dumps({"profile": profile, "until": until, "reason": reason}))


def profile_pauses(paths: Paths) -> list[ProfilePause]:
    """Every rate-limited profile's pause."""
    found = (read_pause(path) for path in sorted(paths.pause_file("x").parent.glob("*.json")))
    return [pause for pause in found if pause is not None]


def read_pause(path: Path) -> ProfilePause | None:
    try:
        data = json.loads(path.read_text())
        return ProfilePause(str(data["profile"]), float(data["until"]), str(data.get("reason", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def wait_for_profile(h: TaskContext, profile: str) -> None:
    """Wait while the profile or this task is paused, saying once what for."""
    said = 0.0
    while True:
        st = h.read()
        pause = read_pause(h.paths.pause_file(profile))
        own = st.resume_at if st.state == State.PAUSED else 0.0
        until = max(own, pause.until if pause else 0.0)
        now = time.time()
        if until <= now or st.state not in (State.PAUSED, State.PLANNED, State.FAILED):
            return
        if until != said:
            said = until
            why = f" ({pause.reason})" if pause and pause.reason else ""
            say(
                f"{h.key}: waiting — agent profile {profile!r} is rate-limited until "
                f"{time.strftime('%H:%M:%S', time.localtime(until))} (in {duration(until - now)}){why}"
            )
        crashsafe.pause(min(WAIT_SLICE, until - now))
