#!/usr/bin/env python3
"""Hive's Ray executor against its targets (issue 11), beside the local (tmux) executor:
overhead per remote task, makespan of 64 tasks of 3 s against the list-scheduling bound at
`doit -n 16` and `-n 64`, and memory. See bench/README.md, "Ray executor".

    .venv/bin/python bench/ray_bench.py [--rev REV] [--out bench/results/ray.json] [--keep]

A real cluster of 4 Ray worker nodes on this machine (tests/ray_cluster.py), each offering 16
`hive_agent`; scratch repos, $HOME, git identity and tmux server as in bench/run.py, whose
helpers this reuses. Not named bench/ray.py: that would shadow the `ray` package for every
script in bench/ (their directory is first on sys.path) and for mypy (`files` in setup.cfg).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "tests")]
import ray_cluster as harness  # noqa: E402 — tests/ray_cluster.py
import run as local  # noqa: E402 — bench/run.py: Sandbox, repos, plans, Hive's records, the table

NODES, PER_NODE, RESOURCE = 4, 16, "hive_agent"
SERIAL_TASKS, WIDE_TASKS, SLEEP = 8, 64, 3.0
WORKERS = (16, 64)
TARGET_OVERHEAD, TARGET_RATIO = 1.0, 1.2
RAY_CONFIG = f'\n[executor]\nkind = "ray"\naddress = "{{address}}"\nresource = "{RESOURCE}"\n'
STARTED = re.compile(r"hive: (\S+): attempt \d+ started — .* on (127\.0\.0\.\d+)")
# from one event of run.per_task_phases to another
PHASES = {f"{a}_to_{b}": (a, b) for a, b in itertools.pairwise(["claim", "spawned", "signal", "merging", "merged"])}
PHASES["signal_to_merged"] = ("signal", "merged")
FIXED = ("start_to_first_claim_s", "last_merged_to_exit_s")
Tasks = list[tuple[str, str, list[str], str]]  # id, title, depends on, description (run.write_plan)


# -- memory and CPU from /proc -------------------------------------------------------------------
def _kb(pid: int, name: str, field: str) -> int:
    """A `field: N kB` line of /proc/<pid>/<name>; 0 if gone."""
    try:
        with open(f"/proc/{pid}/{name}") as f:
            return next((int(line.split()[1]) for line in f if line.startswith(field)), 0)
    except (OSError, ValueError, IndexError):
        return 0


def _stat(pid: int | str) -> list[bytes]:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()


def _tree(root: int) -> list[int]:
    """`root` and its live descendants."""
    children: dict[int, list[int]] = {}
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            children.setdefault(int(_stat(name)[1]), []).append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    out, todo = [], [root]
    while todo:
        out.append(todo.pop())
        todo += children.get(out[-1], [])
    return out


def _cpu_s(pid: int) -> float:
    """CPU seconds of `pid` (its threads, not the children it reaped); 0 if gone."""
    try:
        return sum(int(x) for x in _stat(pid)[11:13]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy (all but idle and iowait), every job's."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def cluster_cpu(cluster: Any) -> dict[int, float]:
    """CPU seconds of each process of the cluster, without children (raylets do not count the
    workers they reap); a process's last moments before it exits escape the sampling."""
    return {pid: _cpu_s(pid) for pid in cluster.processes()}


