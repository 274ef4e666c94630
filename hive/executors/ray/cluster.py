"""One project's hold on a Ray cluster: the connection (one per process) and the project's
actor on each node (`node.NodeAgent`: detached, one per node, named after the project, the
node and the code it runs), made once and kept for the next attempts and runs."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hive.errors import HiveError
from hive.executors.base import T
from hive.executors.ray import sigterm


class _NoRay(Exception):
    """Stands for Ray's errors where Ray is not installed (then nothing raises them)."""


try:
    import ray
    from ray.exceptions import (
        ActorUnavailableError,
        ActorUnschedulableError,
        AuthenticationError,
        GetTimeoutError,
        RayActorError,
        RayTaskError,
    )
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError:  # the optional extra: `Cluster.connect` says how to install it
    ray = None  # type: ignore[assignment]
    ActorUnavailableError = ActorUnschedulableError = GetTimeoutError = RayActorError = RayTaskError = _NoRay  # type: ignore[misc,assignment]
    AuthenticationError = _NoRay  # type: ignore[misc,assignment]

# an actor that died, or one that can never run because its node is gone (it is not a RayActorError)
ActorGone = (RayActorError, ActorUnschedulableError)

NAMESPACE = "hive"
CALL_TIMEOUT = 60.0  # one call to a live actor
CLOSING_PATIENCE = 10.0  # at exit, for the nodes to end the attempts closed last
GONE_PATIENCE = 30.0  # for Ray to take a node whose actor died as dead (its health checks: ~15-30 s)
PROBE_TIMEOUT = 5.0  # for the cluster's address to accept a connection, before Ray is asked to connect
HOST_PATIENCE = 120.0  # `hive doctor`'s checks on one node: a new worker there, and agents' `--version`s


def _protocol() -> str:
    """Names the code a node actor runs: detached actors outlive the Hive that made them, and
    after an upgrade the controller must not call one that speaks an older protocol."""
    here = Path(__file__).parent
    code = b"".join((here / name).read_bytes() for name in ("node.py", "shipping.py", "lifeline.py"))
    return hashlib.sha1(code).hexdigest()[:8]


PROTOCOL = _protocol()


def project_id(root: Path) -> str:
    """Names this project's actors and its directory on every node."""
    slug = re.sub(r"[^A-Za-z0-9_.-]", "-", root.name)[:40] or "repo"
    return f"{slug}-{hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:10]}"


