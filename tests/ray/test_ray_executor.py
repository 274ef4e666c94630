"""`[executor] kind = "ray"` end to end (issue 11): real `doit` runs on a real local Ray cluster
(a head and two worker nodes, each offering `hive_agent` and its own HIVE_NODE_WORKDIR), the
fake agent running in tmux on the nodes, its work brought back as git bundles and merged here."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, Run, assert_finished_exactly_once, wait_for
from ray_cluster import LocalRayCluster, RayNode, processes_of
from webserver import start_web, stop_web

from hive.executors.ray.cluster import PROTOCOL, project_id

NODE_IPS = {"127.0.0.3": 1, "127.0.0.4": 2}
# the module's one cluster, for a test that kills no node of it (each start costs 6-20 s)
SHARED = pytest.mark.ray_cluster(shared=True)


def use_ray(
    repo: Repo, cluster: LocalRayCluster, workers: int = 8, extra: str = "", resource: str = "", **configure: Any
) -> None:
    """The cluster as the executor; `configure`: more of `Repo.configure` (`sandbox`, `writable`)."""
    repo.configure(
        grace="20s",
        **configure,
        extra=f'\n[executor]\nkind = "ray"\naddress = "{cluster.address}"\n'
        + (f'resource = "{resource}"\n' if resource else "")
        + f"\n[parallel]\nmax_workers = {workers}\n"
        + extra,
    )


def waiting_plan(repo: Repo, cluster: LocalRayCluster, tmp_path: Path, body: str) -> Path:
    """Run on the cluster a plan whose agents wait for a file (`{go}` in `body`); returns the file.
    Its folder is one the agents' sandboxes on the nodes (this machine) show them."""
    go = tmp_path / "go"
    use_ray(repo, cluster, writable=(str(tmp_path),))
    repo.write_plan("p", body.replace("{go}", str(go)))
    return go


def started_on(stderr: str) -> dict[str, set[str]]:
    """task -> the nodes its attempts started on, from doit's output."""
    out: dict[str, set[str]] = {}
    for task, node in re.findall(r"hive: (\S+): attempt \d+ started — .* on (127\.0\.0\.\d+)", stderr):
        out.setdefault(task, set()).add(node)
    return out


