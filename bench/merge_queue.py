#!/usr/bin/env python3
"""Issue 25's benchmark ("A merge queue that keeps up"): what checks on the merged result cost
a run, each figure against the issue's target (see bench/README.md, "Merge queue").

    .venv/bin/python bench/merge_queue.py [--quick] [--only parallel,replay,failing] [--out F.json] [--keep]
    .venv/bin/python bench/merge_queue.py --make-bundle --history CLONE   # once: the replayed history

1. Checks in parallel: 16 independent tasks at `doit -n 8`, agents working 2 s with
   `**Verify:** sleep 3`, against the same plan with 5 s agents and no Verify: makespan ratio.
2. History replay: 20 consecutive commits of cachetools, each a task whose agent applies exactly
   that commit, dependencies from the files they touch, Verify = the project's test suite, at
   `doit -n 3`, against applying them by hand one after another with the tests after each; and
   main's final tree against upstream's.
3. The same with one task in every four made to fail its check (its agent also commits a failing
   test), against the tasks that merge applied by hand.
4. Reviews (issue 39): 16 independent tasks at `doit -n 8`, agents working 2 s with `**Verify:**
   sleep 3` and a reviewer (bench/review_agent.sh) taking 3 s on each change, against the same plan
   with `**Verify:** sleep 6` and no review: makespan ratio.

Scratch repos, private $HOME, pinned git identity and a private tmux server come from
bench/run.py (its Sandbox, always killed at the end); Hive runs as real `python -m doit`
subprocesses with bench/instant_agent.sh as the agent.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import functools
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import run as bench  # noqa: E402 — bench/run.py: Sandbox, repos, plans, Hive's records, the table

TIMER = BENCH / "timed_check.sh"
REVIEWER = BENCH / "review_agent.sh"
BUNDLE = BENCH / "data" / "cachetools.bundle"  # made by --make-bundle; not committed (bench/README.md)
WINDOW_REF = "refs/heads/window"
FAIL_EVERY = 4  # the task at every 4th position of the window fails its check (measurement 3)

# The replayed history: https://github.com/tkem/cachetools (MIT), first-parent commits
# 8e696bb..86352ae (2026-01), with the window's base first; (upstream commit, its tree). The
# bundle holds the same trees on rewritten commits (the base as a root, so nothing before it is
# needed): the trees, checked on every run, are what make it the same history.
UPSTREAM = "https://github.com/tkem/cachetools"
HISTORY: tuple[tuple[str, str], ...] = (
    ("31c81d4c1bed9add593224e30bc476a77e28072a", "b07f501981dd9dca3ee6eb45c1af0a904808dd0f"),  # base
    ("8e696bb263a36ff0c0514f2c340d7ce51dc34257", "89e8d4cac59fc4d1f94a840d0b8a40bea70b24d0"),
    ("8df8c9f225e6ae25b0f274a7abf504ed70ab7f8e", "785428cdc3a121faf37d7a51ec5655de30540deb"),
    ("8a8c186117c6e8b3c742b326e6da7dac0e44d1fb", "2d0eab68bd71345b1227334c0345d57501bf00c5"),
    ("9714e08aba4008e26c422bf3345f12a5d59aa7c1", "73cd38fb9f0c97e5e2f911534a2e3f0a1da539a9"),
    ("1b704d0bd4b1656109f20905d76f1564a185afd7", "1bf195251ebbd88597fa4d45dad8eafd3363175b"),
    ("815f4ce0a760f6bc792c60c9d3b90e2153322022", "eeb1e80924048f2ce609623a09a9fe0bf77d00e6"),
    ("0d1fceca4ca39d68a47ecfecfec69a2ab1cf6e51", "4201fcf51f9afab388ed6513bcb76b5b1c5ca580"),
    ("e73a85398640beb8354502741a9fccb122161f05", "87687454318093c3ef8369f98f414cdf866f9797"),
    ("d3128001693d46f1a352fb940db18539cac34f99", "1f8f26e8beb28dfba420d28ad99f84eac6d64224"),
    ("69fa1bbd02fdfe830336f7ca6b511b56ea8a3304", "4d8c2e8b9f276b8f61cbd7edc473fbf89318b79d"),
    ("fe9ffc38c9a3271bfe218ace885c0cdfaca78f9f", "2557f864c36401137f846f061b2b0d9fdcf1d166"),
    ("f0853669c34aa8589f91049969ffc9421645492b", "b62df5e3fe911dc250a8b74f9f864d2040ba44dd"),
    ("8dff9116e7f8149351812a7c35087ced9ec3fc61", "5c7d28d977e5200a3953f0c131e8e0e1f11a1ece"),
    ("0ccce3eb83a44e6480d85fcd7bb6c085eee3bafb", "850a70f72d005cbe6f709cef27325f1a93b778b4"),
    ("a12c3b05a179f6d15e926784652935133d376755", "73b89d902eecd8b5700dd9ab8a15a5048f2ecb30"),
    ("ae3d6bd7954ed14385501b40af6cfb486750f825", "41437317bf7ab5366f4592ff3a667af337cbe2c8"),
    ("c933a9767348d43a570397de47455b98ecd6c191", "78120a88edd5bc1d7240cafbf835c70ee62cb254"),
    ("59d4db25cd7e75a49886bdf5e1a01665811b935f", "2fc4833a27c15a61cd5eb36bebd352300096ce8a"),
    ("263cf3185fcec33aceb93704252e5f34e8f9d3e3", "ea8536421ac724879901a201124b9abb0a1ecb50"),
    ("86352aed2bedb23aa0cc461a58e76bd667617eaa", "8dd96b9055a08a17b45b1dcaeb08e34adcac8bb1"),
)
# The project's test suite as its developers run it (tox.ini's `py.test`, less coverage), from a
# checkout (src layout). Its threading tests are opt-in (THREADING_TESTS=1, tox sets it; +2 s of
# sleeps) and stay off, as a plain `pytest` leaves them: the suite takes ~1 s, issue 25's size.
TESTS = ("env", "PYTHONPATH=src", bench.PY, "-m", "pytest", "-q")


@dataclass(frozen=True)
class Sizes:
    tasks: int  # measurement 1: independent tasks
    workers: int  # its `doit -n`
    agent_s: float  # its agents' work with a Verify
    check_s: float  # that Verify's `sleep` (the other plan's agents work agent_s + check_s)
    window: int  # measurements 2 and 3: commits replayed (the first of HISTORY's window)
    replay_workers: int  # their `doit -n`


FULL = Sizes(tasks=16, workers=8, agent_s=2, check_s=3, window=20, replay_workers=3)
QUICK = Sizes(tasks=8, workers=4, agent_s=1, check_s=1.5, window=8, replay_workers=3)

TARGETS = {"parallel": 1.3, "replay": 0.8, "failing": 1.5, "review": 1.3}

PlanTask = tuple[str, str, list[str], str]  # bench.write_plan's: id, title, depends on, description


@dataclass(frozen=True)
class Commit:
    """One commit of the replayed window, as the scratch repos hold it."""

    sha: str
    tree: str
    upstream: str
    subject: str
    files: tuple[str, ...]


# -- the replayed history -------------------------------------------------------------------------
def make_bundle(sb: bench.Sandbox, source: Path, out: Path) -> None:
    """The window and its base, from a clone of upstream (`source`, a work tree or a git dir), as a
    standalone bundle: the base's tree as a root commit, each commit of the window on it with its
    tree, message, author and dates (so the same commits every time), `upstream: <sha>` added."""
    objects = Path(source, bench.git(sb, source, "rev-parse", "--git-path", "objects"))
    work = sb.dir / "bundle.git"
    bench.git(sb, sb.dir, "init", "-q", "--bare", str(work))
    (work / "objects" / "info" / "alternates").write_text(f"{objects.resolve()}\n")
    parent = ""
    for n, (sha, tree) in enumerate(HISTORY):
        meta = bench.git(sb, work, "log", "-1", "--date=raw", "--format=%an%n%ae%n%ad%n%cn%n%ce%n%cd%n%T%n%P", sha)
        an, ae, ad, cn, ce, cd, got_tree, parents = (meta.splitlines() + [""])[:8]
        if got_tree != tree or (n and parents != HISTORY[n - 1][0]):
            raise bench.BenchError(f"{source}: {sha} is not the pinned history (tree {got_tree}, parents {parents})")
        body = bench.git(sb, work, "log", "-1", "--format=%B", sha)
        if not n:
            body = f"cachetools at {sha[:10]}, the base of bench/merge_queue.py's window (history before it left out)"
        env = {**sb.env, "GIT_AUTHOR_NAME": an, "GIT_AUTHOR_EMAIL": ae, "GIT_AUTHOR_DATE": ad}
        env.update({"GIT_COMMITTER_NAME": cn, "GIT_COMMITTER_EMAIL": ce, "GIT_COMMITTER_DATE": cd})
        argv = ["git", "commit-tree", tree, *(["-p", parent] if parent else []), "-F", "-"]
        message = f"{body}\n\nupstream: {UPSTREAM}/commit/{sha}\n"
        made = subprocess.run(argv, cwd=work, env=env, input=message, capture_output=True, text=True, check=True)
        parent = made.stdout.strip()
    bench.git(sb, work, "update-ref", WINDOW_REF, parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    bench.git(sb, work, "bundle", "create", "-q", str(out), WINDOW_REF)


def history_bundle(sb: bench.Sandbox, source: Path) -> Path:
    """A bundle of the window: `source` itself if it is one, else made from that clone."""
    if source.is_file():
        return source
    if not source.is_dir():
        raise bench.BenchError(
            f"no replayed history at {source}: make it once with `bench/merge_queue.py --make-bundle "
            f"--history CLONE`, CLONE a clone of {UPSTREAM}"
        )
    out = sb.dir / "history.bundle"
    make_bundle(sb, source, out)
    return out


def checkout_history(sb: bench.Sandbox, root: Path, bundle: Path, window: int) -> list[Commit]:
    """A repo at `root` whose main is the window's base, the window under WINDOW_REF; its first
    `window` commits (the base first), each checked against the pinned trees."""
    root.mkdir()
    bench.git(sb, root, "init", "-q", "-b", "main")
    bench.git(sb, root, "fetch", "-q", str(bundle), f"{WINDOW_REF}:{WINDOW_REF}")
    log = bench.git(sb, root, "log", "--first-parent", "--reverse", "--format=%H %T %s", WINDOW_REF)
    commits = []
    for n, line in enumerate(log.splitlines()[: window + 1]):
        sha, tree, subject = (line.split(" ", 2) + [""])[:3]
        if n >= len(HISTORY) or tree != HISTORY[n][1]:
            raise bench.BenchError(f"{bundle}: commit {n} ({sha}) has tree {tree}, not the pinned history's")
        changed = bench.git(sb, root, "diff-tree", "--no-commit-id", "--name-only", "-r", "--no-renames", "-z", sha)
        commits.append(Commit(sha, tree, HISTORY[n][0], subject, tuple(f for f in changed.split("\0") if f)))
    if len(commits) != window + 1:
        raise bench.BenchError(f"{bundle}: {len(commits) - 1} commits in the window, {window} wanted")
    bench.git(sb, root, "checkout", "-q", "-B", "main", commits[0].sha)
    return commits


def dependencies(commits: list[Commit]) -> list[list[int]]:
    """For each commit of the window (1-based positions), the latest earlier one that touched each
    of its files: what must be on main before its change applies as upstream made it."""
    last: dict[str, int] = {}
    deps = []
    for n, c in enumerate(commits[1:], 1):
        deps.append(sorted({last[f] for f in c.files if f in last}))
        last.update(dict.fromkeys(c.files, n))
    return deps


def task_id(n: int) -> str:
    return f"c{n:02d}"


# -- checks' times ----------------------------------------------------------------------------------
def verify(log_dir: Path, argv: tuple[str, ...]) -> str:
    """A Verify that runs `argv` through bench/timed_check.sh, which records its times in `log_dir`."""
    return shlex.join(["bash", str(TIMER), str(log_dir), *argv])


def check_times(log_dir: Path) -> dict:
    """Every check's (start, end, exit code) by task, with how long they took and how many ran at once."""
    runs: dict[str, list[list[float]]] = {}
    for f in sorted(log_dir.glob("*")):
        runs[f.name.replace("_", ":", 1)] = [[float(x) for x in ln.split()] for ln in f.read_text().splitlines()]
    spans = [(r[0], r[1]) for rs in runs.values() for r in rs]
    took = [b - a for a, b in spans]
    return {
        "source": "bench/timed_check.sh around each Verify (the same before and after the queue's `checked` events)",
        "checks": len(spans),
        "median_s": round(statistics.median(took), 3) if took else None,
        "max_s": round(max(took), 3) if took else None,
        "sum_s": round(sum(took), 3),
        "max_at_once": bench.max_concurrency(spans),
        "by_task": runs,
    }


