"""The cheap checks `doit` runs once before a run: a profile that approved plans
still need whose program is missing (or that fails its CLI's own cheap checks, such as
Claude Code as root without IS_SANDBOX) stops the run in one message, before any worktree is made — not once per task,
with retries. Only `shutil.which`, environment lookups and, where agents are sandboxed, one
look inside an agent's sandbox for the program (hive.sandbox.probe): nothing is run."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from hive import doitargs

if TYPE_CHECKING:  # `doit list` imports this module only to learn that it runs nothing
    from hive.plan.model import Plan, Task
    from hive.project import Project


def runs_tasks(argv: Sequence[str]) -> bool:
    """Does this doit command line run tasks (`doit`, `doit -n 2`, `doit auth:3`, `doit run`),
    rather than list or inspect them?"""
    return doitargs.parse(argv).runs_tasks


def selected_plans(argv: Sequence[str], plans: Sequence[Plan]) -> list[Plan]:
    """The approved plans a run asked for: `doit auth` or `doit auth:3` (its
    dependencies are in the same plan, so the whole plan counts), or every approved
    plan (doit's default tasks) when it names none."""
    approved = [p for p in plans if p.approved]
    named = {name.split(":", 1)[0] for name in doitargs.parse(argv).names}
    chosen = [p for p in approved if any(fnmatchcase(p.name, n) for n in named)]
    return chosen or approved


def problems(
    project: Project, argv: Sequence[str], counts: Callable[[Plan, Task], bool], env: Mapping[str, str] | None = None
) -> list[str]:
    """One line per profile problem; empty when the run may start (or runs no task).
    `env`: doit's environment, which the agents get (default: this process's)."""
    if not runs_tasks(argv):
        return []
    from hive.agent_clis import cli_for
    from hive.agent_clis.context import AgentContext
    from hive.doctor.agents import binary_check, sandbox_start_check
    from hive.doctor.profiles_used import profiles_in_use

    found = []
    for use in profiles_in_use(project.config, selected_plans(argv, project.plans.plans), counts):
        ctx = AgentContext(use.profile, project.root, dict(os.environ if env is None else env))
        checks = [binary_check(ctx, version=False), *cli_for(ctx.binary).preflight(ctx)]
        if not checks[0].failed:  # found here: tried inside an agent's sandbox (issue 43)
            checks += [c for c in (sandbox_start_check(ctx, project.config),) if c is not None]
        for check in checks:
            if check.failed:
                found.append(
                    f"agent profile {use.profile.name!r} (used by {use.describe()}): {check.detail} — {check.fix}"
                )
    return found


def message(lines: Sequence[str]) -> str:
    """All of them in one message (doit prints it after "ERROR: ", then exits 3)."""
    return "\n".join(f"hive: {line}" for line in lines) + "; nothing was started (`hive doctor` checks everything)"
