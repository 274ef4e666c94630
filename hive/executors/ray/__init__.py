"""The Ray executor (`[executor] kind = "ray"`): agents on the nodes of a Ray cluster,
the controller (doit, state, merges) here. `executor.py` is the controller's side (with
`cluster.py`, the connection and the project's actors, and `link.py`, one attempt's news
written here), `node.py` the actor on each node (one per project and node, holding its
attempts), `shipping.py` what travels between them."""

from hive.executors.ray.executor import RayExecutor

__all__ = ["RayExecutor"]
