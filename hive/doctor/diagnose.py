"""`hive doctor`'s whole check-up: the tools, the repository, and every agent
profile that approved plans still need (binary and version, root, credentials,
first-run files). Returns records; the CLI prints them."""

from __future__ import annotations

from pathlib import Path

from hive import __version__, executors
from hive.about import DISTRIBUTION
from hive.checks import Check, fail, ok
from hive.doctor.forge import forge_checks
from hive.doctor.hosts import agent_checks, on_every_host, sandbox_check
from hive.doctor.profiles_used import ProfileUse, not_done, profiles_in_use
from hive.doctor.repo import repo_checks, tool_checks
from hive.errors import HiveError
from hive.executors import capabilities
from hive.plan.model import Plan
from hive.project import load_repo_config
from hive.settings.config import Config
from hive.store.paths import Paths


def diagnose(root: Path) -> list[Check]:
    """Every check, in the order printed; the first names this Hive's build (its commit), as a
    bug report needs it."""
    build = ok("hive", f"{DISTRIBUTION} {__version__}")
    try:
        config = load_repo_config(root)
    except HiveError as e:
        return [build, _unreadable("config", e), *tool_checks(tmux_here=True)]
    checks: list[Check] = [build]
    plans: tuple[Plan, ...] = ()
    try:
        plans = _load_plans(root, config)
    except HiveError as e:
        checks.append(_unreadable("plans", e))
    checks += tool_checks(capabilities(config.executor).local_tmux) + repo_checks(root, config.main_branch)
    checks += sandbox_check(config)
    checks += forge_checks(root, config, Paths(root).hive / "forge")
    uses = profiles_in_use(config, plans, not_done(root, config))
    if not uses:
        if config.default_agent not in config.agents:  # `default = "script"`: no agent at all
            return checks + [ok("agents", "no approved plan has a task for an agent to do")]
        checks.append(
            ok(
                "agents",
                f"no approved plan has an agent task left; checking the default profile {config.default_agent!r}",
            )
        )
        uses = [ProfileUse(config.agents[config.default_agent])]
    executor = executors.executor(config.executor, config, root)
    if executor.capabilities.remote_checkout:  # the agents run on other hosts: checked there, not here
        return checks + on_every_host(executor, uses, config)
    dirs = _trust_dirs(root, config)
    for use in uses:
        checks += agent_checks(use, root, dirs, config)
    return checks


def _load_plans(root: Path, config: Config) -> tuple[Plan, ...]:
    from hive.plan.cache import load_plans

    paths = Paths(root)
    return load_plans(paths.plans, config, paths.plan_cache).plans


def _trust_dirs(root: Path, config: Config) -> list[Path]:
    """Where agents run: the repo (which covers worktrees below it), and the worktree
    base too when it is configured elsewhere."""
    base = executors.executor(config.executor, config, root).worktree_base(root, config.worktree_base)
    return [root] if base == root or root in base.parents else [root, base]


def _unreadable(what: str, error: HiveError) -> Check:
    return fail(what, "; ".join(error.problems), "fix what it names, then run `hive doctor` again")
