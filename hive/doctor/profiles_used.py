"""Which agent profiles the approved plans use, and for which tasks: what the
doctor and doit's start-of-run check look at. Script tasks, checkpoints and gates
start no agent, so only `auto` tasks count."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hive.agent_clis.profile import AgentProfile
from hive.lifecycle import TaskType, verdict
from hive.plan.model import Plan, Task
from hive.settings.config import Config
from hive.store.state import TaskState

AGENT_TYPES = (TaskType.AUTO,)
_SHOWN_IDS = 8  # "tasks 1, 2, … (40 tasks)": one line, even for a big plan


@dataclass(frozen=True)
class ProfileUse:
    profile: AgentProfile
    tasks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (plan, task IDs); empty: checked as the default

    def describe(self) -> str:
        """`plan auth tasks 1, 3`, `plans auth (task 1), db (tasks 2, 5)`."""
        if not self.tasks:
            return "no pending task of an approved plan"
        if len(self.tasks) == 1:
            plan, ids = self.tasks[0]
            return f"plan {plan} {_ids(ids)}"
        return "plans " + ", ".join(f"{plan} ({_ids(ids)})" for plan, ids in self.tasks)


def _ids(ids: tuple[str, ...]) -> str:
    word = "task" if len(ids) == 1 else "tasks"
    if len(ids) <= _SHOWN_IDS:
        return f"{word} {', '.join(ids)}"
    return f"{word} {', '.join(ids[:_SHOWN_IDS])}, … ({len(ids)} tasks)"


def profile_name(config: Config, plan: Plan, task: Task) -> str:
    return config.profile_name(plan.agent, task.agent)


def profiles_in_use(
    config: Config, plans: Iterable[Plan], counts: Callable[[Plan, Task], bool] | None = None
) -> list[ProfileUse]:
    """The profiles that the approved `plans`' agent tasks use (only tasks `counts`
    accepts, e.g. those not done yet), in the order first met."""
    found: dict[str, dict[str, list[str]]] = {}
    for plan in plans:
        if not plan.approved:
            continue
        for task in plan.tasks:
            if task.type not in AGENT_TYPES or (counts is not None and not counts(plan, task)):
                continue
            name = profile_name(config, plan, task)
            if name in config.agents:  # an unknown name is the plan validator's error, not ours
                found.setdefault(name, {}).setdefault(plan.name, []).append(task.id)
    return [
        ProfileUse(config.agents[name], tuple((plan, tuple(ids)) for plan, ids in by_plan.items()))
        for name, by_plan in found.items()
    ]


class _States(Protocol):
    def get(self, key: str) -> TaskState | None: ...


def pending(states: _States) -> Callable[[Plan, Task], bool]:
    """Tasks not recorded done for their current text — from the state files alone,
    no git call: a done task needs no agent, so its profile is not checked."""
    return lambda plan, task: not verdict(states.get(plan.key(task.id)), task.text_hash, None).done


def not_done(root: Path, config: Config) -> Callable[[Plan, Task], bool]:
    from hive.plan.done import StateView

    return pending(StateView(root, config.main_branch))
