"""Executors run agents (`base.Executor`); `[executor] kind` picks one. A new
executor is one module and one line in KINDS."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from hive.executors.base import AgentRef, Checkout, Executor, Launch
from hive.settings.config import LOCAL_EXECUTOR

if TYPE_CHECKING:
    from hive.settings.config import Config

# kind -> "module:class", imported only when chosen (a remote executor's client
# library is an optional extra)
KINDS = {"tmux": "hive.executors.tmux:TmuxExecutor", "ray": "hive.executors.ray:RayExecutor"}
LOCAL = LOCAL_EXECUTOR

_made: dict[tuple[str, str], Executor] = {}


def executor(kind: str = LOCAL, config: Config | None = None, root: Path | None = None) -> Executor:
    """The executor of that kind for the project at `root` (one per process and project,
    made with its [executor] settings; they hold no per-task state on disk)."""
    key = (kind, str(root or ""))
    if key not in _made:
        module, _, cls = KINDS[kind].partition(":")
        made = getattr(importlib.import_module(module), cls)
        _made[key] = made() if kind == LOCAL else made(config, root)
    return _made[key]


__all__ = ["KINDS", "LOCAL", "AgentRef", "Checkout", "Executor", "Launch", "executor"]