class Sampler(threading.Thread):
    """While doit runs: peaks of doit's VmRSS and of the sums of VmRSS and of Pss (shared pages split
    between the processes sharing them, fair to forks) over doit and its descendants, every 0.1 s;
    of the sum of VmRSS over the cluster's processes every 1 s. CPU time: doit's (set by run_doit),
    the cluster's, the whole machine's (every job's), and this sampler's own."""

    def __init__(self, pid: int, cluster: Any | None) -> None:
        super().__init__(daemon=True)
        self.pid, self.cluster, self.done = pid, cluster, threading.Event()
        self.peak_kb = dict.fromkeys(["doit_rss", "doit_tree_rss", "doit_tree_pss", "cluster_rss"], 0)
        self.busy0, self.doit_cpu, self.own_cpu = machine_busy_s(), 0.0, 0.0
        self.cluster_cpu0 = cluster_cpu(cluster) if cluster else {}
        self.cluster_cpu = dict(self.cluster_cpu0)

    def run(self) -> None:
        last = 0.0
        while not self.done.is_set():
            tree = _tree(self.pid)
            self._max("doit_rss", _kb(self.pid, "status", "VmRSS:"))
            self._max("doit_tree_rss", sum(_kb(p, "status", "VmRSS:") for p in tree))
            self._max("doit_tree_pss", sum(_kb(p, "smaps_rollup", "Pss:") for p in tree))
            if self.cluster is not None and time.monotonic() - last >= 1.0:
                last = time.monotonic()
                cpu = cluster_cpu(self.cluster)
                self.cluster_cpu.update({p: max(v, self.cluster_cpu.get(p, 0.0)) for p, v in cpu.items()})
                self._max("cluster_rss", sum(_kb(p, "status", "VmRSS:") for p in cpu))
            self.own_cpu = time.thread_time()
            self.done.wait(0.1)

    def _max(self, key: str, kb: int) -> None:
        self.peak_kb[key] = max(self.peak_kb[key], kb)

    def report(self) -> dict[str, float]:
        out = {
            f"{k}_peak_mb": round(v / 1024, 1) for k, v in self.peak_kb.items() if self.cluster or k != "cluster_rss"
        }
        out["doit_cpu_s"] = round(self.doit_cpu, 1)
        if self.cluster:
            self.cluster_cpu.update(cluster_cpu(self.cluster))
            out["cluster_cpu_s"] = round(sum(v - self.cluster_cpu0.get(p, 0.0) for p, v in self.cluster_cpu.items()), 1)
        out["machine_busy_cpu_s"] = round(machine_busy_s() - self.busy0, 1)
        out["sampler_cpu_s"] = round(self.own_cpu, 1)
        return out


# -- runs -----------------------------------------------------------------------------------------
def new_repo(sb: local.Sandbox, name: str, cluster: Any | None, tasks: Tasks, attempts: int) -> Path:
    """A scratch repo with the plan `name` and Hive configured for Ray (`cluster`) or tmux (None)."""
    root = local.new_repo(sb, name)
    config = local.hive_config({"max_workers": WIDE_TASKS, "max_attempts": attempts})
    config += RAY_CONFIG.format(address=cluster.address) if cluster else ""
    (root / ".hive" / "config.toml").write_text(config)
    local.write_plan(root, name, f"{name}, {len(tasks)} tasks", tasks)
    local.commit_all(sb, root, "bench: plan and Hive config")
    return root


