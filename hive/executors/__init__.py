"""Executors run agents (`base.Executor`); `[executor] kind` picks one. A new
executor is one module and one line in KINDS."""

from __future__ import annotations

import importlib

from hive.executors.base import AgentRef, Executor, Launch

# kind -> "module:class", imported only when chosen (a remote executor's client
# library is an optional extra)
KINDS = {"tmux": "hive.executors.tmux:TmuxExecutor"}

_made: dict[str, Executor] = {}


def executor(kind: str = "tmux") -> Executor:
    """The executor of that kind (one per process: they hold no per-task state)."""
    if kind not in _made:
        module, _, cls = KINDS[kind].partition(":")
        _made[kind] = getattr(importlib.import_module(module), cls)()
    return _made[kind]


__all__ = ["KINDS", "AgentRef", "Executor", "Launch", "executor"]
