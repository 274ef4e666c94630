#!/usr/bin/env python3
"""Hive benchmark: orchestration overhead, signal-to-merge latency, parallel
efficiency and plan scale, each against a target (see bench/README.md).

    .venv/bin/python bench/run.py [--quick] [--out bench/results/latest.json] [--keep]

Everything runs in scratch git repos under one temp dir in /tmp, with a private
$HOME, a pinned git identity and a private tmux server (HIVE_TMUX_SOCKET=bench-<pid>)
that is always killed at the end. Hive runs as real `python -m doit` subprocesses
with bench/instant_agent.sh as the agent.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

BENCH = Path(__file__).resolve().parent
HIVE_SRC = BENCH.parent
AGENT = BENCH / "instant_agent.sh"
PY = sys.executable
RUN_TIMEOUT = 300  # seconds; a hung doit is killed (with its process group) and reported

SERIAL_TASKS = 20
SCALE_TASKS = 1000
REPEATS = 3

# The wide DAG of measurement 3: 4 chains of length 2 plus 8 independent tasks.
CHAINS, CHAIN_LEN, SINGLES = 4, 2, 8

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Bench Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}

CONFIG = """\
[agent]
default = "instant"

[agents.instant]
command = ["bash", "{agent}", "{{context_file}}"]
context_file = "AGENTS.md"

[execution]
spawn_grace_period = "30s"
task_timeout = "5m"
max_attempts = 1

[merge]
main_branch = "main"

[parallel]
max_workers = 4
"""


# `--sandbox` / `--no-sandbox`: every agent in Hive's bubblewrap sandbox, or none (what it costs
# per attempt: issue 24); neither: the config's default ("auto" since issue 24, none before it)
sandbox_mode = ""


class BenchError(Exception):
    pass


# -- environment -----------------------------------------------------------
class Sandbox:
    """The temp dir, the environment every subprocess gets, and the tmux server."""

    def __init__(self, under: str = "/tmp") -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hb", dir=under))  # short: tmux socket paths
        home = self.dir / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        self.socket = f"bench-{os.getpid()}"
        # Hive runs from bytecode compiled once (`precompile`), as an installed tool does: with
        # PYTHONDONTWRITEBYTECODE every process compiled Hive's source again, which charged each
        # start-up for the size of the code rather than for what it does.
        dropped = ("TMUX", "HIVE_TASK", "HIVE_ATTEMPT", "HIVE_ROOT", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if k not in dropped}
        env.update(GIT_ENV)
        env.update({"HOME": str(home), "TMUX_TMPDIR": str(self.dir), "HIVE_TMUX_SOCKET": self.socket})
        env["PATH"] = f"{Path(PY).parent}{os.pathsep}{env.get('PATH', '')}"
        self.env = env

    def run(
        self, argv: list[str], cwd: Path, timeout: float = RUN_TIMEOUT, check: bool = True
    ) -> subprocess.CompletedProcess:
        """A subprocess in its own process group, killed with its group on timeout."""
        p = subprocess.Popen(
            argv,
            cwd=cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            raise BenchError(f"{' '.join(argv)} timed out after {timeout}s in {cwd}\n{err[-2000:]}") from None
        r = subprocess.CompletedProcess(argv, p.returncode, out, err)
        if check and r.returncode != 0:
            raise BenchError(f"{' '.join(argv)} exited {r.returncode} in {cwd}\n{out[-2000:]}\n{err[-2000:]}")
        return r

    def timed(self, argv: list[str], cwd: Path, check: bool = True) -> tuple[float, subprocess.CompletedProcess]:
        t0 = time.perf_counter()
        r = self.run(argv, cwd, check=check)
        return time.perf_counter() - t0, r

    def tmux_sessions(self) -> list[str]:
        r = subprocess.run(
            ["tmux", "-L", self.socket, "list-sessions", "-F", "#{session_name}"],
            env=self.env,
            capture_output=True,
            text=True,
        )
        return r.stdout.split() if r.returncode == 0 else []

    def precompile(self, src: Path) -> None:
        """Compile Hive's modules under `src` to bytecode, as `pip install` does."""
        subprocess.run([PY, "-m", "compileall", "-q", str(src / "hive")], env=self.env, check=True)

    def use_hive_rev(self, rev: str) -> dict:
        """Run Hive as committed at `rev` instead of the (editable, possibly mid-edit)
        working tree: `git archive` into the temp dir, first on PYTHONPATH (the editable
        install's finder comes after PYTHONPATH); a revision from before issue 21, whose
        templates/ were at the top, gets them placed as hive/templates."""
        commit = subprocess.run(
            ["git", "-C", str(HIVE_SRC), "rev-parse", "--verify", f"{rev}^{{commit}}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        src = self.dir / "hive-src"
        src.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(HIVE_SRC), "archive", "--format=tar", commit], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        templates = src / "hive" / "templates"
        if (src / "templates").is_dir() and not templates.exists():
            shutil.copytree(src / "templates", templates, symlinks=False, ignore_dangling_symlinks=True)
            (templates / "__init__.py").touch()
        self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), self.env.get("PYTHONPATH", "")]))
        self.precompile(src)
        probe = (
            "import hive, hive.compiler, importlib.resources as r; "
            "print(hive.__file__); print(r.files('hive.templates').joinpath('context.md.j2'))"
        )
        where = subprocess.run(
            [PY, "-c", probe], cwd=self.dir, env=self.env, capture_output=True, text=True, check=True
        ).stdout.split()
        if not all(w.startswith(str(src)) for w in where):
            raise BenchError(f"--rev {rev}: Hive is still imported from {where}, not from {src}")
        return {"rev": rev, "commit": commit, "source": str(src)}

    def kill_tmux(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], env=self.env, capture_output=True)

    def tmux_server_alive(self) -> bool:
        r = subprocess.run(["tmux", "-L", self.socket, "list-sessions"], env=self.env, capture_output=True)
        return r.returncode == 0

    def close(self, keep: bool, problems: list[str]) -> dict:
        """The end of a benchmark: its tmux server killed (a server that outlives that is a
        problem) and the temp dir deleted unless `keep`; what was left, for the JSON."""
        leftover = self.tmux_sessions()
        self.kill_tmux()
        alive = self.tmux_server_alive()
        if alive:
            problems.append(f"tmux server {self.socket} still alive after kill-server")
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        return {"tmux_sessions_at_end": leftover, "tmux_server_alive_after_kill": alive}


