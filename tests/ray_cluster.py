"""A real multi-node Ray cluster on this one machine, for the Ray executor's tests (issue 11).

    with LocalRayCluster(tmp, workers=2) as cluster:
        with cluster.connect():               # ray.init(address=cluster.address) ... ray.shutdown()
            ray.get(f.options(resources={"hive_agent": 1}).remote())
        cluster.kill_node(1)                  # SIGKILL every process of worker node 1

One `ray start` per node, set up as ../shared/RAY-NOTES.md found necessary:

- each node on its own loopback address (head 127.0.0.2, worker n on 127.0.0.(2+n)): with
  127.0.0.1 Ray rewrites the address to the machine's outward one and workers fail to register;
- each node its own short `--temp-dir` (a shared one makes two workers collide on socket names;
  short because unix socket paths are limited to ~107 bytes);
- every port flag set to a port that was free, picked below the kernel's ephemeral range so an
  outgoing connection cannot have taken it by the time Ray binds it;
- the head offers no `hive_agent` and no CPUs (nothing is placed there), has no dashboard, and
  usage stats are off;
- each node's processes inherit its `ray start`'s environment: `HIVE_NODE_WORKDIR=<tmp>/node-<n>`
  and the marker `HIVE_RAY_NODE=<cluster id>-<n>` (0 is the head), by which `kill_node` and
  `stop` find them in /proc/<pid>/environ and SIGKILL them by pid. Ray's workers put themselves
  in their own process groups, so killing `ray start`'s group would not stop a node, and `ray stop`
  stops every Ray on the host. `SPT_NOENV=1` keeps Ray's setproctitle from overwriting the
  environment that /proc shows (without it the agents and workers, `ray::...`, lose the marker);
  as a second net, a node's processes are also found by the session of its `ray start` and as
  descendants. Under the `isolated` fixture they also inherit its `HIVE_TMUX_SOCKET` marker, so a
  test that does not stop its cluster fails with the leftovers.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

HERE = Path(__file__).resolve().parent
HEAD_IP = "127.0.0.2"
MARKER = "HIVE_RAY_NODE"
# Ports Ray binds per node besides the worker ports (the head adds GCS, client server, dashboard).
NODE_PORT_FLAGS = (
    "--node-manager-port",
    "--object-manager-port",
    "--dashboard-agent-listen-port",
    "--dashboard-agent-grpc-port",
    "--runtime-env-agent-port",
    "--metrics-export-port",
)
HEAD_PORT_FLAGS = ("--port", "--ray-client-server-port", "--dashboard-port")
WORKER_PORTS = 24  # one per worker process a node may run at once (task workers + actors)
# below /proc/sys/net/ipv4/ip_local_port_range (32768-60999), above Ray Client's per-client servers (23000-23999)
PORT_RANGE = (24000, 32000)
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # Ray's default is 30% of RAM per node, in /dev/shm


class RayClusterError(RuntimeError):
    """A node did not start or answer in time; the message carries its log tail."""


@dataclass
class RayNode:
    """One `ray start`: index 0 is the head, 1.. the workers."""

    index: int
    ip: str
    temp_dir: Path
    workdir: Path | None  # HIVE_NODE_WORKDIR (workers only)
    marker: str  # the value of HIVE_RAY_NODE in every process of this node
    log: Path  # what `ray start` printed
    sid: int = 0  # the session of its `ray start`, which all its processes stay in
    node_id: str = ""  # Ray's node id (hex), known once the node answered
    env: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def is_head(self) -> bool:
        return self.index == 0

    def pids(self) -> dict[int, str]:
        """pid -> command line of this node's live processes."""
        return processes_of([self._marker_entry], [self.sid] if self.sid else [])

    def kill(self) -> dict[int, str]:
        """SIGKILL every process of this node; returns what was killed."""
        return kill_all([self._marker_entry], [self.sid] if self.sid else [])

    @property
    def _marker_entry(self) -> bytes:
        return f"{MARKER}={self.marker}".encode()

    @property
    def logs(self) -> Path:
        """Where this node's Ray processes write their logs (raylet.err, gcs_server.out, ...)."""
        return self.temp_dir / "session_latest" / "logs"

    def log_tail(self, lines: int = 20) -> str:
        """The end of `ray start`'s output and of the raylet's and GCS's logs (not their periodic
        state dumps, nor a crash's stack frames, which would push out the line saying why)."""
        out = []
        for path in [self.log, *(self.logs / f"{p}.{s}" for p in ("raylet", "gcs_server") for s in ("err", "out"))]:
            try:
                text = [line for line in path.read_text(errors="replace").splitlines() if not _NOISE.search(line)]
            except OSError:
                continue
            if text:
                out.append(f"--- {path.name}\n" + "\n".join(text[-lines:]))
        return "\n".join(out) or f"(no logs under {self.temp_dir})"


