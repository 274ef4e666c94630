#!/usr/bin/env python3
"""A task's start cost against the size of the repository (issue 25's target: ≤ 0.3 s a task on
a 10,000-file repository, and within 1.5× of a 10-file one).

    .venv/bin/python bench/start_cost.py [--tasks 12] [--files 10,10000] [--out F.json] [--keep]

For each size, a scratch repository of that many tracked files (spread over folders of 100,
a few hundred bytes each) runs a plan of `--tasks` independent tasks one at a time (`doit`,
one worker) with bench/instant_agent.sh, as bench/run.py's serial run does. Measured from
`.hive/events.jsonl`, per task:

- start: its claim (→ in_progress) to its agent spawned — the checkout, brief and session;
- cleanup: its merge to the next task's claim — removing (or keeping) its checkout.

The first task of a worker has no checkout to reuse; the figures are the median of the tasks
after it, and the first is reported on its own. Run with `[worktrees] reuse` on (the default)
and off, so the table shows what reuse saves.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench

TARGET_S, TARGET_RATIO = 0.3, 1.5


def make_repo(sb: bench.Sandbox, name: str, files: int, reuse: bool) -> Path:
    root = bench.new_repo(sb, name, hive=False)
    for i in range(files):
        folder = root / "src" / f"d{i // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:05d}.py").write_text(f'"""Generated file {i}."""\n\nVALUE = {i}\n' + "# padding\n" * 20)
    bench.init_hive(sb, root, bench.hive_config({"max_workers": 1}) + f"\n[worktrees]\nreuse = {str(reuse).lower()}\n")
    return root


def measure(sb: bench.Sandbox, files: int, tasks: int, reuse: bool, problems: list[str]) -> dict:
    name = f"r{files}{'r' if reuse else 'f'}"
    root = make_repo(sb, name, files, reuse)
    ids = [f"t{i:02d}" for i in range(1, tasks + 1)]
    bench.write_plan(root, "start", "Start cost", [(t, f"Task {t}", [], f"Write a file for {t}.") for t in ids])
    bench.commit_all(sb, root, "bench: the plan and Hive's config")
    t0 = time.time()
    wall, r = sb.timed([bench.PY, "-m", "doit"], root, check=False)
    keys = [f"start:{t}" for t in ids]
    states = bench.states(root, "start")
    if r.returncode != 0 or any(states.get(k) != "done" for k in keys):
        problems.append(f"{name}: doit exited {r.returncode}; states {states}\n{r.stderr[-1500:]}")
    phases = bench.per_task_phases(bench.events(root), {}, keys)
    order = sorted((p for p in phases.values() if "claim" in p and "spawned" in p), key=lambda p: p["claim"])
    start = [round(p["spawned"] - p["claim"], 4) for p in order]
    cleanup = [round(b["claim"] - a["merged"], 4) for a, b in itertools.pairwise(order) if "merged" in a]
    return {
        "files": files,
        "reuse": reuse,
        "tasks": tasks,
        "wall_s": round(wall, 3),
        "since_t0_s": round(time.time() - t0, 3),
        "start_s": start,
        "first_start_s": start[0] if start else None,
        "start_median_s": round(statistics.median(start[1:]), 4) if len(start) > 1 else None,
        "cleanup_median_s": round(statistics.median(cleanup), 4) if cleanup else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--files", default="10,10000", help="repository sizes, comma-separated")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.files.split(",")]
    sb = bench.Sandbox()
    sb.precompile(bench.HIVE_SRC)
    problems: list[str] = []
    results: list[dict] = []
    try:
        for reuse in (True, False):
            for files in sizes:
                results.append(measure(sb, files, args.tasks, reuse, problems))
                print(json.dumps({k: v for k, v in results[-1].items() if k != "start_s"}), flush=True)
    finally:
        sb.close(args.keep, problems)
    print(f"\n{'files':>7} {'reuse':>6} {'first start':>12} {'start (median)':>15} {'cleanup (median)':>17}")
    for r in results:
        print(
            f"{r['files']:>7} {r['reuse']!s:>6} {r['first_start_s']:>11.3f}s "
            f"{r['start_median_s']:>14.3f}s {r['cleanup_median_s']:>16.3f}s"
        )
    verdicts = []
    for reuse in (True, False):
        by_size = {r["files"]: r["start_median_s"] for r in results if r["reuse"] == reuse}
        small, large = by_size.get(min(sizes)), by_size.get(max(sizes))
        if small and large:
            ok = large <= TARGET_S and large <= TARGET_RATIO * small
            verdicts.append(ok or not reuse)  # the targets are for the default (reuse on)
            print(
                f"reuse={reuse}: {max(sizes)} files {large:.3f}s (target ≤ {TARGET_S}s), "
                f"{large / small:.2f}× the {min(sizes)}-file start (target ≤ {TARGET_RATIO}×): "
                f"{'pass' if ok else 'miss'}"
            )
    for p in problems:
        print(f"problem: {p}")
    if args.out:
        args.out.write_text(json.dumps({"results": results, "problems": problems}, indent=1))
    return 0 if all(verdicts) and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
