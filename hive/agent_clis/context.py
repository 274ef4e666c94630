"""A profile as its agent will see the world, for the checks an agent CLI declares (its
credentials, first-run files, user), and the helpers they share to read the CLI's own
files. Only where a secret comes from is ever shown — never its value."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hive.agent_clis.profile import AgentProfile


@dataclass(frozen=True)
class AgentContext:
    """A profile as its agent will see the world: doit's environment plus the
    profile's `env` (Hive starts agents with exactly that), in the repo `root`."""

    profile: AgentProfile
    root: Path
    base_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    @property
    def env(self) -> dict[str, str]:
        return {**self.base_env, **dict(self.profile.env)}

    @property
    def binary(self) -> str:
        """What the profile's CLI is looked up by (`cli_for`), so its checks apply:
        `claude` for `/opt/bin/claude` as for `claude`."""
        return os.path.basename(self.profile.command[0])

    @property
    def home(self) -> Path:
        return Path(self.env.get("HOME") or Path.home())

    def get(self, var: str) -> str:
        """A variable's value if it is set to something (an empty key is no key)."""
        return self.env.get(var, "").strip()

    def where(self, var: str) -> str:
        return f"[agents.{self.profile.name}] env" if var in dict(self.profile.env) else "environment"

    def section(self) -> str:
        return f"[agents.{self.profile.name}]"


def load_json(path: Path) -> tuple[dict[str, Any], str]:
    """(the object in `path`, "") or ({}, what is wrong with it)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}, "does not exist"
    except (OSError, ValueError) as e:
        return {}, f"cannot be read as JSON ({e})"
    return (data, "") if isinstance(data, dict) else ({}, "is not a JSON object")


def table(data: dict[str, Any], key: str) -> dict[str, Any]:
    """A nested table of a user's file, or {} when it is missing or not a table."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def first_set(ctx: AgentContext, names: tuple[str, ...]) -> str:
    """The first of these variables that is set for the agent, or ""."""
    return next((var for var in names if ctx.get(var)), "")