def git(sb: Sandbox, cwd: Path, *args: str) -> str:
    return sb.run(["git", *args], cwd).stdout.strip()


def new_repo(sb: Sandbox, name: str, hive: bool = True) -> Path:
    root = sb.dir / name
    root.mkdir()
    git(sb, root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# bench project\n")
    git(sb, root, "add", "README.md")
    git(sb, root, "commit", "-q", "-m", "initial commit")
    if hive:
        init_hive(sb, root)
    return root


def init_hive(sb: Sandbox, root: Path, config: str = "") -> None:
    """`hive init` in the repo at `root`, then its config: `config`, else hive_config()'s."""
    sb.run([PY, "-m", "hive", "init"], root)
    (root / ".hive" / "config.toml").write_text(config or hive_config())


def hive_config(changes: Mapping[str, object] | None = None, sandbox: Mapping[str, object] | None = None) -> str:
    """CONFIG with some of its keys given other values (`{"max_workers": 8}`), and a [sandbox]
    table holding `sandbox_mode` (if set) and `sandbox`'s keys; values are written as JSON, which
    TOML reads alike for numbers, strings and lists of strings."""
    config = CONFIG.format(agent=AGENT)
    for key, value in (changes or {}).items():
        config, found = re.subn(rf"^{re.escape(key)} = .*$", f"{key} = {json.dumps(value)}", config, flags=re.M)
        if found != 1:
            raise BenchError(f"bench/run.py's CONFIG has no `{key} = ...` line to change")
    table = {**({"mode": sandbox_mode} if sandbox_mode else {}), **(sandbox or {})}
    if table:
        config += "\n[sandbox]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())
    return config


def commit_all(sb: Sandbox, root: Path, message: str) -> None:
    git(sb, root, "add", "-A")
    git(sb, root, "commit", "-q", "-m", message)


def write_plan(
    root: Path,
    name: str,
    title: str,
    tasks: list[tuple[str, str, list[str], str]],
    fields: Mapping[str, Mapping[str, str]] | None = None,
) -> Path:
    """tasks: (id, title, depends_on, description); fields: more fields of a task by its id
    (`{"t01": {"Verify": "sleep 3"}}`), written under its `Depends on`."""
    out = [f"---\nstatus: approved\n---\n# {title}\n\n## Context\nGenerated by bench/run.py.\n\n## Tasks\n"]
    for tid, ttitle, deps, desc in tasks:
        more = "".join(f"**{k}:** {v}\n" for k, v in (fields or {}).get(tid, {}).items())
        out.append(f"### Task {tid}: {ttitle}\n**Depends on:** {', '.join(deps) if deps else 'none'}\n{more}\n{desc}\n")
    path = root / "plans" / f"{name}.md"
    path.write_text("\n".join(out))
    return path


# -- reading Hive's records --------------------------------------------------
def events(root: Path) -> list[dict]:
    path = root / ".hive" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def signal_times(root: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    signals = root / ".hive" / "signals"
    # one folder per attempt since issue 24 (`<attempt>/signal.json`); one file each before it
    for f in [*signals.glob("*/signal.json"), *signals.glob("*.json")]:
        data = json.loads(f.read_text())
        out.setdefault(data["task"], data["time"])  # attempt 1 only (max_attempts = 1)
    return out


def reasons(root: Path, plan: str) -> dict[str, str]:
    """Each task's recorded reason, with the tail of its agent's output."""
    out = {}
    for f in (root / ".hive" / "state" / plan).glob("*.json"):
        data = json.loads(f.read_text())
        out[f"{data['plan']}:{data['id']}"] = f"{data.get('reason', '')} {data.get('output_tail', '')}".strip()
    return out


def states(root: Path, plan: str) -> dict[str, str]:
    out = {}
    for f in (root / ".hive" / "state" / plan).glob("*.json"):
        data = json.loads(f.read_text())
        out[f"{data['plan']}:{data['id']}"] = data["state"]
    return out


def check_hive_run(
    sb: Sandbox, root: Path, plan: str, keys: list[str], r: subprocess.CompletedProcess, problems: list[str], label: str
) -> dict:
    """Everything a clean run must leave: exit 0, every task done, one merge each on
    main, no worktree, no tmux session. Deviations go to `problems` (reported, not fixed)."""
    st = states(root, plan)
    not_done = {k: st.get(k, "planned") for k in keys if st.get(k) != "done"}
    merges = int(git(sb, root, "rev-list", "--count", "--merges", "main"))
    worktrees = task_worktrees(sb, root)
    sessions = sb.tmux_sessions()
    info = {
        "exit_code": r.returncode,
        "not_done": not_done,
        "merges_on_main": merges,
        "leftover_worktrees": len(worktrees),
        "leftover_sessions": sessions,
    }
    if r.returncode != 0:
        problems.append(f"{label}: doit exited {r.returncode}: {r.stderr.strip()[-800:]}")
    if not_done:
        problems.append(f"{label}: tasks not done: {not_done}")
        for key in not_done:  # why, as its state records it (the run's output shows only its tail)
            reason = reasons(root, plan).get(key, "")
            if reason:
                problems.append(f"{label}: {key}: {reason[:1500]}")
    if merges != len(keys):
        problems.append(f"{label}: {merges} merge commits on main, expected {len(keys)}")
    if worktrees:
        problems.append(f"{label}: {len(worktrees)} worktree(s) left: {worktrees[:3]}")
    if sessions:
        problems.append(f"{label}: tmux sessions left after the run: {sessions}")
    log = root / ".hive" / "hive.log"
    if log.exists():
        problems.append(f"{label}: .hive/hive.log (internal errors) exists:\n{log.read_text()[-1500:]}")
    return info


def task_worktrees(sb: Sandbox, root: Path) -> list[str]:
    """The worktrees left but the main checkout and the workers' spares (`[worktrees] reuse`:
    each keeps the checkout of its last task for its next one)."""
    listed = [ln for ln in git(sb, root, "worktree", "list", "--porcelain").splitlines() if ln.startswith("worktree ")]
    return [ln for ln in listed[1:] if not re.fullmatch(r"w\d+-spare", Path(ln.split(" ", 1)[1]).name)]


def per_task_phases(evs: list[dict], sigs: dict[str, float], keys: list[str]) -> dict[str, dict]:
    """Per task: claim (→ in_progress), spawned, signal, merged (absolute times)."""
    out: dict[str, dict] = {k: {} for k in keys}
    for e in evs:
        k = e["task"]
        if k not in out:
            continue
        if e["event"] == "in_progress" and "claim" not in out[k]:
            out[k]["claim"] = e["time"]
        elif e["event"] in ("spawned", "merging", "merged"):
            out[k].setdefault(e["event"], e["time"])
    for k in keys:
        if k in sigs:
            out[k]["signal"] = sigs[k]
    return out


# -- measurement 1 + 2: serial overhead and signal→merged latency ----------
def bench_serial(sb: Sandbox, problems: list[str]) -> dict:
    root = new_repo(sb, "serial")
    n = SERIAL_TASKS
    ids = [f"t{i:02d}" for i in range(1, n + 1)]
    write_plan(root, "serial", "Serial bench", [(t, f"Instant task {t}", [], f"Write a file for {t}.") for t in ids])
    commit_all(sb, root, "bench: serial plan and Hive config")
    t0 = time.time()
    wall, r = sb.timed([PY, "-m", "doit"], root, check=False)
    keys = [f"serial:{t}" for t in ids]
    check = check_hive_run(sb, root, "serial", keys, r, problems, "serial run")

    evs = events(root)
    sigs = signal_times(root)
    phases = per_task_phases(evs, sigs, keys)
    latencies = {k: round(p["merged"] - p["signal"], 4) for k, p in phases.items() if "merged" in p and "signal" in p}
    if len(latencies) != n:
        problems.append(f"serial run: signal→merged latency known for {len(latencies)} of {n} tasks")
    # Where the time of one task goes (sequential run: consecutive tasks do not overlap).
    order = sorted((p for p in phases.values() if "claim" in p and "merged" in p), key=lambda p: p["claim"])
    breakdown: dict[str, list[float]] = {
        "claim_to_spawned": [],
        "spawned_to_signal": [],
        "signal_to_merged": [],
        "signal_to_merging": [],
        "merging_to_merged": [],
        "merged_to_next_claim": [],
    }
    for i, p in enumerate(order):
        if "spawned" in p:
            breakdown["claim_to_spawned"].append(round(p["spawned"] - p["claim"], 4))
            if "signal" in p:
                breakdown["spawned_to_signal"].append(round(p["signal"] - p["spawned"], 4))
        if "signal" in p:
            breakdown["signal_to_merged"].append(round(p["merged"] - p["signal"], 4))
            if "merging" in p:
                breakdown["signal_to_merging"].append(round(p["merging"] - p["signal"], 4))
        if "merging" in p:
            breakdown["merging_to_merged"].append(round(p["merged"] - p["merging"], 4))
        if i + 1 < len(order):
            breakdown["merged_to_next_claim"].append(round(order[i + 1]["claim"] - p["merged"], 4))
    first_claim = order[0]["claim"] if order else None
    last_merged = order[-1]["merged"] if order else None
    return {
        "tasks": n,
        "wall_s": round(wall, 4),
        "per_task_s": round(wall / n, 4),
        "doit_start_to_first_claim_s": round(first_claim - t0, 4) if first_claim else None,
        "last_merged_to_exit_s": round(t0 + wall - last_merged, 4) if last_merged else None,
        "breakdown_s": breakdown,
        "breakdown_median_s": {k: round(statistics.median(v), 4) for k, v in breakdown.items() if v},
        "signal_to_merged_s": latencies,
        "signal_to_merged_median_s": round(statistics.median(latencies.values()), 4) if latencies else None,
        "signal_to_merged_max_s": round(max(latencies.values()), 4) if latencies else None,
        "check": check,
    }


BASELINE_DODO = '''\
"""Plain doit baseline for bench/run.py: the same git work as one Hive task, per task
(worktree from main, write + commit a file, merge --no-ff into main, remove the
worktree and the branch), no tmux, no Hive."""
N = {n}


def task_plain():
    for i in range(1, N + 1):
        yield {{
            "name": f"t{{i:02d}}",
            "actions": [
                f"git worktree add -q -b b{{i}} wt{{i}} main",
                f"echo b{{i}} > wt{{i}}/bench-b{{i}}.txt && git -C wt{{i}} add -A"
                f" && git -C wt{{i}} commit -q -m 'bench: b{{i}}'",
                f"git merge -q --no-ff -m 'merge b{{i}}' b{{i}}",
                f"git worktree remove wt{{i}}",
                f"git branch -q -d b{{i}}",
            ],
        }}
'''


def bench_baseline(sb: Sandbox, problems: list[str]) -> dict:
    root = new_repo(sb, "plain", hive=False)
    (root / "dodo.py").write_text(BASELINE_DODO.format(n=SERIAL_TASKS))
    (root / ".gitignore").write_text(".doit.db*\nwt*/\n")
    commit_all(sb, root, "bench: plain doit baseline")
    wall, r = sb.timed([PY, "-m", "doit"], root, check=False)
    merges = int(git(sb, root, "rev-list", "--count", "--merges", "main"))
    if r.returncode != 0 or merges != SERIAL_TASKS:
        problems.append(f"plain doit baseline: exit {r.returncode}, {merges} merges: {r.stderr[-800:]}")
    return {
        "tasks": SERIAL_TASKS,
        "wall_s": round(wall, 4),
        "per_task_s": round(wall / SERIAL_TASKS, 4),
        "exit_code": r.returncode,
        "merges_on_main": merges,
    }


# -- measurement 3: parallel efficiency -------------------------------------
def dag_tasks(sleep: float) -> list[tuple[str, str, list[str], str]]:
    tasks = []
    desc = f"Sleep, then write a file.\n\nbench-sleep: {sleep:g}"
    for c in range(CHAINS):
        for j in range(1, CHAIN_LEN + 1):
            tid = f"c{c}-{j}"
            tasks.append((tid, f"Chain {c} step {j}", [f"c{c}-{j - 1}"] if j > 1 else [], desc))
    for s in range(SINGLES):
        tasks.append((f"s{s}", f"Independent {s}", [], desc))
    return tasks


def critical_path_tasks(tasks: list[tuple[str, str, list[str], str]]) -> int:
    depth: dict[str, int] = {}
    for tid, _, deps, _ in tasks:  # listed in dependency order
        depth[tid] = 1 + max((depth[d] for d in deps), default=0)
    return max(depth.values())


def bench_parallel(sb: Sandbox, workers: int, sleep: float, overhead: float, fixed: float, problems: list[str]) -> dict:
    """`overhead`: serial wall / tasks (start-up included, spread over the tasks);
    `fixed`: doit's start-up to the first claim plus last merge to exit, from the serial
    run. The lower bound is computed twice: with `overhead` per task, and with the
    fixed start-up/exit counted once plus the per-task overhead without it (no schedule
    can run doit's start-up in parallel with anything)."""
    root = new_repo(sb, f"par{workers}")
    tasks = dag_tasks(sleep)
    write_plan(root, "dag", f"Wide DAG, {len(tasks)} tasks", tasks)
    commit_all(sb, root, "bench: DAG plan and Hive config")
    argv = [PY, "-m", "doit", "-n", str(workers)]
    t0 = time.time()
    wall, r = sb.timed(argv, root, check=False)
    keys = [f"dag:{t[0]}" for t in tasks]
    check = check_hive_run(sb, root, "dag", keys, r, problems, f"parallel run -n {workers}")
    duration = sleep + overhead
    cp = critical_path_tasks(tasks) * duration
    work = len(tasks) * duration
    bound = max(cp, work / workers)
    per_task = sleep + max(overhead - fixed / SERIAL_TASKS, 0.0)
    bound_fixed = fixed + max(critical_path_tasks(tasks) * per_task, len(tasks) * per_task / workers)
    phases = per_task_phases(events(root), signal_times(root), keys)
    concurrency = max_concurrency(
        [(p["spawned"], p["merged"]) for p in phases.values() if "spawned" in p and "merged" in p]
    )
    return {
        "workers": workers,
        "argv": argv[2:],
        "makespan_s": round(wall, 4),
        "task_duration_s": round(duration, 4),
        "critical_path_s": round(cp, 4),
        "total_work_over_n_s": round(work / workers, 4),
        "bound_s": round(bound, 4),
        "ratio": round(wall / bound, 4),
        "max_agents_at_once": concurrency,
        "fixed_startup_exit_s": round(fixed, 4),
        "bound_startup_once_s": round(bound_fixed, 4),
        "ratio_startup_once": round(wall / bound_fixed, 4),
        "timeline_s": {k: {e: round(v - t0, 3) for e, v in p.items()} for k, p in phases.items()},
        "check": check,
    }


def max_concurrency(spans: list[tuple[float, float]]) -> int:
    points = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    best = cur = 0
    for _, d in points:
        cur += d
        best = max(best, cur)
    return best


# -- measurement 4: scale ----------------------------------------------------
COMPILE_PROBE = """\
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
from hive.dodo.loader import generate_tasks
from hive.project import load_project
t1 = time.perf_counter()
project = load_project(Path(sys.argv[1]))
t2 = time.perf_counter()
tasks = list(generate_tasks(project))
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_project_s": t2 - t1, "generate_tasks_s": t3 - t2,
                  "total_s": t3 - t0, "doit_tasks": len(tasks)}))
"""

PLAIN_SCALE_DODO = '''\
"""Plain doit with {n} trivial tasks (same dependency shape as the Hive scale plan).
`subtasks`: like Hive's dodo, `doit list` shows every task, not just the group."""

DOIT_CONFIG = {{"subtasks": True}}


def _noop():
    return True


def task_t():
    for i in range(1, {n} + 1):
        yield {{"name": f"t{{i:04d}}", "actions": [(_noop,)], "uptodate": [True],
                "task_dep": [f"t:t{{i - 1:04d}}"] if i % 10 == 0 else [],
                "doc": f"Trivial task {{i}}"}}
'''


def median_of(sb: Sandbox, argv: list[str], cwd: Path) -> tuple[float, list[float], subprocess.CompletedProcess]:
    times = []
    for _ in range(REPEATS):
        t, last = sb.timed(argv, cwd)
        times.append(round(t, 4))
    return statistics.median(times), times, last


def bench_scale(sb: Sandbox, problems: list[str]) -> dict:
    root = new_repo(sb, "scale")
    n = SCALE_TASKS
    tasks = [
        (
            f"t{i:04d}",
            f"Scale task {i}",
            [f"t{i - 1:04d}"] if i % 10 == 0 else [],
            f"Never run; task {i} of a generated {n}-task plan.",
        )
        for i in range(1, n + 1)
    ]
    write_plan(root, "scale", f"Scale plan, {n} tasks", tasks)
    commit_all(sb, root, "bench: scale plan and Hive config")
    probe = sb.dir / "compile_probe.py"
    probe.write_text(COMPILE_PROBE)
    compiles = [json.loads(sb.run([PY, str(probe), str(root)], root).stdout) for _ in range(REPEATS)]
    if compiles[0]["doit_tasks"] != n + 2:  # + the plan's group task + `_hive`
        problems.append(f"scale: generate_tasks gave {compiles[0]['doit_tasks']} doit tasks for {n} plan tasks")
    hive_list, hive_list_runs, r = median_of(sb, [PY, "-m", "doit", "list"], root)
    listed = sum(1 for ln in r.stdout.splitlines() if any(w.startswith("scale:") for w in ln.split()[:2]))
    hive_status, hive_status_runs, r2 = median_of(sb, [PY, "-m", "doit", "list", "--status"], root)
    if listed != n:
        problems.append(f"scale: `doit list` listed {listed} scale tasks, expected {n}")

    plain = new_repo(sb, "plainscale", hive=False)
    (plain / "dodo.py").write_text(PLAIN_SCALE_DODO.format(n=n))
    plain_list, plain_list_runs, r3 = median_of(sb, [PY, "-m", "doit", "list"], plain)
    plain_status, plain_status_runs, _ = median_of(sb, [PY, "-m", "doit", "list", "--status"], plain)
    if sum(1 for ln in r3.stdout.splitlines() if ln.startswith("t:")) != n:  # `R name` only with --status
        problems.append(f"scale: plain `doit list` did not list {n} tasks")
    med = {k: round(statistics.median(c[k] for c in compiles), 4) for k in compiles[0] if k != "doit_tasks"}
    return {
        "tasks": n,
        "compile_runs": compiles,
        "compile_median_s": med,
        "hive_doit_list_s": round(hive_list, 4),
        "hive_doit_list_runs_s": hive_list_runs,
        "hive_doit_list_status_s": round(hive_status, 4),
        "hive_doit_list_status_runs_s": hive_status_runs,
        "plain_doit_list_s": round(plain_list, 4),
        "plain_doit_list_runs_s": plain_list_runs,
        "plain_doit_list_status_s": round(plain_status, 4),
        "plain_doit_list_status_runs_s": plain_status_runs,
        "list_ratio": round(hive_list / plain_list, 4),
        "list_status_ratio": round(hive_status / plain_status, 4),
        "hive_list_lines": len(r.stdout.splitlines()),
        "hive_list_status_lines": len(r2.stdout.splitlines()),
    }


# -- report ------------------------------------------------------------------
def machine_info(sb: Sandbox) -> dict:
    def out(argv: list[str]) -> str:
        try:
            return subprocess.run(argv, capture_output=True, text=True, env=sb.env).stdout.strip()
        except OSError as e:
            return f"unavailable: {e}"

    import doit

    df = out(["df", "--output=source,fstype,target", str(sb.dir)]).splitlines()  # a header, then its line
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "python_executable": PY,
        "git": out(["git", "--version"]),
        "tmux": out(["tmux", "-V"]),
        "doit": ".".join(map(str, doit.__version__)),
        "loadavg": os.getloadavg(),
        "hive_commit": out(["git", "-C", str(HIVE_SRC), "rev-parse", "HEAD"]),
        "hive_dirty": bool(out(["git", "-C", str(HIVE_SRC), "status", "--porcelain", "--", "hive"])),
        # where the scratch repos are: a new file costs ~0.75 ms on this machine's `/` (ext4 without a
        # journal), ~25 µs on a journaled ext4, and a task makes many (bench/README.md)
        "scratch_fs": " ".join(df[-1].split()) if len(df) > 1 else "",
    }


def verdict(ok: bool | None) -> str:
    return "info" if ok is None else ("PASS" if ok else "FAIL")


def table(results: dict) -> list[tuple[str, str, str, str]]:
    rows = []
    s, b = results.get("serial"), results.get("baseline")
    if s:
        rows.append(
            (
                "1. overhead per task, serial (Hive, 20 tasks)",
                f"{s['per_task_s']:.3f} s",
                "<= 0.5 s",
                verdict(s["per_task_s"] <= 0.5),
            )
        )
    if b:
        rows.append(("1. same git work, plain doit, per task", f"{b['per_task_s']:.3f} s", "-", verdict(None)))
    if s and b:
        rows.append(("1. Hive / plain doit", f"{s['per_task_s'] / b['per_task_s']:.1f}x", "-", verdict(None)))
    if s and s["signal_to_merged_median_s"] is not None:
        rows.append(
            (
                "2. signal -> merged, median",
                f"{s['signal_to_merged_median_s']:.3f} s",
                "<= 0.2 s",
                verdict(s["signal_to_merged_median_s"] <= 0.2),
            )
        )
        rows.append(("2. signal -> merged, max", f"{s['signal_to_merged_max_s']:.3f} s", "-", verdict(None)))
    for p in results.get("parallel", []):
        rows.append(
            (
                f"3. makespan doit -n {p['workers']} (bound {p['bound_startup_once_s']:.2f} s)",
                f"{p['makespan_s']:.2f} s = {p['ratio_startup_once']:.3f}x",
                "<= 1.05x bound",
                verdict(p["ratio_startup_once"] <= 1.05),
            )
        )
        rows.append(
            (
                f"3.   same, start-up spread per task (bound {p['bound_s']:.2f} s)",
                f"{p['ratio']:.3f}x",
                "-",
                verdict(None),
            )
        )
    sc = results.get("scale")
    if sc:
        rows.append(
            (
                "4. parse + compile 1,000 tasks (in-process)",
                f"{sc['compile_median_s']['total_s']:.3f} s",
                "-",
                verdict(None),
            )
        )
        rows.append(
            (
                "4. doit list, 1,000 tasks",
                f"{sc['hive_doit_list_s']:.3f} s",
                "<= 1 s",
                verdict(sc["hive_doit_list_s"] <= 1.0),
            )
        )
        rows.append(
            (
                "4. doit list vs plain doit",
                f"{sc['list_ratio']:.2f}x ({sc['plain_doit_list_s']:.3f} s)",
                "<= 2x",
                verdict(sc["list_ratio"] <= 2.0),
            )
        )
        rows.append(
            ("4. doit list --status, 1,000 tasks", f"{sc['hive_doit_list_status_s']:.3f} s", "-", verdict(None))
        )
        rows.append(
            (
                "4. doit list --status vs plain doit",
                f"{sc['list_status_ratio']:.2f}x ({sc['plain_doit_list_status_s']:.3f} s)",
                "-",
                verdict(None),
            )
        )
    for name, err in results.get("errors", {}).items():
        rows.append((f"{name}: did not complete", err.splitlines()[0][:60], "-", "FAIL"))
    return rows


def save(out: Path, results: dict) -> None:
    """The raw numbers, as JSON (bench/results/ is git-ignored)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=str) + "\n")


def print_problems(problems: list[str], out: str, kept: Path | None) -> None:
    """Under the table: every problem, then where the raw numbers (and the kept scratch repos) are."""
    for p in problems:
        print(f"problem: {p}")
    print(f"raw numbers: {out}" + (f"; scratch repos kept in {kept}" if kept else ""))


def print_table(rows: list[tuple[str, str, str, str]]) -> None:
    head = ("measurement", "value", "target", "pass/fail")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    line = "  ".join("-" * w for w in widths)
    print(line)
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    print(line)
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 s agents in the parallel DAG instead of 3 s")
    ap.add_argument("--out", default=str(BENCH / "results" / "latest.json"), help="where to write the raw JSON")
    ap.add_argument("--keep", action="store_true", help="keep the scratch repos (their path is printed)")
    ap.add_argument(
        "--rev",
        help="benchmark Hive as committed at this git revision (e.g. HEAD) instead of the installed working tree",
    )
    ap.add_argument(
        "--tmp",
        default="/tmp",
        help="the folder the scratch repos go in (default /tmp): another file system (bench/README.md)",
    )
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--sandbox", action="store_const", const="on", dest="sandbox", help='[sandbox] mode = "on"')
    mode.add_argument("--no-sandbox", action="store_const", const="off", dest="sandbox", help='[sandbox] mode = "off"')
    args = ap.parse_args()
    sleep = 1.0 if args.quick else 3.0
    global sandbox_mode
    sandbox_mode = args.sandbox or ""

    started = time.perf_counter()
    sb = Sandbox(args.tmp)
    results: dict = {
        "quick": args.quick,
        "sandbox": args.sandbox or "default",
        "agent_sleep_s": sleep,
        "errors": {},
        "problems": [],
    }
    problems: list[str] = results["problems"]
    print(f"bench: scratch dir {sb.dir}, tmux socket {sb.socket}", file=sys.stderr)
    try:
        results["machine"] = machine_info(sb)
        if not args.rev:
            sb.precompile(HIVE_SRC)
        results["hive_under_test"] = (
            sb.use_hive_rev(args.rev)
            if args.rev
            else {
                "rev": None,
                "source": str(HIVE_SRC),
                "commit": results["machine"]["hive_commit"],
                "working_tree_modified": results["machine"]["hive_dirty"],
            }
        )

        def step(name: str, fn, *a):
            print(f"bench: {name} ...", file=sys.stderr, flush=True)
            t = time.perf_counter()
            try:
                value = fn(sb, *a)
            except BenchError as e:
                results["errors"][name] = str(e)
                problems.append(f"{name}: {e}")
                value = None
            print(f"bench: {name} took {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
            return value

        results["serial"] = step("serial", bench_serial, problems)
        results["baseline"] = step("baseline", bench_baseline, problems)
        overhead = results["serial"]["per_task_s"] if results["serial"] else 0.5
        fixed = (
            (results["serial"]["doit_start_to_first_claim_s"] or 0) + (results["serial"]["last_merged_to_exit_s"] or 0)
            if results["serial"]
            else 0.0
        )
        results["dag"] = {
            "shape": f"{CHAINS} chains of {CHAIN_LEN} tasks (cK-1 -> cK-2) + {SINGLES} independent "
            f"tasks = {CHAINS * CHAIN_LEN + SINGLES} tasks",
            "tasks": [{"id": t[0], "depends_on": t[2]} for t in dag_tasks(sleep)],
            "per_task_overhead_s": overhead,
            "agent_sleep_s": sleep,
        }
        results["parallel"] = [
            p
            for p in (step(f"parallel -n {n}", bench_parallel, n, sleep, overhead, fixed, problems) for n in (1, 2, 4))
            if p
        ]
        results["scale"] = step("scale", bench_scale, problems)
    except (BenchError, subprocess.CalledProcessError) as e:
        results["errors"]["setup"] = str(e)
        problems.append(f"setup: {e}")
    finally:
        results["cleanup"] = sb.close(args.keep, problems)
    results["bench_wall_s"] = round(time.perf_counter() - started, 2)

    save(Path(args.out), results)
    rows = table(results)
    print_table(rows)
    m = results.get("machine", {})
    hut = results.get("hive_under_test") or {}
    print(
        f"Hive under test: {hut.get('source')} at {str(hut.get('commit'))[:10]}"
        + (" (+ uncommitted changes)" if hut.get("working_tree_modified") else "")
    )
    print(
        f"{m.get('cpu_count')} CPUs, Python {m.get('python')}, {m.get('git')}, {m.get('tmux')}, "
        f"doit {m.get('doit')}; scratch repos on {m.get('scratch_fs')}; "
        f"agents sleep {sleep:g} s in the DAG; benchmark took {results['bench_wall_s']:.0f} s"
    )
    print_problems(problems, args.out, sb.dir if args.keep else None)
    return 1 if results["errors"] or any(r[3] == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
