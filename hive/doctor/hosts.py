"""Agent checks where the agents run: on each host of a remote executor (a Ray node's
PATH, $HOME, credentials and user, which can differ from the controller's), under the
host's name; on this machine for the local executor."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path

from hive.agent_clis import cli_for
from hive.agent_clis.context import AgentContext
from hive.checks import WARN, Check, fail, ok, warn
from hive.doctor.agents import binary_check, sandbox_start_check
from hive.doctor.profiles_used import ProfileUse
from hive.doctor.repo import tool_checks
from hive.errors import HiveError
from hive.executors import Executor
from hive.sandbox import policy
from hive.settings.config import Config


def on_every_host(executor: Executor, uses: Sequence[ProfileUse], config: Config) -> list[Check]:
    """Each profile's checks, and the sandbox's, run on every host of a remote executor."""
    try:
        answers = executor.on_hosts(functools.partial(_checks_here, tuple(uses), config))
    except HiveError as e:
        return [fail("agent hosts", str(e), "start the hosts, or fix [executor] in .hive/config.toml")]
    checks: list[Check] = []
    for host, found in sorted(answers.items()):
        if isinstance(found, HiveError):
            checks.append(fail(f"host {host}", str(found), f"look at the node {host} (`ray status`, its logs)"))
        else:
            checks += [dataclasses.replace(c, name=f"{c.name} on {host}") for c in found]
    return checks


def agent_checks(use: ProfileUse, root: Path, trust_dirs: Sequence[Path], config: Config) -> list[Check]:
    """A profile's program (here, and inside an agent's sandbox), then what its CLI declares
    (hive.agent_clis: the user it runs as, its credentials, its first-run files), as its agent
    would meet them in worktrees below `root`, with this process's environment. A profile no
    task uses (the default, checked when nothing else is) only warns: a plan of scripts needs
    no login to any agent's service (issue 43)."""
    ctx = AgentContext(use.profile, root)
    cli = cli_for(ctx.binary)
    found = binary_check(ctx, use.describe())
    inside = sandbox_start_check(ctx, config, use.describe()) if not found.failed else None
    checks = [
        found,
        *([inside] if inside else []),
        *cli.preflight(ctx),
        *cli.credentials(ctx),
        *cli.onboarding(ctx, trust_dirs),
    ]
    if use.tasks:
        return checks
    unused = "; no task uses this profile yet"
    return [dataclasses.replace(c, status=WARN, detail=c.detail + unused) if c.failed else c for c in checks]


def _checks_here(uses: tuple[ProfileUse, ...], config: Config, root: Path) -> list[Check]:
    """On the host (a Ray task there): git and tmux, which it runs attempts with, bubblewrap,
    which sandboxes them, and the agents, which work below `root` there."""
    agents = [check for use in uses for check in agent_checks(use, root, [root], config)]
    return tool_checks(tmux_here=True) + sandbox_check(config) + agents


def sandbox_check(config: Config) -> list[Check]:
    """Whether agents (and checks) this machine runs go in the sandbox `[sandbox] mode` asks
    for; on a remote executor's hosts too (`on_every_host`)."""
    if config.sandbox_mode == "off":
        return []
    refused, warnings = policy.preflight(config)
    fix = 'install bubblewrap where it runs, or set [sandbox] mode = "off" (docs/sandbox.md)'
    if refused:
        return [fail("sandbox", refused[0], fix)]
    if warnings:
        return [warn("sandbox", warnings[0].removeprefix("warning: "), fix)]
    return [ok("sandbox", f"bubblewrap works: agents run sandboxed ([sandbox] mode = {config.sandbox_mode!r})")]
