"""Executors run agents (`base.Executor`); `[executor] kind` picks one. Adding an executor is
one module (or folder) that defines it and its `PLUGIN` record — capabilities and its own
`[executor]` settings, as data — plus one line in EXECUTORS."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from hive.executors import ray, tmux
from hive.executors.base import Agent, AgentRef, Capabilities, Checkout, Executor, Launch, Plugin

if TYPE_CHECKING:
    from hive.settings.config import Config

# kind -> its plugin: what the engine, the loader and the config need, without importing it
EXECUTORS: dict[str, Plugin] = {plugin.kind: plugin for plugin in (tmux.PLUGIN, ray.PLUGIN)}
LOCAL = tmux.PLUGIN.kind  # the default

_made: dict[tuple[str, str], Executor] = {}


def executor(kind: str = LOCAL, config: Config | None = None, root: Path | None = None) -> Executor:
    """The executor of that kind for the project at `root` (one per process and project,
    made with its [executor] settings; they hold no per-task state on disk)."""
    key = (kind, str(root or ""))
    if key not in _made:
        module, _, cls = EXECUTORS[kind].factory.partition(":")
        made = getattr(importlib.import_module(module), cls)
        _made[key] = made(config.executor_options if config else None, root)
    return _made[key]


def capabilities(kind: str) -> Capabilities:
    return EXECUTORS[kind].capabilities


__all__ = [
    "EXECUTORS",
    "LOCAL",
    "Agent",
    "AgentRef",
    "Capabilities",
    "Checkout",
    "Executor",
    "Launch",
    "Plugin",
    "capabilities",
    "executor",
]