def _exception_in(log: Path) -> str:
    """`: <the last exception line>` of a Python traceback in `log`, or ""."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    found = [line for line in lines if _EXCEPTION.match(line)]
    return f": {found[-1].strip()}" if found else ""


_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")
_NOISE = re.compile(r"\[state-dump\]|\([^()]*\+0x[0-9a-f]+\) \[0x[0-9a-f]+\]")


@dataclass(frozen=True)
class _Proc:
    pid: int
    ppid: int
    sid: int
    cmdline: str
    environ: frozenset[bytes]


def _snapshot() -> list[_Proc]:
    """Every live process but zombies and this one."""
    procs = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state, ppid, _pgrp, sid = f.read().rsplit(b")", 1)[1].split()[:4]
            if state == b"Z":
                continue
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = frozenset(f.read().split(b"\0"))
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError):  # gone meanwhile
            continue
        procs.append(_Proc(int(name), int(ppid), int(sid), cmdline, environ))
    return procs


def processes_of(markers: Iterable[bytes], sids: Iterable[int] = ()) -> dict[int, str]:
    """pid -> command line of the processes whose environment has one of the entries `markers`
    (e.g. b"HIVE_RAY_NODE=r0123456789-1"), or whose session is one of `sids`, and of all their
    descendants. The environment is enough while SPT_NOENV=1 holds (see the module's doc); a
    process that retitles itself without it shows an overwritten environment in /proc, but stays
    in the session of the `ray start` that began its node, or below one that was found."""
    procs = _snapshot()
    markers, sids = tuple(markers), set(sids)
    chosen = {p.pid for p in procs if p.sid in sids or not p.environ.isdisjoint(markers)}
    grew = True
    while grew:
        more = {p.pid for p in procs if p.ppid in chosen} - chosen
        chosen |= more
        grew = bool(more)
    return {p.pid: p.cmdline for p in procs if p.pid in chosen}


def kill_all(markers: Iterable[bytes], sids: Iterable[int] = (), timeout: float = 10.0) -> dict[int, str]:
    """SIGKILL the processes `processes_of` finds until none is left (a raylet may be forking a
    worker as we kill it, hence the loop); returns what was killed. Raises if some survive."""
    markers, sids = tuple(markers), tuple(sids)
    killed: dict[int, str] = {}
    deadline = time.monotonic() + timeout
    while left := processes_of(markers, sids):
        if time.monotonic() > deadline:
            raise RayClusterError(f"processes survive SIGKILL: {left}")
        for pid, cmd in left.items():
            try:
                os.kill(pid, signal.SIGKILL)
                killed[pid] = cmd
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    return killed


def _port_is_free(port: int) -> bool:
    # 0.0.0.0 conflicts with a listener on any address, so a port free here is free on every node
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_ports(count: int, taken: set[int]) -> list[int]:
    """`count` ports that are free now and not in `taken` (which they are added to)."""
    ports: list[int] = []
    rng = random.Random()  # not the global one: tests may seed it
    for _ in range(count * 50):
        if len(ports) == count:
            return ports
        port = rng.randrange(*PORT_RANGE)
        if port not in taken and _port_is_free(port):
            taken.add(port)
            ports.append(port)
    raise RayClusterError(f"found only {len(ports)} of {count} free ports in {PORT_RANGE}")


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise RayClusterError(f"Ray is not installed ({e}): pip install -e '.[ray]'") from e
    if not hasattr(ray, "init"):  # tests/ray, a namespace package, found instead of the real one
        raise RayClusterError(f"Ray is not installed (`import ray` found {ray.__path__}): pip install -e '.[ray]'")
    return ray


def driver_connected() -> bool:
    """Whether this process is a Ray driver now (without importing Ray if nothing did)."""
    ray = sys.modules.get("ray")
    return bool(ray and ray.is_initialized())


def shutdown_driver() -> None:
    if driver_connected():
        sys.modules["ray"].shutdown()


def _ray_executable() -> str:
    beside = Path(sys.executable).with_name("ray")
    found = str(beside) if beside.exists() else shutil.which("ray")
    if not found:
        raise RayClusterError("no `ray` executable: install the extra, pip install -e '.[ray]'")
    return found


def _probe() -> dict[str, str]:
    """Runs on a worker node: who answered."""
    import ray

    return {
        "node_id": ray.get_runtime_context().get_node_id(),
        "marker": os.environ.get(MARKER, ""),
        "workdir": os.environ.get("HIVE_NODE_WORKDIR", ""),
    }


class LocalRayCluster:
    """A head (no `resource`, no CPUs) and `workers` worker nodes each offering `per_worker` units
    of `resource` and `cpus` CPUs, as separate `ray start` processes. `tmp` holds the nodes'
    workdirs (`tmp/node-<n>`); their Ray temp dirs go under a short directory in /tmp.
    `node_env(n)` adds to worker n's environment (e.g. its own HOME or TMUX_TMPDIR); `pythonpath`
    is where the nodes' workers import code from beside the venv (this directory always);
    `dead_after` is how long the head takes to declare a silent node dead. With `auth_token` the
    cluster uses Ray's token authentication with that token (a driver then needs RAY_AUTH_MODE=token
    and RAY_AUTH_TOKEN; start() waits only for every `ray start` to return, since this process
    connects without one); without, it uses none, whatever ~/.ray/auth_token holds."""

    def __init__(
        self,
        tmp: Path,
        workers: int = 2,
        resource: str = "hive_agent",
        per_worker: int = 2,
        cpus: int = 2,
        node_env: Callable[[int], Mapping[str, str]] | None = None,
        pythonpath: Sequence[Path] = (),
        dead_after: float = 3.0,
        timeout: float = 60.0,
        auth_token: str = "",
    ) -> None:
        if not 1 <= workers <= 250:
            raise ValueError(f"workers must be 1..250, not {workers}")
        self.tmp = Path(tmp)
        self.workers = workers
        self.resource = resource
        self.per_worker = per_worker
        self.cpus = cpus
        self.node_env = node_env
        self.pythonpath = [HERE, *pythonpath]
        self.dead_after = dead_after
        self.timeout = timeout
        self.auth_token = auth_token
        self.id = f"r{uuid.uuid4().hex[:10]}"
        self.address = ""  # "127.0.0.2:<gcs port>" for ray.init(address=...), set by start()
        # "ray://127.0.0.2:<port>", Ray Client's (a driver off the cluster). Flaky here: about one
        # connection in ten hangs 40 s and fails (its per-client server never comes up); prefer `address`.
        self.client_address = ""
        self._root: Path | None = None
        self._nodes: list[RayNode] = []
        self._ports: set[int] = set()
        self._launchers: dict[int, subprocess.Popen[bytes]] = {}  # node index -> its `ray start`
        self._replaced: set[str] = set()  # Ray's ids of nodes started again since (restart_node)

    # --- life cycle -------------------------------------------------------------------------

    def start(self) -> LocalRayCluster:
        """Start the head and all workers at once, and wait until each worker has run a task that
        needs `resource`. On failure everything started is killed before raising. A raylet that
        gave up on its node's dashboard agent is Ray's fixed 15 s wait for the agent's port file
        (ray-project/ray#65983), which a busy 2-core machine can miss: the cluster is started
        again once."""
        for again in (True, False):
            try:
                return self._start()
            except RayClusterError as e:
                why = self._agent_too_slow() or self._start_failed()
                self.stop()
                if not (again and why):
                    raise
                print(f"ray_cluster: starting the cluster again: {why}\n{e}", file=sys.stderr)
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _start(self) -> LocalRayCluster:
        self._root = Path(tempfile.mkdtemp(prefix="hr", dir="/tmp"))  # short: socket paths
        deadline = time.monotonic() + self.timeout
        # all at once: a worker's `ray start` retries the GCS until the head is up
        for n in range(self.workers + 1):
            self._launch(n)
        _import_ray()  # meanwhile (~1 s)
        if self.auth_token:
            for n in range(self.workers + 1):
                self._wait_launched(n, deadline)
        else:
            self._wait_launched(0, deadline)
            self._wait_answering(deadline)
        return self

    def _agent_too_slow(self) -> str:
        """The line of a node's raylet.err saying it stopped waiting for its agent ("")."""
        for node in self._nodes:
            with suppress(OSError):
                for line in (node.logs / "raylet.err").read_text(errors="replace").splitlines():
                    if "Timed out waiting for file" in line:
                        return f"node {node.index}: {line.strip()}"
        return ""

    def _start_failed(self) -> str:
        """What a worker's `ray start` that exited non-zero said last ("" if none did). Seen once
        in CI under load (a worker's `ray start` exited 1 while the head and the other worker came
        up); its cause was cut from the report, so it is printed whole when it happens again."""
        for node in self._nodes[1:]:
            launcher = self._launchers.get(node.index)
            if launcher is not None and launcher.poll() not in (None, 0):
                with suppress(OSError):
                    return f"node {node.index}: `ray start` exited {launcher.returncode}:\n" + node.log.read_text(
                        errors="replace"
                    )
        return ""

    def processes(self) -> dict[int, str]:
        """pid -> command line of every live process of every node."""
        return processes_of(*self._identities())

    def stop(self) -> dict[int, str]:
        """SIGKILL every process of every node and remove the temp dirs; returns what was killed.
        Safe to call twice."""
        killed = kill_all(*self._identities())
        for proc in self._launchers.values():
            proc.wait()  # `ray start` itself has exited or was just killed: reap it
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
        return killed

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- what tests use -----------------------------------------------------------------------

    def nodes(self) -> list[RayNode]:
        """All nodes, the head first (index 0), then worker n at index n."""
        return list(self._nodes)

    def node(self, n: int) -> RayNode:
        return self._nodes[n]

    def node_of(self, node_id: str) -> RayNode:
        """The node with Ray's node id `node_id` (e.g. from get_runtime_context().get_node_id())."""
        for node in self._nodes:
            if node.node_id == node_id:
                return node
        raise KeyError(f"no node {node_id} in this cluster: {[n.node_id for n in self._nodes]}")

    def kill_node(self, n: int) -> dict[int, str]:
        """SIGKILL every process of worker node n (raylet, workers, actors, and whatever they
        started, e.g. tmux and agents), like a machine dying; returns what was killed."""
        if not 1 <= n <= self.workers:
            raise ValueError(f"no worker node {n}: 1..{self.workers}")
        return self._nodes[n].kill()

    def restart_node(self, n: int) -> RayNode:
        """Start worker node n again after `kill_node(n)`, like a machine back up: the same address
        and workdir (what its last life left there), a new Ray node id; returns once it answers."""
        self.kill_node(n)  # whatever was left of it (and a ValueError for no such worker node)
        self._launchers[n].wait()
        self._replaced.add(self._nodes[n].node_id)  # the head may list it alive a while yet
        self._launch(n)
        deadline = time.monotonic() + self.timeout
        try:
            self._wait_answering(deadline, [self._nodes[n]])  # not another node that is down too
        except BaseException:
            self.kill_node(n)
            raise
        return self._nodes[n]

    def wait_node_dead(self, n: int, timeout: float | None = None) -> float:
        """Wait (a driver connected) until the head has marked node n dead, `dead_after` seconds or
        so after it stopped answering; returns the seconds waited. Until then Ray may still place
        new actors there, which then die with ActorDiedError without having run."""
        ray = _import_ray()
        started = time.monotonic()
        deadline = started + (timeout if timeout is not None else self.dead_after + 15)
        node_id = self._nodes[n].node_id
        while any(info["NodeID"] == node_id and info["Alive"] for info in ray.nodes()):
            if time.monotonic() > deadline:
                raise RayClusterError(f"the head still lists node {n} alive after {time.monotonic() - started:.1f}s")
            time.sleep(0.1)
        return time.monotonic() - started

    @property
    def env(self) -> dict[str, str]:
        """For a driver run as a subprocess (doit): a bare `ray.init()` reads RAY_ADDRESS."""
        return {"RAY_ADDRESS": self.address}

    @contextmanager
    def connect(self, **init_kwargs: Any) -> Iterator[None]:
        """This process as a driver: ray.init(address=...) and, whatever happens, ray.shutdown()
        (call stop() after leaving this, not inside it)."""
        ray = _import_ray()

        if ray.is_initialized():
            raise RayClusterError("a Ray driver is already connected in this process: ray.shutdown() first")
        ray.init(address=self.address, logging_level="ERROR", log_to_driver=False, **init_kwargs)
        try:
            yield
        finally:
            ray.shutdown()

    def _identities(self) -> tuple[list[bytes], list[int]]:
        return [n._marker_entry for n in self._nodes], [n.sid for n in self._nodes if n.sid]

    # --- start-up ---------------------------------------------------------------------------

    def _node_record(self, n: int) -> RayNode:
        assert self._root is not None
        workdir = None if n == 0 else self.tmp / f"node-{n}"
        if workdir is not None:
            workdir.mkdir(parents=True, exist_ok=True)
        temp_dir = self._root / str(n)
        for again in range(1, 100):  # a node started again (restart_node) gets a fresh one
            if not temp_dir.exists():
                break
            temp_dir = self._root / f"{n}.{again}"
        temp_dir.mkdir()
        node = RayNode(
            index=n,
            ip=f"127.0.0.{2 + n}",
            temp_dir=temp_dir,
            workdir=workdir,
            marker=f"{self.id}-{n}",
            log=self._root / f"start-{n}.log",
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update(RAY_USAGE_STATS_ENABLED="0", SPT_NOENV="1", **{MARKER: node.marker})
        # said either way: a `ray start` where ~/.ray/auth_token exists would otherwise ask for it
        env["RAY_AUTH_MODE"] = "token" if self.auth_token else "disabled"
        if self.auth_token:
            env["RAY_AUTH_TOKEN"] = self.auth_token
        # a real node has the code installed; here code defined in tests must be importable there
        env["PYTHONPATH"] = os.pathsep.join([*map(str, self.pythonpath), *filter(None, [env.get("PYTHONPATH")])])
        if node.is_head:
            env.update(self._health_checks())
        if workdir is not None:
            env["HIVE_NODE_WORKDIR"] = str(workdir)
            env.update(self.node_env(n) if self.node_env else {})
        node.env = env
        return node

    def _health_checks(self) -> dict[str, str]:
        """The GCS marks a node dead (its actors' calls raise ActorDiedError, its resources go) after
        `dead_after` seconds without answers, not Ray's ~15 s: tests of a dying node wait less."""
        period_ms = str(max(int(self.dead_after * 1000 / 3), 100))
        return {
            "RAY_health_check_period_ms": period_ms,
            "RAY_health_check_timeout_ms": period_ms,
            "RAY_health_check_failure_threshold": "3",
        }

    def _argv(self, node: RayNode) -> list[str]:
        argv = [_ray_executable(), "start", f"--node-ip-address={node.ip}", f"--temp-dir={node.temp_dir}"]
        argv += ["--disable-usage-stats", "--log-color=false", f"--object-store-memory={OBJECT_STORE_BYTES}"]
        # no log monitor (one Python process per node, ~80 MB): nothing streams workers' output to drivers
        argv.append("--include-log-monitor=false")
        flags = (HEAD_PORT_FLAGS if node.is_head else ()) + NODE_PORT_FLAGS
        ports = free_ports(len(flags), self._ports)
        argv += [f"{flag}={port}" for flag, port in zip(flags, ports, strict=True)]
        argv.append("--worker-port-list=" + ",".join(map(str, free_ports(WORKER_PORTS, self._ports))))
        if node.is_head:
            self.address = f"{node.ip}:{ports[0]}"  # --port: the GCS
            self.client_address = f"ray://{node.ip}:{ports[1]}"  # --ray-client-server-port
            # no autoscaler monitor (a Python process, ~80 MB): the nodes are fixed
            return [*argv, "--head", "--include-dashboard=false", "--num-cpus=0", "--no-monitor"]
        resources = json.dumps({self.resource: self.per_worker})
        return [*argv, f"--address={self.address}", f"--num-cpus={self.cpus}", f"--resources={resources}"]

    def _launch(self, n: int) -> RayNode:
        node = self._node_record(n)
        if n < len(self._nodes):
            self._nodes[n] = node
        else:
            self._nodes.append(node)
        with open(node.log, "wb") as log:
            # its own session: a signal meant for pytest's group never reaches the nodes
            proc = subprocess.Popen(
                self._argv(node),
                env=node.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        node.sid = proc.pid  # start_new_session: its pid is the session id
        self._launchers[n] = proc
        return node

    def _wait_launched(self, n: int, deadline: float) -> None:
        """Node n's `ray start` returned 0, which it does once the node's processes run."""
        try:
            code = self._launchers[n].wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            raise self._error(n, f"`ray start` did not return in {self.timeout}s") from None
        if code != 0:
            raise self._error(n, f"`ray start` exited {code}")

    def _check_launch(self, n: int) -> None:
        """Node n's `ray start` is running or returned 0."""
        code = self._launchers[n].poll()
        if code not in (None, 0):
            raise self._error(n, f"`ray start` exited {code}")

    def _error(self, n: int, what: str) -> RayClusterError:
        """`what` happened to node n: the error, with the exception its `ray start` ended with
        first (a report cut short keeps it), then its logs' tail (and the head's)."""
        node = self._nodes[n]
        tails = node.log_tail() if node.is_head else node.log_tail() + "\n" + self._nodes[0].log_tail(10)
        return RayClusterError(f"node {n} ({node.ip}): {what}{_exception_in(node.log)}\n{tails}")

    def _wait_answering(self, deadline: float, nodes: list[RayNode] | None = None) -> None:
        """Each worker node of `nodes` (all) has run, pinned to it, a task that needs one unit of `resource`."""
        ray = _import_ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = self._nodes if nodes is None else nodes
        with self.connect():
            for node in nodes:
                node.node_id = self._wait_registered(node, deadline)
            probe = ray.remote(_probe)
            pending = {
                probe.options(
                    resources={self.resource: 1},
                    num_cpus=0,
                    max_retries=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
                ).remote(): node
                for node in nodes
                if not node.is_head
            }
            for ref, node in pending.items():
                try:
                    answer = ray.get(ref, timeout=max(deadline - time.monotonic(), 0.1))
                except ray.exceptions.GetTimeoutError:
                    raise self._error(node.index, f"ran no task needing {self.resource} in {self.timeout}s") from None
                if answer["marker"] != node.marker:
                    raise self._error(node.index, f"the task pinned to it ran elsewhere: {answer}")
                self._check_launch(node.index)

    def _wait_registered(self, node: RayNode, deadline: float) -> str:
        """Ray's id for `node`, once the GCS lists it alive. Not waiting for a worker's `ray start`
        to return saves ~2 s: it lingers that long after its node registered."""
        ray = _import_ray()
        while time.monotonic() < deadline:
            for info in ray.nodes():
                if info["Alive"] and info["NodeManagerAddress"] == node.ip and info["NodeID"] not in self._replaced:
                    return str(info["NodeID"])
            self._check_launch(node.index)
            time.sleep(0.2)
        raise self._error(node.index, f"not registered with the head after {self.timeout}s")


if __name__ == "__main__":  # python tests/ray_cluster.py: start, report the start-up time, stop
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as d, LocalRayCluster(Path(d)) as cluster:
        print(f"up in {time.monotonic() - started:.1f}s at {cluster.address}")
        for n in cluster.nodes():
            print(n.index, n.ip, n.node_id, len(n.pids()), "processes")