class Cluster:
    def __init__(self, address: str, resource: str, workdir: str, project: str) -> None:
        self.address, self.resource, self.workdir, self.project = address, resource, workdir, project
        self._agents: dict[str, Any] = {}  # node id: this project's actor there
        self._offered = False  # some node offers the resource (asked until one does)
        self._closing: list[Any] = []  # calls that end attempts on their nodes, not waited for
        self._lock = threading.Lock()
        self._pid = 0  # the process that connected

    def connect(self) -> None:
        if ray is None:
            raise HiveError(
                '[executor] kind = "ray" needs Ray, which is not installed here: '
                "pip install 'hive-agents[ray]' (into the Python that runs doit and hive, and on every node)"
            )
        with self._lock:
            if ray.is_initialized():
                if self._pid != os.getpid():
                    raise HiveError(
                        "the Ray executor cannot run in doit's forked workers: run `doit -n N -P thread` "
                        '(the default with [executor] kind = "ray"; `-P process` is not for it)'
                    )
                return
            self._pid = os.getpid()
            _answers(self.address)
            try:
                sigterm.connect(
                    ray.init,
                    address=self.address,
                    namespace=NAMESPACE,
                    logging_level=logging.ERROR,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError, AuthenticationError) as e:
                raise HiveError(_refused(self.address, e)) from None
            # after ray.init registered Ray's: atexit runs the last registered first, so this one
            # waits for the last closes before Ray's own handler disconnects
            atexit.register(self._closed)

    def _closed(self) -> None:
        """At exit: wait for the nodes to end the attempts this process closed last (a call
        not yet sent when the process disconnects would never reach them), then disconnect,
        before Ray's own exit handler would, which first sleeps half a second for its logs."""
        with contextlib.suppress(Exception):
            ray.wait(self._closing, num_returns=len(self._closing), timeout=CLOSING_PATIENCE)
        if self._pid == os.getpid():
            self.shutdown()

    def shutdown(self) -> None:
        if ray is not None and ray.is_initialized():
            ray.shutdown()

    def close_later(self, call: Any) -> None:
        """A call that ends an attempt on its node: nothing here waits for it (at exit, `_closed` does)."""
        with self._lock:
            self._closing = [c for c in self._closing if not _finished(c)] + [call]

    def offered(self) -> None:
        """Some node offers the resource, or a clear error. The first time, this project's
        actors start on every such node at once, without waiting: on a node's first attempt
        one would cost that attempt half a second."""
        if self._offered:
            return
        hosts = self.hosts()
        self._offered = True
        for node_id in hosts:
            self.agent(node_id)

    def hosts(self) -> dict[str, str]:
        """node id: address, of every live node offering the resource; a clear error if none does."""
        hosts = {
            node["NodeID"]: str(node.get("NodeManagerAddress", ""))
            for node in ray.nodes()
            if node.get("Alive") and node.get("Resources", {}).get(self.resource, 0) > 0
        }
        if not hosts:
            raise HiveError(
                f"no node of the Ray cluster offers the resource {self.resource!r}; start nodes with "
                f"`ray start --address=<head> --resources='{{\"{self.resource}\": 4}}'` ([executor] resource)"
            )
        return hosts

    def node_address(self, node_id: str) -> str:
        """A node's address (the start of its id if Ray lists it no more)."""
        return next((str(n.get("NodeManagerAddress")) for n in ray.nodes() if n.get("NodeID") == node_id), node_id[:8])

    def await_gone(self, node_id: str, patience: float = GONE_PATIENCE) -> None:
        """Until Ray takes the node as dead, so that new placements go elsewhere (at most `patience` s:
        an actor may die on a node that lives)."""
        deadline = time.monotonic() + patience
        while time.monotonic() < deadline and any(n.get("NodeID") == node_id and n.get("Alive") for n in ray.nodes()):
            time.sleep(0.5)

    def on_hosts(self, fn: Callable[[], T]) -> dict[str, T | HiveError]:
        """`fn` run on every node that offers the resource, as a Ray task of no CPU pinned there
        (not in this project's actors: `hive doctor` starts none): its answer by node address."""
        self.connect()
        task: Any = ray.remote(_call)
        calls = {
            address: task.options(
                num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)
            ).remote(fn)
            for node_id, address in self.hosts().items()
        }
        out: dict[str, T | HiveError] = {}
        for address, call in calls.items():
            try:
                out[address] = ray.get(call, timeout=HOST_PATIENCE)
            except RayTaskError as e:
                out[address] = HiveError(f"the check failed there: {e.cause}")
            except (GetTimeoutError, *ActorGone) as e:  # a node that died, or hangs
                out[address] = HiveError(f"no answer from it ({type(e).__name__})")
        return out

    def group_name(self, name: str) -> str:
        """An attempt's placement group: how a controller that comes back finds it."""
        return f"{self.project}:{name}"

    def groups(self) -> list[str]:
        """The attempts of this project that hold a unit of the resource (their names)."""
        self.connect()
        prefix = f"{self.project}:"
        return [
            g["name"][len(prefix) :]
            for g in ray.util.placement_group_table().values()
            if g.get("name", "").startswith(prefix) and g.get("state") != "REMOVED"
        ]

    def agent(self, node_id: str) -> Any:
        """This project's actor on that node, made the first time it is asked for."""
        agent = self._agents.get(node_id)
        if agent is None:
            agent = self._agents[node_id] = self._new_agent(node_id)
        return agent

    def renew(self, node_id: str) -> Any:
        """A new actor there: the one this process knew died (made anew, it ends the agents
        the dead one left)."""
        self.forget(node_id)
        return self.agent(node_id)

    def forget(self, node_id: str) -> None:
        self._agents.pop(node_id, None)

    def _new_agent(self, node_id: str) -> Any:
        from hive.executors.ray.node import NodeAgent

        prefix = f"{self.project}:node:{node_id}:"
        self._retire(prefix, keep=prefix + PROTOCOL)
        return (
            ray.remote(NodeAgent)
            .options(
                name=prefix + PROTOCOL,
                namespace=NAMESPACE,
                get_if_exists=True,
                lifetime="detached",  # its attempts outlive a controller that dies
                num_cpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                max_restarts=0,
                max_concurrency=1000,  # every attempt's watch at once
            )
            .remote(self.project, self.workdir)
        )

    def _retire(self, prefix: str, keep: str = "") -> list[str]:
        """End this project's actors named `prefix…` but `keep` (those of an older Hive: the
        new one, made next, ends the agents they left, whose controller cannot reach them)."""
        ended = []
        for actor in ray.util.list_named_actors(all_namespaces=True):
            name = actor.get("name", "")
            if actor.get("namespace") == NAMESPACE and name.startswith(prefix) and name != keep:
                with contextlib.suppress(ValueError, *ActorGone):
                    ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)
                    ended.append(name)
        return ended

    def tidy(self) -> list[str]:
        """End this project's actors on every node (kept for the next attempts), if no
        attempt of it holds a unit of the resource."""
        if self.groups():
            return []
        self._agents.clear()
        return [
            f"ended Hive's actor {name} on the Ray cluster (no attempt of this project runs)"
            for name in self._retire(f"{self.project}:node:")
        ]


