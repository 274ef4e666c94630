"""The soak on the Ray executor: `python -m tests.soak --ray` (see docs/development.md, "The soak").

One local cluster for every trial (tests/ray_cluster.py: a head and two worker nodes, each
offering 4 `hive_agent`), started with the soak's fake HOME, pinned git identity and its own
tmux socket name, so each node's agents run in a tmux server `skr<pid>-<node id>`. A trial is
trial.py's, with `[executor] kind = "ray"` and these differences:

- the agents log their starts to the trial's own `fake/spawns.log` (`FAKE_LOG_DIR`): on a node
  HIVE_ROOT is the node's copy, which goes away with the attempt;
- `tmux-kill` kills every node's tmux server; `rm-worktree` deletes the agent's worktree on its
  node (the controller's mirror of it is not where the agent works);
- one more fault, `node-kill`: every process of a worker node SIGKILLed mid-run, like a machine
  dying (its tasks must restart on the other node, and none land twice); the node is started
  again, on the same address and workdir, after the trial;
- and after it one of Ray dying on a node whose machine lives: `raylet-kill`, its raylet SIGKILLed
  (the node is dead to Ray; its agents, in tmux, must be ended there all the same, by their actor's
  lifeline), or `actor-kill`, Hive's actor there SIGKILLed;
- after the final run nothing of the trial may be left on the cluster: no placement group of
  the project (each holds a unit of the resource), no attempt in a node's actor, no agent
  process or tmux session on a node, and after `hive cleanup` no actor of the project.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from types import TracebackType

from .processes import processes_where
from .sandbox import GIT_ENV, PY, TESTS, SoakError
from .scenario import PLAN, RAY_WORKERS, Scenario
from .trial import Trial

# tests/ray_cluster.py is a top-level module of the test tree: pytest has tests/ on sys.path, `python -m
# tests.soak` (the repo root on sys.path) does not. Appended, so that nothing in tests/ shadows an installed package.
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))
from ray_cluster import MARKER, LocalRayCluster

PER_NODE = 4  # units of `hive_agent` a worker node offers: two doits at -n 3 fit on the two nodes

# A Ray driver, run as a subprocess (the soak itself stays no driver): what the project
# (argv[2]) has on the cluster, and with argv[3] "held" what its node actors still hold,
# with "end" its actors ended.
_DRIVER = """
import json, sys
from pathlib import Path
import ray
from hive.executors.ray.cluster import project_id
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
prefix = project_id(Path(sys.argv[2])) + ":"
groups = [g["name"] for g in ray.util.placement_group_table().values()
          if g.get("name", "").startswith(prefix) and g.get("state") != "REMOVED"]
actors = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
          if a.get("namespace") == "hive" and a.get("name", "").startswith(prefix)]
held = []
for name in actors:
    try:
        actor = ray.get_actor(name, namespace="hive")
        if sys.argv[3] == "held":
            held += [f"{name}: {n}" for n in ray.get(actor.names.remote(), timeout=20)]
        elif sys.argv[3] == "end":
            ray.kill(actor, no_restart=True)
    except (ValueError, ray.exceptions.RayActorError):
        pass  # gone meanwhile, or on a node that died: it holds nothing