def leftovers(cluster: LocalRayCluster) -> list[str]:
    """Attempts still held on the cluster: placement groups not removed (each holds a unit of
    `hive_agent`), and attempts a node's agent actor still knows (the actors themselves stay,
    one per project and node, for the next attempts)."""
    code = """
import ray, sys
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
left = [g["name"] for g in ray.util.placement_group_table().values() if g["state"] != "REMOVED"]
for actor in ray.util.list_named_actors(all_namespaces=True):
    if actor["namespace"] == "hive" and ":node:" in actor["name"]:
        left += ray.get(ray.get_actor(actor["name"], namespace="hive").names.remote())
print("\\n".join(left))
"""
    r = subprocess.run([sys.executable, "-c", code, cluster.address], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def ray_driver(cluster: LocalRayCluster, code: str, *args: str) -> str:
    """Run `code` as a Ray driver of the cluster (as a subprocess: this process stays no driver)."""
    head = 'import ray, sys\nray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)\n'
    argv = [sys.executable, "-c", head + code, cluster.address, *args]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


OLD_HIVES_ACTOR = """
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
node = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("hive_agent"))
@ray.remote(num_cpus=0)
class Old:
    def names(self):
        return []
name = f"{sys.argv[2]}:node:{node}:00000000"
Old.options(name=name, namespace="hive", lifetime="detached",
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote().names.remote()
print(name)
"""

NAMED_ACTORS = """
print("\\n".join(a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == "hive"))
"""


TEN_TASKS = "".join(
    f"""
### Task {i}: Part {i}
{f"**Depends on:** {i - 2}" if i > 2 else ""}
fake: write part{i}.txt part {i}
fake: note part {i} written
fake: sleep 0.5
fake: commit part {i}
fake: signal done
"""
    for i in range(1, 11)
)


@SHARED
def test_a_plan_of_ten_tasks_runs_on_both_nodes_and_merges_each_once(repo: Repo, ray_cluster: LocalRayCluster):
    use_ray(repo, ray_cluster)
    repo.write_plan("p", TEN_TASKS)
    # an actor an older Hive left on a node (detached actors outlive it): retired, not called
    old = ray_driver(ray_cluster, OLD_HIVES_ACTOR, project_id(repo.root)).strip()
    r = repo.doit("-n", "4", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert_finished_exactly_once(repo, {f"p:{i}": f"part {i}" for i in range(1, 11)})
    for i in range(1, 11):
        assert repo.file_on_main(f"part{i}.txt") == f"part {i}\n"
    nodes = set().union(*started_on(r.stdout).values())
    assert nodes == set(NODE_IPS), f"agents ran on {nodes}"  # both worker nodes, never the head
    # what the agents wrote on the nodes is here: notes, output, and nothing of Hive's on main
    notes = list((repo.root / ".hive" / "notes").glob("*.jsonl"))
    assert len(notes) == 10 and any("part 3 written" in n.read_text() for n in notes)
    logs = repo.hive("logs", "p:7")
    assert logs.returncode == 0 and "fake agent: working on p:7 attempt 1" in logs.stdout
    assert repo.git("ls-files").split() == ["README.md", *sorted(f"part{i}.txt" for i in range(1, 11))]
    # every actor ended, every node worktree removed; the node caches keep commits only
    assert leftovers(ray_cluster) == []
    actors = [a for a in ray_driver(ray_cluster, NAMED_ACTORS).split() if a.startswith(project_id(repo.root))]
    assert old not in actors and sorted(a.rsplit(":", 1)[1] for a in actors) == [PROTOCOL, PROTOCOL], actors
    # kept for the next run; `hive cleanup` ends them when nothing runs
    r = repo.hive("cleanup")
    assert r.returncode == 0 and r.stdout.count("ended Hive's actor") == 2, r.stdout + r.stderr
    assert not [a for a in ray_driver(ray_cluster, NAMED_ACTORS).split() if a.startswith(project_id(repo.root))]
    for n in (1, 2):
        workdir = ray_cluster.node(n).workdir
        assert workdir is not None
        assert not [p for p in workdir.rglob("wt") if p.is_dir()], f"node {n} kept a worktree"
    # a resource no node offers: one clear line at once (same cluster: each start costs ~6 s)
    use_ray(repo, ray_cluster, resource="gpu_agent")
    repo.write_plan("q", "### Task 1: One\nfake: signal done\n")
    started = time.monotonic()
    r = repo.doit(timeout=120)
    assert r.returncode == 1
    assert "no node of the Ray cluster offers the resource 'gpu_agent'" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr and time.monotonic() - started < 60


def test_a_worker_node_killed_mid_run_loses_nothing(repo: Repo, ray_cluster: LocalRayCluster, tmp_path: Path):
    go = waiting_plan(
        repo,
        ray_cluster,
        tmp_path,
        """
### Task 1: Long
fake: write long.txt committed before the node died
fake: commit-once long work
fake: print waiting for the go
fake: wait-for {go}
fake: write after.txt written after
fake: commit after the node
fake: signal done

### Task 2: Next
**Depends on:** 1
fake: write next.txt next
fake: commit next work
fake: signal done
""",
    )
    run = repo.start_doit("-n", "2")
    try:
        # its first commit has reached the controller's branch: then the node dies under it
        state = wait_for(
            lambda: (s := repo.state("p", "1")).get("node") and _has_commit(repo, s["branch"]) and s,
            timeout=90,
            what="task 1 running with its first commit shipped",
        )
        killed = ray_cluster.kill_node(NODE_IPS[state["node"]])
        assert killed
        go.write_text("")
        assert run.wait(timeout=240) == 0, run.output()
    finally:
        if run.running():
            run.proc.kill()
    err = run.output()
    assert re.search(r"p:1: failed — interrupted: its Ray node 127\.0\.0\.\d .*", err), err
    assert "p:1: attempt 2 started" in err
    assert started_on(err)["p:1"] == set(NODE_IPS)  # it went on on the other node
    assert_finished_exactly_once(repo, {"p:1": "long work", "p:2": "next work"})
    assert repo.main_log().count("after the node") == 1
    st = repo.state("p", "1")
    assert st["attempt"] == 2 and st["attempts_used"] == 1  # the lost attempt did not count
    assert repo.file_on_main("long.txt") == "committed before the node died\n"


def _log(repo: Repo) -> str:
    from hive.store.paths import Paths

    return Paths(repo.root).log_file("p", "1").read_text()


def _has_commit(repo: Repo, branch: str) -> bool:
    return "long work" in repo.git("log", "--format=%s", branch, check=False)


@SHARED
def test_status_logs_and_attach_of_a_remote_task_and_a_controller_that_dies(
    repo: Repo, ray_cluster: LocalRayCluster, tmp_path: Path
):
    go = waiting_plan(
        repo,
        ray_cluster,
        tmp_path,
        """
### Task 1: Watched
fake: print first words from the node
fake: wait-for {go}
fake: print last words after the controller died
fake: write w.txt w
fake: commit watched work
fake: signal done
""",
    )
    run = repo.start_doit()
    wait_for(lambda: "first words" in repo.hive("logs", "p:1").stdout, timeout=90, what="the remote output")
    status = repo.hive("status")
    node = repo.state("p", "1")["node"]
    assert node in NODE_IPS and f"on node {node}" in status.stdout
    attach = repo.hive("attach", "p:1")
    assert attach.returncode == 0
    assert f"ssh -t {node} tmux -L " in attach.stdout and "attach-session -t hive-" in attach.stdout
    # the controller dies (kill -9 of doit and its threads); the agent goes on on its node
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    # `hive logs -f` follows it from its node, asking it for what is new each time
    follow = subprocess.Popen(
        [sys.executable, "-m", "hive", "logs", "-f", "p:1"], cwd=repo.root, stdout=subprocess.PIPE, text=True
    )
    followed: list[str] = []
    reader = threading.Thread(target=lambda: followed.extend(follow.stdout or ()), daemon=True)
    reader.start()
    try:
        wait_for(lambda: "first words from the node" in "".join(followed), timeout=30, what="`hive logs -f`")
        # the dashboard's page of the running task reads its log through its node, as `hive logs` does
        web = start_web(repo.root)
        try:
            page = urllib.request.urlopen(web.at("/tasks/p:1"), timeout=60).read().decode()
        finally:
            stop_web(web.proc)
        assert "first words from the node" in page and 'Log <span class="muted">(from its node)' in page
        go.write_text("")
        # `hive logs` reads it through its actor: the log here stands still without a run. The agent
        # finishes meanwhile: it signals and exits on its node while no controller watches.
        wait_for(lambda: "signalled done" in "".join(followed), timeout=60, what="`hive logs -f` following")
        assert "".join(followed).count("first words from the node") == 1
    finally:
        follow.kill()
        follow.wait()
    wait_for(lambda: "signalled done" in repo.hive("logs", "p:1").stdout, timeout=60, what="output through the actor")
    assert "last words" not in _log(repo)
    r = repo.doit(timeout=180)
    assert r.returncode == 0, r.stdout
    assert "re-attaching to its running agent" in r.stdout, r.stdout  # not a new attempt
    assert_finished_exactly_once(repo, {"p:1": "watched work"})
    assert repo.state("p", "1")["attempt"] == 1  # the same attempt, not a new one
    log = _log(repo)
    assert log.count("first words from the node") == 1  # a new controller goes on from the acknowledged output
    assert "last words after the controller died" in log
    assert json.loads(repo.hive("status", "--json").stdout)["tasks"][0]["state"] == "done"
    assert leftovers(ray_cluster) == []


@SHARED
@pytest.mark.parametrize(
    ("workers", "stop", "code"),
    [
        (2, "Ctrl-C", 130),  # worker threads: the Ray executor's default
        # one task at a time runs in doit's main thread, where ray.init puts in Ray's own SIGTERM
        # handler (exit 15 at once, wherever it is): Hive's must stay
        (1, "SIGTERM", 143),
    ],
)
def test_a_stopped_run_stops_watching_remote_agents_and_the_next_run_reattaches(
    repo: Repo, ray_cluster: LocalRayCluster, tmp_path: Path, workers: int, stop: str, code: int
):
    two = "".join(
        f"\n### Task {t}: Wait {t}\nfake: print started {t}\nfake: wait-for {{go}}\n"
        f"fake: write {t}.txt {t}\nfake: commit work {t}\nfake: signal done\n"
        for t in "ab"
    )
    go = waiting_plan(repo, ray_cluster, tmp_path, two)
    run = repo.start_doit(*(("-n", str(workers)) if workers > 1 else ()))
    running = "ab"[:workers]
    wait_for(lambda: all(repo.state("p", t).get("node") for t in running), timeout=90, what="the agents started")
    if stop == "Ctrl-C":
        os.killpg(run.pid, signal.SIGINT)
    else:
        os.kill(run.pid, signal.SIGTERM)
    assert run.wait(timeout=60) == code, run.output()
    err = run.output()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = [ln for ln in err.splitlines() if "stopped watching" in ln]
    assert len(lines) == workers and all("keeps running in ray session" in ln for ln in lines), err
    go.write_text("")
    r = repo.doit("-n", "2", timeout=180)
    assert r.returncode == 0, r.stdout
    again = r.stdout.count("re-attaching to its running agent") + r.stdout.count("signalled `done`")
    assert again == len(running), r.stdout
    assert_finished_exactly_once(repo, {"p:a": "work a", "p:b": "work b"})
    assert [repo.state("p", t)["attempt"] for t in "ab"] == [1, 1]
    assert leftovers(ray_cluster) == []


def test_worker_processes_are_refused_with_the_ray_executor_before_anything_starts(repo: Repo):
    repo.configure(extra='\n[executor]\nkind = "ray"\naddress = "127.0.0.9:1"\n')
    repo.write_plan("p", "### Task 1: One\nfake: signal done\n")
    r = repo.doit("-n", "2", "-P", "process", timeout=60)
    assert r.returncode == 3, r.stderr
    assert "runs doit's workers as threads" in r.stderr and "drop `-P process`" in r.stderr
    assert "Traceback" not in r.stderr and not repo.worktrees()


@contextlib.contextmanager
def a_long_task_running(repo: Repo, cluster: LocalRayCluster, tmp_path: Path) -> Iterator[LongTask]:
    """doit running one task whose agent waits for `go`, its first commit shipped here."""
    go = waiting_plan(
        repo,
        cluster,
        tmp_path,
        """
### Task 1: Long
fake: write long.txt long
fake: commit-once long work
fake: wait-for {go}
fake: signal done
""",
    )
    run = repo.start_doit()
    try:
        state = wait_for(
            lambda: (s := repo.state("p", "1")).get("node") and _has_commit(repo, s["branch"]) and s,
            timeout=90,
            what="task 1 running with its first commit shipped",
        )
        agent = processes_of([b"HIVE_ATTEMPT=1"])
        assert agent, "the first attempt's agent runs"
        yield LongTask(run, go, cluster.node(NODE_IPS[state["node"]]), set(agent))
    finally:
        if run.running():
            run.proc.kill()


@dataclass
class LongTask:
    run: Run
    go: Path
    node: RayNode  # where its first attempt runs
    agent: set[int]  # that attempt's agent's processes

    def wait_agent_ended(self) -> None:
        wait_for(lambda: not (set(processes_of([b"HIVE_ATTEMPT=1"])) & self.agent), timeout=30, what="the agent ended")

    def finish_after_a_second_attempt(self) -> str:
        wait_for(lambda: "p:1: attempt 2 started" in self.run.output(), timeout=90, what="a second attempt")
        self.go.write_text("")
        assert self.run.wait(timeout=120) == 0, self.run.output()
        return self.run.output()


@SHARED
def test_hives_actor_on_a_node_dying_interrupts_its_attempts_and_ends_their_agents(
    repo: Repo, ray_cluster: LocalRayCluster, tmp_path: Path
):
    with a_long_task_running(repo, ray_cluster, tmp_path) as task:
        code = (
            "import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False);"
            "[ray.kill(ray.get_actor(a['name'], namespace='hive')) for a in ray.util.list_named_actors(True)"
            " if a['namespace'] == 'hive' and ':node:' in a['name']]"
        )
        subprocess.run([sys.executable, "-c", code, ray_cluster.address], check=True, timeout=60)
        task.wait_agent_ended()  # by its lifeline (or the actor that replaces it)
        err = task.finish_after_a_second_attempt()
    assert re.search(r"p:1: failed — interrupted: its Ray node 127\.0\.0\.\d", err), err
    assert_finished_exactly_once(repo, {"p:1": "long work"})
    assert repo.state("p", "1")["attempts_used"] == 1


def test_a_node_whose_raylet_dies_ends_its_agents_there_while_its_task_goes_on_elsewhere(
    repo: Repo, ray_cluster: LocalRayCluster, tmp_path: Path
):
    """Ray dies on a machine that lives on (its raylet killed: out of memory, say): the node is
    dead to the cluster and no actor can be made there again, yet the agent runs in tmux, not
    in Ray. Its lifeline ends it as the actor goes, while the task runs again on the other node."""
    with a_long_task_running(repo, ray_cluster, tmp_path) as task:
        raylet = [pid for pid, argv in task.node.pids().items() if Path(argv.split()[0]).name == "raylet"]
        assert len(raylet) == 1, task.node.pids()
        os.kill(raylet[0], signal.SIGKILL)
        task.wait_agent_ended()
        err = task.finish_after_a_second_attempt()
    assert started_on(err)["p:1"] == set(NODE_IPS)
    assert_finished_exactly_once(repo, {"p:1": "long work"})
    assert task.node.workdir is not None
    said = (task.node.workdir / project_id(repo.root) / "lifeline.log").read_text()
    assert re.search(r"hive lifeline: actor \w+ ended; stopping the agents it held\n  stopped hive-", said), said


def test_with_the_clusters_head_gone_status_and_doit_say_so_at_once(
    repo: Repo, ray_cluster: LocalRayCluster, tmp_path: Path
):
    """Ray's own connect would try for a quarter of an hour, saying nothing of it."""
    with a_long_task_running(repo, ray_cluster, tmp_path) as task:
        os.killpg(task.run.proc.pid, signal.SIGKILL)  # the controller dies, then the head
        task.run.proc.wait()
        ray_cluster.node(0).kill()
        unreachable = (
            f"cannot reach the Ray cluster at [executor] address = '{ray_cluster.address}': nothing answers at "
            f"{ray_cluster.address} (Connection refused)"
        )
        status = repo.hive("status", "--json", timeout=30)
        assert status.returncode == 0, status.stderr
        [row] = json.loads(status.stdout)["tasks"]
        assert row["state"] == "in_progress" and row["node"] in NODE_IPS
        assert row["reason"].startswith(f"cannot tell how its agent is: {unreachable}"), row
        run = repo.doit(timeout=30)
        assert run.returncode != 0
        assert unreachable in run.stdout and "Traceback" not in run.stdout + run.stderr, run.stdout


SANDBOXED = """
### Task 1: Stay in your checkout on the node
fake: try-write {home}/from-a-node.txt
fake: try-write {cache1}/.git/refs/heads/evil
fake: try-write {cache2}/.git/refs/heads/evil
fake: try-url http://127.0.0.1:{port}/allowed
fake: try-url http://localhost:{port}/not-allowed
fake: try-connect 127.0.0.1 {port}
fake: try-git . update-ref refs/heads/main HEAD
fake: write a.txt a
fake: commit work in the sandbox on a node
fake: signal done
"""


@SHARED
def test_doctor_checks_every_node_and_the_nodes_sandbox_their_agents(
    repo: Repo, ray_cluster: LocalRayCluster, http_server: int
):
    """With the Ray executor the agents run on the nodes: `hive doctor` checks each profile's
    program there (a Ray task on each node), and bubblewrap, under the node's address, and
    starts no actor. Then (the same cluster: each start costs ~20 s) a run: by default each
    node makes its agent's sandbox as this machine would — it writes its checkout and commits
    into a git directory of its own (neither the controller's repository nor the node's cache,
    which other attempts share), reaches only allowed hosts, and its task merges."""
    use_ray(repo, ray_cluster, extra='\n[agents.gone]\ncommand = ["no-such-agent-cli", "{context_file}"]\n')
    repo.write_plan("p", "\n### Task 1: Fine\nfake: signal done\n")
    r = repo.hive("doctor", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    for ip in NODE_IPS:
        assert re.search(rf"✓ \[fake\] binary on {re.escape(ip)}: .*python", r.stdout), r.stdout
        assert f"✓ tmux on {ip}: tmux " in r.stdout and f"✓ git on {ip}: git version" in r.stdout
        assert f"✓ sandbox on {ip}: bubblewrap works: agents run sandboxed ([sandbox] mode = 'auto')" in r.stdout
    repo.write_plan("q", "\n### Task 1: Needs a CLI the nodes lack\n**Agent:** gone\nfake: signal done\n")
    r = repo.hive("doctor", timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    for ip in NODE_IPS:
        assert f"✗ [gone] binary on {ip}: `no-such-agent-cli` is not on PATH (used by plan q task 1)" in r.stdout
    actors = ray_driver(ray_cluster, NAMED_ACTORS).split()
    assert not [a for a in actors if a.startswith(project_id(repo.root))], "hive doctor made the project's actors"

    use_ray(repo, ray_cluster, workers=1, sandbox='allow = ["127.0.0.1"]\n')
    (repo.root / "plans" / "q.md").unlink()
    cache1, cache2 = (ray_cluster.node(n).workdir / project_id(repo.root) / "repo" for n in (1, 2))  # type: ignore[operator]
    repo.write_plan("p", SANDBOXED.format(home=Path.home(), cache1=cache1, cache2=cache2, port=http_server))
    r = repo.doit(timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    log = repo.hive("logs", "p:1", "-n", "200").stdout
    for tried, said in (
        (f"try-write {Path.home()}/from-a-node.txt", "denied"),  # (a path under the repository is the node's)
        (f"try-write {cache1}/.git/refs/heads/evil", "denied"),
        (f"try-write {cache2}/.git/refs/heads/evil", "denied"),
        (f"try-url http://127.0.0.1:{http_server}/allowed", "ok hello /allowed"),
        (f"try-url http://localhost:{http_server}/not-allowed", "denied (HTTP 403)"),
        (f"try-connect 127.0.0.1 {http_server}", "failed"),
        ("try-git . update-ref refs/heads/main HEAD", "exit 0"),
    ):
        assert f"fake agent: {tried}: {said}" in log, (tried, log)
    assert not (Path.home() / "from-a-node.txt").exists()
    assert not any((cache / ".git" / "refs" / "heads" / "evil").exists() for cache in (cache1, cache2))
    assert repo.file_on_main("a.txt") == "a\n"
    assert "work in the sandbox on a node" in repo.git("log", "--format=%s", "main^2")
    task = repo.status_json()["tasks"][0]
    assert (task["refused"], task["refused_hosts"]) == (1, [f"localhost:{http_server}"]), "told by the node"