def _answers(address: str) -> None:
    """A clear error at once if nothing listens at the cluster's address: `ray.init` would try to
    reach it for a quarter of an hour, saying nothing of it but Ray's own warnings (measured:
    Ray 2.60 retries 20 times, ~40 s each). "auto" looks for a cluster on this machine, and
    fails fast by itself when there is none; with $RAY_ADDRESS set, it goes there."""
    target = os.environ.get("RAY_ADDRESS", "") if address in ("", "auto") else address
    host, _, port = target.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" with no $RAY_ADDRESS, "local", or a form Ray itself will refuse
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT).close()
    except OSError as e:
        why = e.strerror or str(e) or type(e).__name__
        raise HiveError(
            f"cannot reach the Ray cluster at [executor] address = {address!r}: nothing answers at "
            f"{host}:{port} ({why}); start it (`ray start --head`), or fix the address in .hive/config.toml"
        ) from None


def _refused(address: str, error: BaseException) -> str:
    """What to tell the user when ray.init failed. Ray (2.5x) reports a cluster that wants a
    token only inside the text of the error it chains (after ~20 s of retries); with
    RAY_AUTH_MODE=token and no token it raises AuthenticationError before it tries."""
    where = f"the Ray cluster at [executor] address = {address!r}"
    causes = [error, error.__cause__, error.__context__]
    if any(isinstance(c, AuthenticationError) or "InvalidAuthToken" in str(c) for c in causes if c):
        return (
            f"{where} turned this controller away: it uses token authentication and this process "
            "sent no token it accepts. Put RAY_AUTH_MODE=token in doit's environment, and the cluster's "
            "token in $RAY_AUTH_TOKEN, in the file $RAY_AUTH_TOKEN_PATH names, or in ~/.ray/auth_token "
            "(`ray get-auth-token` on the head prints it)"
        )
    return f"cannot reach {where}: {error}; start it (`ray start --head`) or fix the address in .hive/config.toml"


def _call(fn: Callable[[], T]) -> T:
    return fn()


def node_of(group: Any) -> str:
    """The node a placed group's unit is on ("" while it is not placed)."""
    table = ray.util.placement_group_table(group)
    nodes = table.get("bundles_to_node_id") or {}
    return str(next(iter(nodes.values()), "")) if table.get("state") == "CREATED" else ""


def _finished(call: Any) -> bool:
    return bool(ray.wait([call], timeout=0)[0])


__all__ = [
    "CALL_TIMEOUT",
    "PROTOCOL",
    "ActorGone",
    "ActorUnavailableError",
    "Cluster",
    "GetTimeoutError",
    "RayActorError",
    "RayTaskError",
    "node_of",
    "project_id",
    "ray",
]
