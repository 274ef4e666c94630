"""The local executor (`[executor] kind = "tmux"`, the default): each agent in its own tmux
session on this machine. `executor.py` is the executor; this file its entry in the registry,
read without loading it (so `doit list` imports no tmux or process code)."""

from __future__ import annotations

from hive.executors.base import Capabilities, Plugin

PLUGIN = Plugin(
    "tmux",
    "hive.executors.tmux.executor:TmuxExecutor",
    Capabilities(local_tmux=True),
    about="agents in tmux sessions on this machine",
)