# -- one Hive run -------------------------------------------------------------------------------------
def run_hive(sb: bench.Sandbox, root: Path, workers: int) -> tuple[float, subprocess.CompletedProcess, dict]:
    """`doit -n workers` in `root`: its wall time, its result, and the machine's load around it;
    its output goes to `<root>.out` and `<root>.err` (kept with --keep), the tail of each to the JSON."""
    before = os.getloadavg()
    wall, r = sb.timed([bench.PY, "-m", "doit", "-n", str(workers)], root, check=False)
    root.with_suffix(".out").write_text(r.stdout)
    root.with_suffix(".err").write_text(r.stderr)
    tails = {"doit_stdout_tail": r.stdout[-3000:], "doit_stderr_tail": r.stderr[-3000:]}
    return wall, r, {"loadavg_before": before, "loadavg_after": os.getloadavg(), **tails}


def phases(root: Path, keys: list[str], t0: float) -> dict:
    """Per task its claim, spawned, signal, merging and merged times (from doit's start), and the
    start cost (claim → spawned) of each, with its median."""
    per = bench.per_task_phases(bench.events(root), bench.signal_times(root), keys)
    start = {k: round(p["spawned"] - p["claim"], 4) for k, p in per.items() if "spawned" in p and "claim" in p}
    check_events = [e for e in bench.events(root) if "check" in e["event"] or "verif" in e["event"]]
    return {
        "start_cost_s": start,
        "start_cost_median_s": round(statistics.median(start.values()), 4) if start else None,
        "start_cost_max_s": round(max(start.values()), 4) if start else None,
        "timeline_s": {k: {e: round(v - t0, 3) for e, v in p.items()} for k, p in per.items()},
        "check_events": check_events,  # none today: Hive records no check's start or end
    }