def run_doit(sb: local.Sandbox, root: Path, args: list[str], cluster: Any | None) -> tuple[float, Any, Sampler]:
    argv = [local.PY, "-m", "doit", *args]
    out, err = root.with_suffix(".out"), root.with_suffix(".err")
    with open(out, "w") as o, open(err, "w") as e:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, cwd=root, env=sb.env, stdout=o, stderr=e, start_new_session=True)
        sampler = Sampler(p.pid, cluster)
        sampler.start()
        try:
            code = p.wait(timeout=local.RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            code = p.wait()
        except KeyboardInterrupt:  # doit runs in its own session: Ctrl-C does not reach it
            os.killpg(p.pid, signal.SIGKILL)
            raise
        wall = time.perf_counter() - t0
        sampler.done.set()
        sampler.join()
        # exact, unlike sampling /proc: doit and every descendant it waited for (git, forked workers), as it exits
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        sampler.doit_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    r = subprocess.CompletedProcess(argv, code, out.read_text(), err.read_text())
    if wall >= local.RUN_TIMEOUT:
        raise local.BenchError(f"{' '.join(argv)} killed after {local.RUN_TIMEOUT}s in {root}\n{r.stderr[-2000:]}")
    return wall, r, sampler


def stats(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "max": round(max(values), 3)} if values else {}


def measured(sb: local.Sandbox, name: str, tasks: Tasks, workers: int, cluster: Any | None, attempts: int) -> dict:
    """Run the plan `name` at `doit -n workers` and read what happened."""
    kind = "ray" if cluster else "tmux"
    label = f"{kind} {name} -n {workers}"
    root = new_repo(sb, f"{kind}-{name}-n{workers}", cluster, tasks, attempts)
    t0 = time.time()
    wall, r, sampler = run_doit(sb, root, ["-n", str(workers)], cluster)
    memory = sampler.report()  # before the checks below, which take time and CPU
    problems: list[str] = []
    keys = [f"{root.name}:{t[0]}" for t in tasks]
    check = local.check_hive_run(sb, root, root.name, keys, r, problems, label)
    check["first_parent_merges"] = int(local.git(sb, root, "rev-list", "--count", "--first-parent", "--merges", "main"))
    if check["first_parent_merges"] != len(keys):
        problems.append(f"{label}: {check['first_parent_merges']} merges on main's first parents, not {len(keys)}")
    if cluster and (left := left_on_nodes(sb, cluster, root.name)):
        check["left_on_nodes"] = left
        problems.append(f"{label}: left on the nodes: {left}")
    phases = local.per_task_phases(local.events(root), local.signal_times(root), keys)
    done = sorted((p for p in phases.values() if "claim" in p and "merged" in p), key=lambda p: p["claim"])
    spans = {k: [p[b] - p[a] for p in phases.values() if a in p and b in p] for k, (a, b) in PHASES.items()}
    if workers == 1:
        spans["merged_to_next_claim"] = [n["claim"] - p["merged"] for p, n in itertools.pairwise(done)]
    started = STARTED.findall(r.stderr)
    return {
        "executor": kind,
        "workers": workers,
        "tasks": len(tasks),
        "wall_s": round(wall, 3),
        "per_task_s": round(wall / len(tasks), 3),
        "start_to_first_claim_s": round(done[0]["claim"] - t0, 3) if done else None,
        "last_merged_to_exit_s": round(t0 + wall - max(p["merged"] for p in done), 3) if done else None,
        "phases_s": {k: stats(v) for k, v in spans.items()},
        "spawned_at_s": sorted(round(p["spawned"] - t0, 1) for p in phases.values() if "spawned" in p),
        "merged_at_s": sorted(round(p["merged"] - t0, 1) for p in phases.values() if "merged" in p),
        "max_agents_at_once": local.max_concurrency(
            [(p["spawned"], p["merged"]) for p in phases.values() if "spawned" in p and "merged" in p]
        ),
        "attempts_per_node": dict(sorted(Counter(ip for _, ip in started).items())) if cluster else {},
        "attempts_started": len(started),
        "memory": memory,
        "check": check,
        "problems": problems,
        "stderr_tail": r.stderr[-3000:] if problems else "",
    }


def left_on_nodes(sb: local.Sandbox, cluster: Any, plan: str) -> list[str]:
    """The plan's tmux sessions left on the worker nodes (a tmux server a node, `<socket>-<node id[:8]>`),
    its attempts' placement groups not removed (each holds a unit) and attempts its node actors
    still hold. Its node actors (one per node, kept by design for the next attempts) are then
    killed, so later runs start from an empty cluster."""
    import ray

    left = []
    for node in cluster.nodes()[1:]:
        argv = ["tmux", "-L", f"{sb.socket}-{node.node_id[:8]}", "ls", "-F", "#S"]
        r = subprocess.run(argv, env=sb.env, capture_output=True, text=True)
        left += [f"session {node.ip}:{s}" for s in r.stdout.split() if plan in s]
    with cluster.connect(namespace="hive"):
        groups = ray.util.placement_group_table().values()
        left += [f"group {g['name']}" for g in groups if g["name"].startswith(f"{plan}-") and g["state"] != "REMOVED"]
        for actor in ray.util.list_named_actors(all_namespaces=True):
            if actor.get("namespace") == "hive" and actor["name"].startswith(f"{plan}-"):
                handle = ray.get_actor(actor["name"], namespace="hive")
                held: list[str] = ray.get(handle.names.remote(), timeout=60)
                left += [f"attempt {name}" for name in held]
                ray.kill(handle, no_restart=True)
    return left


class Probe:
    """A trivial actor: what placing and starting one costs, without Hive."""

    def ip(self) -> str:
        import ray

        return str(ray.util.get_node_ip_address())


def actor_reference(cluster: Any) -> dict:
    """Ray alone, options as Hive's: detached named actors needing one unit each, created and
    called one at a time, then WIDE_TASKS at once (with the machine's CPU time they took)."""
    import ray

    def start(n: int, tag: str) -> tuple[list[float], list[str]]:
        """Seconds until each of `n` actors created at once answered, and the nodes they are on."""
        opts = {"num_cpus": 0, "resources": {RESOURCE: 1}, "lifetime": "detached", "max_restarts": 0}
        cls: Any = ray.remote(Probe)
        t = time.perf_counter()
        actors = [cls.options(name=f"{tag}{i}", scheduling_strategy="SPREAD", **opts).remote() for i in range(n)]
        pending, ready_at = [a.ip.remote() for a in actors], []
        while pending:
            ready, pending = ray.wait(pending, timeout=300)
            if not ready:
                raise local.BenchError(f"{len(pending)} of {n} trivial actors not ready after 300 s")
            ready_at.append(round(time.perf_counter() - t, 3))
        ips = ray.get([a.ip.remote() for a in actors])
        for actor in actors:
            ray.kill(actor)
        return ready_at, ips

    with cluster.connect(namespace="bench"):
        serial = [start(1, f"one-{i}-")[0][0] for i in range(SERIAL_TASKS)]
        busy = machine_busy_s()
        ready_at, ips = start(WIDE_TASKS, "many-")
        busy = machine_busy_s() - busy
    time.sleep(2)  # their worker processes exit
    return {
        "one_at_a_time_s": serial,
        "one_at_a_time_median_s": round(statistics.median(serial), 3),
        "at_once_s": ready_at[-1],
        "at_once_ready_at_s": ready_at,
        "cpu_per_actor_s": round(busy / WIDE_TASKS, 3),
        "at_once_per_node": dict(sorted(Counter(ips).items())),
    }


def plan(n: int, sleep: float) -> Tasks:
    desc = f"Sleep, then write a file.\n\nbench-sleep: {sleep:g}" if sleep else "Write a file."
    return [(f"t{i:02d}", f"Task {i}", [], desc) for i in range(1, n + 1)]


def with_bound(run: dict, overhead: float) -> dict:
    rounds = math.ceil(WIDE_TASKS / min(run["workers"], WIDE_TASKS, NODES * PER_NODE))
    run["bound_s"] = round(rounds * (SLEEP + overhead), 3)
    run["bound_zero_overhead_s"] = round(rounds * SLEEP, 3)
    run["ratio"] = round(run["wall_s"] / run["bound_s"], 3)
    run["ratio_zero_overhead"] = round(run["wall_s"] / run["bound_zero_overhead_s"], 3)
    m = run["memory"]  # no schedule ends before this machine's cores have spent doit's and the cluster's CPU time
    run["cpu_floor_s"] = round((m["doit_cpu_s"] + m.get("cluster_cpu_s", 0.0)) / (os.cpu_count() or 1), 1)
    return run


def cleanup(sb: local.Sandbox, cluster: Any | None) -> dict:
    """Copy the nodes' Ray logs to <temp dir>/ray-logs (kept with --keep) and count, per node, the
    worker processes its raylet gave up on for not registering in time (it waits 60 s for each);
    stop the cluster (the nodes' tmux servers with it) and the local tmux server; then kill and
    report anything still carrying one of this run's tmux sockets in its environment."""
    nodes, timeouts = cluster.nodes() if cluster else [], {}
    for node in nodes:
        logs = node.logs
        if logs.is_dir():  # else the cluster did not start, and stopped itself
            shutil.copytree(logs, sb.dir / "ray-logs" / str(node.index), dirs_exist_ok=True)
            timeouts[node.ip] = (logs / "raylet.out").read_text(errors="replace").count("have not registered within")
    killed = len(cluster.stop()) if cluster else 0
    sb.kill_tmux()
    markers = [f"HIVE_TMUX_SOCKET={s}".encode() for s in [sb.socket, *(f"{sb.socket}-{n.node_id[:8]}" for n in nodes)]]
    if left := harness.processes_of(markers):
        harness.kill_all(markers)
    return {"cluster_processes_killed": killed, "left_after_stop": left, "raylet_registration_timeouts": timeouts}


# -- report ---------------------------------------------------------------------------------------
def table(res: dict) -> list[tuple[str, str, str, str]]:
    rows = []

    def row(what: str, value: str, target: str = "-", ok: bool | None = None) -> None:
        rows.append((what, value, target or "-", "" if ok is None else ("✓" if ok else "✗")))

    def medians(phases: dict, *keys: str) -> str:
        return " / ".join(f"{phases[k]['median']:.2f}" if phases.get(k) else "-" for k in keys) + " s"

    def memory(m: dict, ray: bool) -> None:
        mb = [m[f"{k}_peak_mb"] for k in ["doit_rss", "doit_tree_rss", "doit_tree_pss", *["cluster_rss"] * ray]]
        what = f"c.   peak MB: doit RSS / +children RSS / +children PSS{' / cluster RSS' * ray}"
        row(what, " / ".join(f"{v:.0f}" for v in mb))

    for kind, s in res.get("serial", {}).items():
        ray = kind == "ray"
        ok = s["per_task_s"] <= TARGET_OVERHEAD if ray else None
        row(f"a. overhead per task, {kind}, {s['tasks']} instant tasks", f"{s['per_task_s']:.2f} s", "<= 1 s" * ray, ok)
        keys = ["claim_to_spawned", "spawned_to_signal", "signal_to_merged", "merged_to_next_claim"]
        row("a.   claim>spawned / >signal / >merged / >next claim", medians(s["phases_s"], *keys))
        row("a.   doit start>1st claim / last merged>exit", " / ".join(f"{s[k] or 0:.2f}" for k in FIXED) + " s")
        memory(s["memory"], ray)
    if ref := res.get("actor_reference"):
        row("a. Ray alone: create an actor + 1 call (median)", f"{ref['one_at_a_time_median_s']:.2f} s")
        at_once = f"{ref['at_once_s']:.2f} s ({ref['cpu_per_actor_s']:.2f} s)"
        row(f"a. Ray alone: {WIDE_TASKS} actors at once (CPU each)", at_once)
    for p in res.get("wide", []):
        ray = p["executor"] == "ray"
        what, value = f"b. makespan {p['executor']} -n {p['workers']}", f"{p['wall_s']:.2f} s = {p['ratio']:.2f}x"
        merged, complete = p["check"]["first_parent_merges"], p["check"]["first_parent_merges"] == p["tasks"]
        value = value if complete else f"{p['wall_s']:.2f} s, only {merged}/{p['tasks']} merged"
        ok = p["ratio"] <= TARGET_RATIO and complete if ray else None
        row(f"{what} (bound {p['bound_s']:.2f} s)", value, f"<= {TARGET_RATIO:g}x" * ray, ok)
        row(f"b.   vs 3 s rounds alone ({p['bound_zero_overhead_s']:.0f} s)", f"{p['ratio_zero_overhead']:.2f}x")
        row("b.   claim>spawned / signal>merged", medians(p["phases_s"], "claim_to_spawned", "signal_to_merged"))
        m = p["memory"]
        cpu = f"{m['doit_cpu_s']:.0f} / {m.get('cluster_cpu_s', 0):.0f} / {m['machine_busy_cpu_s']:.0f} s"
        row(f"b.   CPU: doit / cluster / machine, all jobs (floor {p['cpu_floor_s']:.0f} s)", cpu)
        if ray:
            row("b.   attempts per node", " ".join(map(str, p["attempts_per_node"].values())))
        memory(p["memory"], ray)
    for name, err in res.get("errors", {}).items():
        row(f"{name}: did not complete", err.splitlines()[0][:60], "-", False)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(BENCH / "results" / "ray.json"), help="where to write the raw JSON")
    ap.add_argument("--keep", action="store_true", help="keep the scratch repos and Ray logs (the path is printed)")
    ap.add_argument("--rev", help="benchmark Hive as committed at this revision instead of the working tree")
    ap.add_argument("--attempts", type=int, default=1, help="[execution] max_attempts (1: a failed task stops the run)")
    ap.add_argument("--worker-ports", type=int, default=4 * PER_NODE, help="ports for each node's Ray workers")
    ap.add_argument("--no-local", action="store_true", help="skip the local (tmux) executor's runs")
    mode = ap.add_mutually_exclusive_group()  # as bench/run.py's: the default is the config's ("auto")
    mode.add_argument("--sandbox", action="store_const", const="on", dest="sandbox", help='[sandbox] mode = "on"')
    mode.add_argument("--no-sandbox", action="store_const", const="off", dest="sandbox", help='[sandbox] mode = "off"')
    args = ap.parse_args()
    local.sandbox_mode = args.sandbox or ""

    started = time.perf_counter()
    sb = local.Sandbox()
    sb.socket = sb.env["HIVE_TMUX_SOCKET"] = f"bench-ray-{os.getpid()}"
    res: dict = {"errors": {}, "problems": [], "serial": {}, "wide": [], "attempts": args.attempts}
    print(f"bench: scratch dir {sb.dir}, tmux socket {sb.socket}", file=sys.stderr)
    cluster = None

    def step(name: str, fn: Any, *a: Any) -> Any:
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        try:
            value = fn(*a)
        except (local.BenchError, subprocess.CalledProcessError, RuntimeError, OSError) as e:
            res["errors"][name], value = str(e), None
            res["problems"].append(f"{name}: {e}")
        print(f"bench: {name} took {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
        res["problems"] += value.get("problems", []) if isinstance(value, dict) else []
        return value

    try:
        res["machine"] = local.machine_info(sb)
        res["hive_under_test"] = sb.use_hive_rev(args.rev) if args.rev else {"commit": res["machine"]["hive_commit"]}
        # the nodes inherit this process's environment: git identity, $HOME, tmux, --rev's PYTHONPATH
        os.environ.update(sb.env)
        for k in ("TMUX", "HIVE_TASK", "HIVE_ATTEMPT", "HIVE_ROOT"):
            os.environ.pop(k, None)
        t = time.perf_counter()
        # ports for a node's worker processes: with too few, a worker that finds none exits before
        # registering and its raylet waits 60 s for it (tests/ray_cluster.py's WORKER_PORTS is 24)
        harness.WORKER_PORTS = args.worker_ports
        cluster = harness.LocalRayCluster(sb.dir / "nodes", workers=NODES, resource=RESOURCE, per_worker=PER_NODE)
        cluster.start()
        res["cluster"] = {"nodes": NODES, "per_node": PER_NODE, "worker_ports": args.worker_ports}
        res["cluster"]["start_s"] = round(time.perf_counter() - t, 2)
        res["actor_reference"] = step("Ray alone", actor_reference, cluster)
        res["cluster"]["idle_rss_mb"] = round(sum(_kb(p, "status", "VmRSS:") for p in cluster.processes()) / 1024, 1)
        overhead: dict[str, float] = {}
        kinds = [("ray", cluster)] + ([] if args.no_local else [("tmux", None)])
        for kind, c in kinds:
            if s := step(f"{kind} serial", measured, sb, "serial", plan(SERIAL_TASKS, 0), 1, c, args.attempts):
                res["serial"][kind], overhead[kind] = s, s["per_task_s"]
        for (kind, c), n in itertools.product(kinds, WORKERS):
            if w := step(f"{kind} wide -n {n}", measured, sb, "wide", plan(WIDE_TASKS, SLEEP), n, c, args.attempts):
                res["wide"].append(with_bound(w, overhead.get(kind, 0.0)))
    except (local.BenchError, subprocess.CalledProcessError, RuntimeError) as e:
        res["errors"]["setup"] = str(e)
        res["problems"].append(f"setup: {e}")
    finally:
        res["cleanup"] = cleanup(sb, cluster)
        if not args.keep:
            shutil.rmtree(sb.dir, ignore_errors=True)
    res["bench_wall_s"] = round(time.perf_counter() - started, 1)

    local.save(Path(args.out), res)
    rows = table(res)
    local.print_table(rows)
    m = res.get("machine", {})
    print(
        f"Hive {str(res.get('hive_under_test', {}).get('commit'))[:10]}; {m.get('cpu_count')} CPUs, load "
        f"{m.get('loadavg')}; {NODES} Ray nodes x {PER_NODE} {RESOURCE}; benchmark took {res['bench_wall_s']:.0f} s"
    )
    for p in res["problems"]:
        print(f"problem: {p}")
    print(f"raw numbers: {args.out}" + (f"; scratch repos and Ray logs kept in {sb.dir}" if args.keep else ""))
    return 1 if res["errors"] or res["problems"] or any(r[3] == "✗" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
