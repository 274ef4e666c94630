"""A repository's Hive project: its root, its config and every plan in it, loaded
once per command or run and handed down."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hive.executors import EXECUTORS
from hive.notifiers import CHANNELS
from hive.plan.cache import PlanSet, load_plans
from hive.settings import config as settings
from hive.settings.config import Config
from hive.store.paths import Paths


@dataclass(frozen=True)
class Project:
    root: Path
    config: Config
    plans: PlanSet

    @property
    def paths(self) -> Paths:
        return Paths(self.root)


def load_project(root: Path, strict: bool = True) -> Project:
    """`strict=False` for what only shows a run (status, the dashboard, logs): an approved plan
    that does not parse is left out and its errors kept in `plans.errors`, instead of stopping."""
    config = load_repo_config(root)
    paths = Paths(root)
    return Project(root, config, load_plans(paths.plans, config, paths.plan_cache, strict))


def load_config(path: Path, main_branch_fallback: str | None = None) -> Config:
    """`settings.load_config`, with the chosen executor's own `[executor]` settings checked
    by its plugin's keys, and `[notify]` by the channels' keys: every problem of the file at once."""
    executors = {kind: plugin.keys for kind, plugin in EXECUTORS.items()}
    channels = [channel.key for channel in CHANNELS.values()]
    return settings.load_config(path, main_branch_fallback, executors=executors, channels=channels)


def load_repo_config(root: Path) -> Config:
    """The repo's config; without a config file, main is the branch checked out now."""
    path = Paths(root).config
    if path.exists():
        return load_config(path)
    from hive.adapters import git  # only here: `doit list` on a configured repo runs no git

    return load_config(path, main_branch_fallback=git.current_branch(root) or None)