# `--batch N`: `[merge] batch = N` in every repo (1, the default: Hive's default, no batches)
merge_batch = 1
# `--max-checks N`: `[merge] max_checks = N` in every repo (0, the default: Hive's, one per worker)
merge_max_checks = 0


def hive_repo(sb: bench.Sandbox, root: Path, workers: int, log_dir: Path, review_s: float = 0.0) -> None:
    """Hive in `root`, with `workers` workers and `log_dir` writable for the checks that record their
    times there (a run without checks gets it too: the same sandbox for both runs of measurement 1);
    with `review_s`, every change reviewed by bench/review_agent.sh taking that long."""
    config = bench.hive_config({"max_workers": workers}, {"writable": [f"{log_dir}/"]})
    if review_s:
        config = config.replace("[merge]\n", '[merge]\nreview = "reviewer"\n', 1)
        config += f'\n[agents.reviewer]\ncommand = ["bash", "{REVIEWER}", "{review_s:g}", "{{context_file}}"]\n'
    if merge_batch > 1:
        config = config.replace("[merge]\n", f"[merge]\nbatch = {merge_batch}\n", 1)
    if merge_max_checks:
        config = config.replace("[merge]\n", f"[merge]\nmax_checks = {merge_max_checks}\n", 1)
    bench.init_hive(sb, root, config)


