"""A repository's Hive project: its root, its config and every plan in it, loaded
once per command or run and handed down."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hive.plan.cache import PlanSet, load_plans
from hive.settings.config import Config, load_repo_config
from hive.store.paths import Paths


@dataclass(frozen=True)
class Project:
    root: Path
    config: Config
    plans: PlanSet

    @property
    def paths(self) -> Paths:
        return Paths(self.root)


def load_project(root: Path) -> Project:
    config = load_repo_config(root)
    paths = Paths(root)
    return Project(root, config, load_plans(paths.plans, config, paths.plan_cache))
