"""Records and fake programs the doctor's unit tests share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from hive.agent_clis import BUILTIN_PROFILES, cli_for
from hive.agent_clis.context import AgentContext
from hive.agent_clis.profile import AgentProfile
from hive.checks import Check
from hive.plan.model import Plan, Task
from hive.settings.config import Config


def program(bin_dir: Path, name: str, script: str = 'echo "9.9.9 (Fake CLI)"') -> Path:
    """An executable `name` in `bin_dir` that runs `script` (sh)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


def context(profile: str | AgentProfile, root: Path, home: Path, path: str = "", **env: str) -> AgentContext:
    """A profile as its agent would see the world: only the environment given here."""
    p = BUILTIN_PROFILES[profile] if isinstance(profile, str) else profile
    return AgentContext(p, root, {"HOME": str(home), "PATH": path, **env})


def credential_checks(ctx: AgentContext) -> list[Check]:
    """A profile's credentials as the doctor checks them: its CLI's own check, found by the
    binary's name (hive/doctor/hosts.py)."""
    return cli_for(ctx.binary).credentials(ctx)


def onboarding_checks(ctx: AgentContext, trust_dirs: Sequence[Path]) -> list[Check]:
    return cli_for(ctx.binary).onboarding(ctx, trust_dirs)


def preflight_checks(ctx: AgentContext) -> list[Check]:
    return cli_for(ctx.binary).preflight(ctx)


def custom(name: str, *command: str, **changes: object) -> AgentProfile:
    return replace(AgentProfile(name, tuple(command)), **changes)  # type: ignore[arg-type]


def plan(name: str, *tasks: Task, agent: str = "", status: str = "approved") -> Plan:
    return Plan(name, Path(f"plans/{name}.md"), status, agent, name.title(), "", tasks)


def task(task_id: str, type_: str = "auto", agent: str = "") -> Task:
    return Task(task_id, f"Task {task_id}", 1, type=type_, agent=agent)


def config_with(*profiles: AgentProfile, default: str = "claude") -> Config:
    return Config(default_agent=default, agents={**BUILTIN_PROFILES, **{p.name: p for p in profiles}})