print(json.dumps({"groups": groups, "actors": actors, "held": held}))
"""


class RaySoak:
    """The cluster the trials run on; `trial` is the soak's trial maker."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="skr", dir="/tmp"))  # short: tmux socket paths
        self.socket = f"skr{os.getpid()}"
        self.cluster = LocalRayCluster(
            self.dir / "nodes", workers=RAY_WORKERS, per_worker=PER_NODE, node_env=lambda n: self.node_env()
        )

    def node_env(self) -> dict[str, str]:
        home = self.dir / "home"
        return {
            **GIT_ENV,
            "HOME": str(home),
            "TMUX_TMPDIR": str(self.dir),
            "HIVE_TMUX_SOCKET": self.socket,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PATH": f"{Path(PY).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def __enter__(self) -> RaySoak:
        home = self.dir / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        try:
            self.cluster.start()
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cluster.stop()  # its tmux servers and agents too: they carry the node's marker
        shutil.rmtree(self.dir, ignore_errors=True)

    def trial(self, sc: Scenario, verbose: bool, trace_git: bool) -> RayTrial:
        return RayTrial(sc, verbose, trace_git, self)

    def sockets(self) -> list[str]:
        """Each live worker node's tmux server (named by the node's actor after its Ray id)."""
        return [f"{self.socket}-{node.node_id[:8]}" for node in self.cluster.nodes()[1:] if node.node_id]

    def tmux(self, socket: str, *args: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "TMUX_TMPDIR": str(self.dir)}
        env.pop("TMUX", None)
        return subprocess.run(["tmux", "-L", socket, *args], env=env, capture_output=True, text=True, check=False)

    def driver(self, root: Path, what: str) -> dict[str, list[str]]:
        argv = [PY, "-c", _DRIVER, self.cluster.address, str(root), what]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if r.returncode != 0:
            raise SoakError(f"a Ray driver asking the cluster failed: {r.stderr.strip()[-300:]}")
        result: dict[str, list[str]] = json.loads(r.stdout.strip().splitlines()[-1])
        return result

    def agents(self) -> list[tuple[int, str]]:
        """Agents (anything with HIVE_TASK of the soak's plan) running on the cluster's nodes."""
        node = f"{MARKER}={self.cluster.id}-".encode()
        task = f"HIVE_TASK={PLAN}:".encode()
        return processes_where(
            lambda env: any(e.startswith(node) for e in env) and any(e.startswith(task) for e in env)
        )


class RayTrial(Trial):
    def __init__(self, sc: Scenario, verbose: bool, trace_git: bool, soak: RaySoak) -> None:
        self.soak = soak
        self.killed_nodes: set[int] = set()
        super().__init__(sc, verbose, trace_git)

    @property
    def spawn_log(self) -> Path:
        return self.dir / "fake" / "spawns.log"

    def agent_env(self) -> str:
        return f'env = {{ FAKE_LOG_DIR = "{self.dir / "fake"}" }}\n'

    def executor_config(self) -> str:
        return f'\n[executor]\nkind = "ray"\naddress = "{self.soak.cluster.address}"\n'

    def agent_worktree(self, st: dict) -> Path:
        """The attempt's worktree on whichever node runs it (node.Attempt: attempts/<sha1 of its session>/wt)."""
        digest = hashlib.sha1(str(st.get("session", "")).encode()).hexdigest()[:12]
        found = sorted((self.soak.dir / "nodes").glob(f"node-*/*/attempts/{digest}/wt"))
        return found[0] if found else self.dir / "no-worktree-yet"

    def kill_tmux(self) -> None:
        super().kill_tmux()
        for socket in self.soak.sockets():
            self.soak.tmux(socket, "kill-server")

    def kill_node(self, kind: str, node: int) -> str:
        """`node-kill`: every process of the node, as a machine dies. `raylet-kill`: its raylet
        (Ray's workers and actors there end with it; its tmux servers and agents live on).
        `actor-kill`: Hive's actors there (the node lives; the next attempt there makes one anew)."""
        ray_node = self.soak.cluster.node(node)
        if kind == "node-kill":
            killed = list(self.soak.cluster.kill_node(node))
        else:
            title = "raylet" if kind == "raylet-kill" else "ray::NodeAgent"
            killed = [pid for pid, argv in ray_node.pids().items() if argv.split(" ")[0].endswith(title)]
            for pid in killed:
                os.kill(pid, signal.SIGKILL)
        if kind != "actor-kill":
            self.killed_nodes.add(node)
        return f" ({len(killed)} processes of {ray_node.ip})"

    def tmux_sessions(self) -> list[str]:
        sessions = super().tmux_sessions()
        for socket in self.soak.sockets():
            r = self.soak.tmux(socket, "list-sessions", "-F", "#{session_name}")
            sessions += [f"{s} (on {socket})" for s in r.stdout.split()] if r.returncode == 0 else []
        return sessions

    def check_executor(self) -> None:
        for pid, cmd in self.soak.agents():
            self.findings.add("agents left running on a Ray node", f"{pid} {cmd[:120]}")
        left = self.soak.driver(self.root, "held")
        if left["groups"]:
            self.findings.add("placement groups left on the Ray cluster (each holds a unit)", ", ".join(left["groups"]))
        if left["held"]:
            self.findings.add("attempts left in a node's Hive actor", ", ".join(left["held"]))
        r = self.hive("cleanup")
        if r.returncode != 0:
            self.findings.add("hive cleanup failed", f"exit {r.returncode}: {r.stdout[-200:]}{r.stderr[-200:]}")
        after = self.soak.driver(self.root, "list")
        if after["actors"]:
            self.findings.add("Hive's actors left after `hive cleanup`", ", ".join(after["actors"]))

    def cleanup(self, keep: bool) -> None:
        """Nothing of this trial stays for the next: its agents, tmux sessions and actors
        (each reported by the checks first), and a killed node is started again."""
        super().cleanup(keep)
        for pid, _ in self.soak.agents():
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        for socket in self.soak.sockets():
            self.soak.tmux(socket, "kill-server")
        try:
            self.soak.driver(self.root, "end")
        except SoakError as e:
            self.notes.append(str(e))
        for node in sorted(self.killed_nodes):
            self.soak.cluster.restart_node(node)