# -- measurement 1: checks in parallel ------------------------------------------------------------
def bench_parallel(sb: bench.Sandbox, size: Sizes, problems: list[str]) -> dict:
    """The same work per task, as agent + Verify and as agent alone: the makespans' ratio."""
    first = len(problems)
    with_verify = parallel_run(sb, size, "with_verify", size.agent_s, size.check_s, problems)
    agent_only = parallel_run(sb, size, "agent_only", size.agent_s + size.check_s, 0.0, problems)
    return {
        "tasks": size.tasks,
        "workers": size.workers,
        "with_verify": with_verify,
        "agent_only": agent_only,
        "ratio": round(with_verify["makespan_s"] / agent_only["makespan_s"], 3),
        "complete": len(problems) == first,  # no problem in either run: the ratio stands
    }


def parallel_run(
    sb: bench.Sandbox,
    size: Sizes,
    label: str,
    agent_s: float,
    check_s: float,
    problems: list[str],
    review_s: float = 0.0,
) -> dict:
    """`size.tasks` independent tasks whose agents work `agent_s`, each with `**Verify:** sleep
    check_s` (none if 0) and a review taking `review_s` (none if 0), at `doit -n size.workers`."""
    root = bench.new_repo(sb, f"par-{label}", hive=False)
    log_dir = sb.dir / "checks" / label
    hive_repo(sb, root, size.workers, log_dir, review_s)
    ids = [f"t{i:02d}" for i in range(1, size.tasks + 1)]
    desc = f"Work, then write a file.\n\nbench-sleep: {agent_s:g}"
    check = {"Verify": verify(log_dir, ("sleep", f"{check_s:g}"))} if check_s else {}
    tasks: list[PlanTask] = [(t, f"Task {t}", [], desc) for t in ids]
    bench.write_plan(root, "par", f"{size.tasks} independent tasks", tasks, dict.fromkeys(ids, check))
    bench.commit_all(sb, root, "bench: plan and Hive config")
    t0 = time.time()
    wall, r, load = run_hive(sb, root, size.workers)
    keys = [f"par:{t}" for t in ids]
    return {
        "agent_s": agent_s,
        "verify_sleep_s": check_s or None,
        "review_s": review_s or None,
        "makespan_s": round(wall, 3),
        **load,
        "check": bench.check_hive_run(sb, root, "par", keys, r, problems, f"parallel {label}"),
        **phases(root, keys, t0),
        **({"check_times": check_times(log_dir)} if check_s else {}),
    }


# -- measurements 2 and 3: history replay ------------------------------------------------------------
def replay_plan(
    commits: list[Commit], failing: set[int], log_dir: Path
) -> tuple[list[PlanTask], dict[str, dict[str, str]]]:
    """The window as plan tasks (id, title, dependencies, description) and their Verify fields."""
    tasks: list[PlanTask] = []
    fields = {}
    for n, (c, deps) in enumerate(zip(commits[1:], dependencies(commits), strict=True), 1):
        tid = task_id(n)
        desc = f"Apply upstream commit {c.upstream[:10]} ({UPSTREAM}).\n\nbench-apply: {c.sha}"
        if n in failing:
            desc += f"\nbench-fail-test: tests/test_bench_fails_{tid}.py"
        title = " ".join(c.subject.split())[:70] or f"commit {c.upstream[:10]}"
        tasks.append((tid, title, [task_id(d) for d in deps], desc))
        fields[tid] = {"Verify": verify(log_dir, TESTS)}
    return tasks, fields


def blocked_by(commits: list[Commit], failing: set[int]) -> set[int]:
    """The positions that depend, directly or not, on a failing one, and so never run (a task made
    to fail too, when one before it fails: it never gets to its check)."""
    out: set[int] = set()
    for n, deps in enumerate(dependencies(commits), 1):
        if any(d in failing or d in out for d in deps):
            out.add(n)
    return out


