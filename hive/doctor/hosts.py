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
from hive.checks import Check, fail
from hive.doctor.agents import binary_check
from hive.doctor.profiles_used import ProfileUse
from hive.doctor.repo import tool_checks
from hive.errors import HiveError
from hive.executors import Executor


def on_every_host(executor: Executor, uses: Sequence[ProfileUse]) -> list[Check]:
    """Each profile's checks run on every host of a remote executor."""
    try:
        answers = executor.on_hosts(functools.partial(_checks_here, tuple(uses)))
    except HiveError as e:
        return [fail("agent hosts", str(e), "start the hosts, or fix [executor] in .hive/config.toml")]
    checks: list[Check] = []
    for host, found in sorted(answers.items()):
        if isinstance(found, HiveError):
            checks.append(fail(f"host {host}", str(found), f"look at the node {host} (`ray status`, its logs)"))
        else:
            checks += [dataclasses.replace(c, name=f"{c.name} on {host}") for c in found]
    return checks


def agent_checks(use: ProfileUse, root: Path, trust_dirs: Sequence[Path]) -> list[Check]:
    """A profile's program, then what its CLI declares (hive.agent_clis: the user it runs
    as, its credentials, its first-run files), as its agent would meet them in worktrees
    below `root`, with this process's environment."""
    ctx = AgentContext(use.profile, root)
    cli = cli_for(ctx.binary)
    return [
        binary_check(ctx, use.describe()),
        *cli.preflight(ctx),
        *cli.credentials(ctx),
        *cli.onboarding(ctx, trust_dirs),
    ]


def _checks_here(uses: tuple[ProfileUse, ...], root: Path) -> list[Check]:
    """On the host (a Ray task there): git and tmux, which it runs attempts with, and the
    agents, which work below `root` there."""
    return tool_checks(tmux_here=True) + [check for use in uses for check in agent_checks(use, root, [root])]
