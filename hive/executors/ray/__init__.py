"""The Ray executor (`[executor] kind = "ray"`): agents on the nodes of a Ray cluster,
the controller (doit, state, merges) here. `executor.py` is the controller's side (with
`cluster.py`, the connection and the project's actors, and `link.py`, one attempt's news
written here), `node.py` the actor on each node (one per project and node, holding its
attempts), `shipping.py` what travels between them.

This file is its entry in the registry: its capabilities and its own `[executor]` settings,
read without importing Ray (an optional extra, about a second to import)."""

from __future__ import annotations

from hive.executors.base import Capabilities, Plugin
from hive.settings.schema import Key

PLUGIN = Plugin(
    "ray",
    "hive.executors.ray.executor:RayExecutor",
    # Ray's client cannot live through a fork; an attempt's news come every few hundred ms,
    # so a watch looking every 25 ms would only cost CPU
    Capabilities(remote_checkout=True, threads_only=True, poll=0.1, naps=True),
    keys=(
        Key(
            "executor",
            "address",
            "address",
            "nonempty",
            "auto",
            'kind = "ray": the cluster — "auto", the head\'s GCS "10.0.0.5:6379", or "ray://head:10001".',
        ),
        Key(
            "executor",
            "resource",
            "resource",
            "nonempty",
            "hive_agent",
            'kind = "ray": the custom resource each agent takes one unit of, so a node\'s count caps its agents.',
        ),
        Key(
            "executor",
            "workdir",
            "workdir",
            "nonempty",
            "~/.hive-node",
            'kind = "ray": where each node keeps its repository cache and worktrees (a node\'s '
            "`HIVE_NODE_WORKDIR` overrides it).",
        ),
    ),
    about="agents on the nodes of a Ray cluster (`pip install 'hive-agents[ray]'`)",
)