def by_hand(sb: bench.Sandbox, bundle: Path, name: str, size: Sizes, keep: list[int], problems: list[str]) -> dict:
    """What a person does without Hive: cherry-pick the commits at positions `keep` one after
    another onto the base, the tests after each. Wall time, each test run, and the final tree."""
    root = sb.dir / name
    commits = checkout_history(sb, root, bundle, size.window)
    t0 = time.perf_counter()
    steps = []
    for n in keep:
        t = time.perf_counter()
        pick = sb.run(["git", "cherry-pick", commits[n].sha], root, check=False)
        tests = sb.run(list(TESTS), root, check=False) if pick.returncode == 0 else pick
        steps.append({"position": n, "s": round(time.perf_counter() - t, 3), "tests_exit": tests.returncode})
        if pick.returncode or tests.returncode:
            what = "cherry-pick" if pick.returncode else "tests"
            problems.append(f"{name}: {what} failed after {commits[n].upstream[:10]}: {tests.stdout[-600:]}")
            break
    wall = time.perf_counter() - t0
    head = bench.git(sb, root, "rev-parse", "HEAD")
    return {"wall_s": round(wall, 3), "commits": len(keep), "steps": steps, "final_commit": head}


def no_hive(sb: bench.Sandbox, repo: Path, runs: int, at_once: int, hand_s: float, problems: list[str]) -> dict:
    """What the machine alone allows: the test suite `runs` times, `at_once` at a time (each in
    its own checkout of `repo`'s HEAD, as Hive's workers have theirs), without Hive, against the
    by-hand time. Hive's run cannot be faster than this; what it takes beyond it is Hive's."""
    checkouts = [repo.with_name(f"{repo.name}-no-hive-{i}") for i in range(at_once)]
    for c in checkouts:
        bench.git(sb, repo, "worktree", "add", "-q", "--detach", str(c), "HEAD")
    free = list(checkouts)

    def one(_: int) -> int:
        where = free.pop()  # list.pop and append are atomic: each thread holds its own checkout
        try:
            return sb.run(list(TESTS), where, check=False).returncode
        finally:
            free.append(where)

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(at_once) as pool:
        codes = list(pool.map(one, range(runs)))
    wall = time.perf_counter() - t0
    if any(codes):
        problems.append(f"no Hive: the tests failed in {sum(1 for c in codes if c)} of {runs} runs")
    return {"runs": runs, "at_once": at_once, "wall_s": round(wall, 3), "ratio": round(wall / hand_s, 3)}


def project_files(sb: bench.Sandbox, root: Path, rev: str, leave_out: set[str]) -> dict[str, str]:
    """path → (mode, blob) of every file of `rev`, less `leave_out` (what the bench added)."""
    out = {}
    for entry in bench.git(sb, root, "ls-tree", "-r", "-z", rev).split("\0"):
        if entry:
            meta, path = entry.split("\t", 1)
            if path not in leave_out:
                out[path] = meta
    return out


def tree_differences(sb: bench.Sandbox, a: tuple[Path, str], b: tuple[Path, str], leave_out: set[str]) -> list[str]:
    """Each path where the trees of `a` and `b` (repo, revision) differ, and how."""
    fa, fb = project_files(sb, *a, leave_out), project_files(sb, *b, leave_out)
    diff = []
    for path in sorted(fa.keys() | fb.keys()):
        if fa.get(path) != fb.get(path):
            how = "missing on main" if path not in fa else "not upstream" if path not in fb else "differs"
            diff.append(f"{path}: {how}")
    return diff


def repeated(run: Callable[[str], dict], repeat: int) -> dict:
    """`run` `repeat` times (each in its own folders: its argument is their suffix); the run whose
    ratio is the median, with every ratio. This machine's CPU speed drifts by ±20 % from one
    minute to the next (a fixed loop takes 1.2–1.8 s): one pair of runs is no figure."""
    runs = [run(f"-{i}" if i else "") for i in range(repeat)]
    ranked = sorted(runs, key=lambda r: r["ratio"])
    return {
        **ranked[(len(ranked) - 1) // 2],
        "ratios": [r["ratio"] for r in runs],
        "no_hive_ratios": [r["no_hive"]["ratio"] for r in runs if r.get("no_hive")],
        "complete": all(r["complete"] for r in runs),
    }


def bench_replay(
    sb: bench.Sandbox, bundle: Path, size: Sizes, failing_every: int | None, problems: list[str], suffix: str = ""
) -> dict:
    """The window replayed by Hive at `doit -n replay_workers` (every `failing_every`th task made
    to fail its check, if given), then by hand; makespan against the hand's time, trees compared.
    `suffix`: of this run's folders, to repeat it in one sandbox."""
    name = "failing" if failing_every else "replay"
    first = len(problems)
    root = sb.dir / f"{name}{suffix}"
    commits = checkout_history(sb, root, bundle, size.window)
    n_tasks = len(commits) - 1
    failing = set(range(failing_every, n_tasks + 1, failing_every)) if failing_every else set()
    blocked = blocked_by(commits, failing)
    merging = [n for n in range(1, n_tasks + 1) if n not in failing and n not in blocked]
    log_dir = sb.dir / "checks" / f"{name}{suffix}"
    hive_repo(sb, root, size.replay_workers, log_dir)
    tasks, fields = replay_plan(commits, failing, log_dir)
    bench.write_plan(root, name, f"Replay of {n_tasks} cachetools commits", tasks, fields)
    bench.commit_all(sb, root, "bench: replay plan and Hive config")
    added = set(bench.git(sb, root, "diff-tree", "--no-commit-id", "--name-only", "-r", "-z", "HEAD").split("\0")) - {
        ""
    }
    if any(set(c.files) & added for c in commits):
        raise bench.BenchError(f"the window touches files the bench adds ({sorted(added)}): trees cannot be compared")
    t0 = time.time()
    wall, r, load = run_hive(sb, root, size.replay_workers)
    keys = [f"{name}:{task_id(n)}" for n in range(1, n_tasks + 1)]
    out = {
        "repository": UPSTREAM,
        "window": [c.upstream for c in commits[1:]],
        "base": commits[0].upstream,
        "dependencies": {t[0]: t[2] for t in tasks},
        "critical_path_tasks": bench.critical_path_tasks(tasks),
        "workers": size.replay_workers,
        "makespan_s": round(wall, 3),
        **load,
    }
    if failing:
        out["outcome"] = failing_outcome(sb, root, name, keys, r, failing, blocked, problems)
    else:
        out["check"] = bench.check_hive_run(sb, root, name, keys, r, problems, "replay")
    out.update(phases(root, keys, t0))
    out["check_times"] = check_times(log_dir)
    hand_dir = f"{name}{suffix}-by-hand"
    hand = by_hand(sb, bundle, hand_dir, size, merging, problems)
    out["by_hand"] = hand
    out["ratio"] = round(wall / hand["wall_s"], 3)
    out["no_hive"] = no_hive(sb, sb.dir / hand_dir, len(merging), size.replay_workers, hand["wall_s"], problems)
    if failing:  # upstream less the commits that did not merge: what by hand made of the others
        expected, against = (sb.dir / hand_dir, hand["final_commit"]), "the by-hand tree of the tasks merged"
    else:
        expected, against = (root, commits[-1].sha), "upstream's tree at the window's end"
        if bench.git(sb, sb.dir / hand_dir, "rev-parse", f"{hand['final_commit']}^{{tree}}") != commits[-1].tree:
            problems.append(f"{name}: by hand did not end on upstream's tree {commits[-1].tree}")
    out["tree_differences"] = tree_differences(sb, (root, "main"), expected, added)
    out["tree_compared_with"] = against
    for d in out["tree_differences"]:
        problems.append(f"{name}: main's final tree: {d}")
    out["complete"] = len(problems) == first  # no problem in the run, by hand or in the trees: the ratio stands
    return out


# a task's state after a run with failures: merged, failed by its check, or never started
KINDS = {"done": "merged", "failed": "failed", "planned": "not_run"}


def failing_outcome(
    sb: bench.Sandbox,
    root: Path,
    plan: str,
    keys: list[str],
    r: subprocess.CompletedProcess,
    failing: set[int],
    blocked: set[int],
    problems: list[str],
) -> dict:
    """Which tasks merged, failed and never ran, against what the plan makes them: every task made to
    fail is `failed` by its Verify, those after one never run, every other one is done, one merge each;
    nothing left but the failed tasks' worktrees."""
    st = bench.states(root, plan)
    why = bench.reasons(root, plan)
    by: dict[str, list[str]] = {"merged": [], "failed": [], "not_run": [], "other": []}
    for n, key in enumerate(keys, 1):
        state = st.get(key, "planned")
        kind = KINDS.get(state, "other")
        by[kind].append(key)
        expected = "not_run" if n in blocked else "failed" if n in failing else "merged"
        if kind != expected:
            problems.append(f"failing: {key} is {state}, expected {expected}: {why.get(key, '')[:600]}")
        elif kind == "failed" and "Verify failed" not in why.get(key, ""):
            problems.append(f"failing: {key} failed, but not by its Verify: {why.get(key, '')[:600]}")
    merges = int(bench.git(sb, root, "rev-list", "--count", "--merges", "main"))
    if merges != len(by["merged"]):
        problems.append(f"failing: {merges} merge commits on main for {len(by['merged'])} merged tasks")
    sessions = sb.tmux_sessions()
    if sessions:
        problems.append(f"failing: tmux sessions left after the run: {sessions}")
    log = root / ".hive" / "hive.log"
    if log.exists():
        problems.append(f"failing: .hive/hive.log (internal errors) exists:\n{log.read_text()[-1500:]}")
    worktrees = len(bench.task_worktrees(sb, root))
    if worktrees > len(by["failed"]):  # a failed task keeps its worktree (its commits), no other one
        problems.append(f"failing: {worktrees} worktrees left for {len(by['failed'])} failed tasks")
    return {
        "exit_code": r.returncode,
        **by,
        "expected_failed": sorted(keys[n - 1] for n in failing - blocked),
        "expected_not_run": sorted(keys[n - 1] for n in blocked),
        "merges_on_main": merges,
        "worktrees_left": worktrees,
        "failed_reasons": {k: why.get(k, "")[:300] for k in by["failed"]},
    }


# -- report -------------------------------------------------------------------------------------------
Row = tuple[str, str, str, str]


# -- measurement 4: reviews ------------------------------------------------------------------------
def bench_review(sb: bench.Sandbox, size: Sizes, problems: list[str]) -> dict:
    """A check and a review of the same length as one check twice as long: the makespans' ratio (a
    review runs off the merge lock like a check, in its check slot, beside the others)."""
    first = len(problems)
    reviewed = parallel_run(sb, size, "reviewed", size.agent_s, size.check_s, problems, review_s=size.check_s)
    longer = parallel_run(sb, size, "longer_verify", size.agent_s, 2 * size.check_s, problems)
    reviews = [e for e in bench.events(sb.dir / "par-reviewed") if e.get("event") == "reviewed"]
    if len(reviews) != size.tasks:
        problems.append(f"review: {len(reviews)} reviews recorded for {size.tasks} tasks")
    return {
        "tasks": size.tasks,
        "workers": size.workers,
        "reviewed": reviewed,
        "longer_verify": longer,
        "reviews": len(reviews),
        "ratio": round(reviewed["makespan_s"] / longer["makespan_s"], 3),
        "complete": len(problems) == first,
    }


def review_rows(p: dict) -> list[Row]:
    a, b = p["reviewed"], p["longer_verify"]
    what = f"Verify {a['verify_sleep_s']:g} s + review {a['review_s']:g} s / Verify {b['verify_sleep_s']:g} s"
    return [ratio_row("4.", "review", p, a, b, what)]


def ratio_row(n: str, target: str, p: dict, a: dict, b: dict, what: str) -> Row:
    """Two runs' makespans, their ratio against its target."""
    return (
        f"{n} {p['tasks']} tasks -n {p['workers']}: {what}",
        f"{a['makespan_s']:.1f} / {b['makespan_s']:.1f} s = {p['ratio']:.2f}x" + incomplete(p),
        f"<= {TARGETS[target]}x",
        bench.verdict(p["ratio"] <= TARGETS[target] and p["complete"]),
    )


def table(results: dict) -> list[Row]:
    rows = parallel_rows(results["parallel"]) if results.get("parallel") else []
    for name in ("replay", "failing"):
        if results.get(name):
            rows += replay_rows(name, results[name])
    if results.get("review"):
        rows += review_rows(results["review"])
    for name, err in results.get("errors", {}).items():
        rows.append((f"{name}: did not complete", err.splitlines()[0][:60], "-", "FAIL"))
    return rows


def parallel_rows(p: dict) -> list[Row]:
    a, b = p["with_verify"], p["agent_only"]
    what = f"{a['agent_s']:g} s + Verify sleep {a['verify_sleep_s']:g} / {b['agent_s']:g} s, no Verify"
    return [
        ratio_row("1.", "parallel", p, a, b, what),
        checks_row("1.", a["check_times"]),
        start_cost_row("1.", a, b),
    ]


def replay_rows(name: str, x: dict) -> list[Row]:
    n, hand = ("2.", "") if name == "replay" else ("3.", ", 1 in 4 failing")
    h = x["by_hand"]
    rows = [
        (
            f"{n} replay{hand}: {len(x['window'])} commits -n {x['workers']} / {h['commits']} by hand",
            f"{x['makespan_s']:.1f} / {h['wall_s']:.1f} s = {x['ratio']:.2f}x" + runs_of(x) + incomplete(x),
            f"<= {TARGETS[name]}x",
            bench.verdict(x["ratio"] <= TARGETS[name] and x["complete"]),
        )
    ]
    if name == "failing":
        o = x["outcome"]
        got = f"{len(o['merged'])} / {len(o['failed'])} / {len(o['not_run'])}"
        failed, not_run = len(o["expected_failed"]), len(o["expected_not_run"])
        want = f"{len(x['window']) - failed - not_run} / {failed} / {not_run}"
        rows.append((f"{n}   merged / failed / never ran", got, want, bench.verdict(got == want)))
    diffs = x["tree_differences"]
    same = "equal" if not diffs else f"{len(diffs)} path(s) differ"
    upstream = "upstream" if name == "replay" else "upstream less the failed"
    rows.append((f"{n}   main's final tree = {upstream}", same, "equal", bench.verdict(not diffs)))
    return [*rows, *no_hive_row(n, x), checks_row(n, x["check_times"]), start_cost_row(n, x)]


def no_hive_row(n: str, x: dict) -> list[Row]:
    """The machine's own bound beside Hive's figure (older results have none)."""
    f = x.get("no_hive")
    if not f:
        return []
    what = f"{n}   no Hive: the {f['runs']} test runs {f['at_once']} at a time"
    floors = x.get("no_hive_ratios", [])
    if len(floors) > 1:  # repeated: the median of every run's, as Hive's figure is
        listed = ", ".join(f"{r:.2f}" for r in floors)
        return [(what, f"{statistics.median(floors):.2f}x by hand (median of {listed})", "-", "info")]
    return [(what, f"{f['wall_s']:.1f} s = {f['ratio']:.2f}x by hand", "-", "info")]


def runs_of(x: dict) -> str:
    """A repeated figure: the median of its runs' ratios, each listed."""
    ratios = x.get("ratios", [])
    return f" (median of {', '.join(f'{r:.2f}' for r in ratios)})" if len(ratios) > 1 else ""


def incomplete(x: dict) -> str:
    """A ratio of a run with problems is no figure: it fails whatever its value."""
    return "" if x["complete"] else " (run incomplete)"


def checks_row(n: str, ct: dict) -> Row:
    return (f"{n}   checks at once (most) / median check", f"{ct['max_at_once']} / {ct['median_s']} s", "-", "info")


def start_cost_row(n: str, *runs: dict) -> Row:
    medians = " / ".join(f"{r['start_cost_median_s']:.2f}" for r in runs if r["start_cost_median_s"] is not None)
    return (f"{n}   start cost claim -> spawned, median", f"{medians} s", "-", "info")


def load(avg: tuple[float, ...] | None) -> str:
    return "/".join(f"{x:.2f}" for x in avg) if avg else "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="8 tasks at -n 4 (1 s + 1.5 s), an 8-commit window")
    ap.add_argument("--only", default="parallel,replay,failing,review", help="which measurements, comma-separated")
    ap.add_argument("--out", default=str(BENCH / "results" / "merge_queue.json"), help="where to write the raw JSON")
    ap.add_argument("--keep", action="store_true", help="keep the scratch repos (their path is printed)")
    ap.add_argument(
        "--history", type=Path, default=BUNDLE, help=f"the replayed history: a bundle, or a clone of {UPSTREAM}"
    )
    ap.add_argument(
        "--make-bundle", action="store_true", help=f"write {BUNDLE.relative_to(BENCH.parent)} from --history (a clone)"
    )
    ap.add_argument(
        "--repeat", type=int, default=3, help="run each replay this many times; its figure is the median (default 3)"
    )
    ap.add_argument("--batch", type=int, default=1, help="[merge] batch = N in every repo (default 1: no batches)")
    ap.add_argument(
        "--max-checks", type=int, default=0, help="[merge] max_checks = N in every repo (default: one per worker)"
    )
    args = ap.parse_args()
    global merge_batch, merge_max_checks
    merge_batch, merge_max_checks = args.batch, args.max_checks
    only = set(args.only.split(","))
    if only - set(TARGETS):
        ap.error(f"--only: unknown {sorted(only - set(TARGETS))}; choose from {sorted(TARGETS)}")
    size = QUICK if args.quick else FULL

    started = time.perf_counter()
    sb = bench.Sandbox()
    if args.make_bundle:
        try:
            make_bundle(sb, args.history, BUNDLE)
        finally:
            shutil.rmtree(sb.dir, ignore_errors=True)
        print(f"wrote {BUNDLE} ({BUNDLE.stat().st_size} bytes)")
        return 0
    results: dict = {
        "quick": args.quick,
        "sizes": dataclasses.asdict(size),
        "targets": TARGETS,
        "sandbox": bench.sandbox_mode or "default ([sandbox] mode = auto)",
        "merge_batch": merge_batch,
        "merge_max_checks": merge_max_checks or "default",
        "errors": {},
        "problems": [],
    }
    problems: list[str] = results["problems"]
    print(f"bench: scratch dir {sb.dir}, tmux socket {sb.socket}", file=sys.stderr)
    try:
        results["machine"] = bench.machine_info(sb)
        sb.precompile(bench.HIVE_SRC)
        bundle = functools.cache(lambda: history_bundle(sb, args.history))  # made once, if at all
        steps = {
            "parallel": lambda: bench_parallel(sb, size, problems),
            "replay": lambda: repeated(lambda s: bench_replay(sb, bundle(), size, None, problems, s), args.repeat),
            "failing": lambda: repeated(
                lambda s: bench_replay(sb, bundle(), size, FAIL_EVERY, problems, s), args.repeat
            ),
            "review": lambda: bench_review(sb, size, problems),
        }
        for name in (n for n in steps if n in only):
            print(f"bench: {name} ...", file=sys.stderr, flush=True)
            t = time.perf_counter()
            try:
                results[name] = steps[name]()
            except (bench.BenchError, subprocess.CalledProcessError) as e:
                results["errors"][name] = str(e)
                problems.append(f"{name}: {e}")
            print(f"bench: {name} took {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    finally:
        results["cleanup"] = sb.close(args.keep, problems)
    results["bench_wall_s"] = round(time.perf_counter() - started, 2)
    results["loadavg_end"] = os.getloadavg()

    bench.save(Path(args.out), results)
    rows = table(results)
    bench.print_table(rows)
    m = results.get("machine", {})
    print(
        f"Hive {str(m.get('hive_commit'))[:10]}{' (+ uncommitted changes)' if m.get('hive_dirty') else ''}; "
        f"{m.get('cpu_count')} CPUs, load {load(m.get('loadavg'))} at the start, {load(results['loadavg_end'])} "
        "at the end; "
        f"benchmark took {results['bench_wall_s']:.0f} s" + ("; --quick" if args.quick else "")
    )
    bench.print_problems(problems, args.out, sb.dir if args.keep else None)
    return 1 if results["errors"] or problems or any(r[3] == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
