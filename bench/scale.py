"""The controller at scale: a 10,000-task plan (`issues show 11`).

    .venv/bin/python bench/scale.py [--tasks 10000] [--rev HEAD] [--out results/scale.json]

- `doit list`, cold: the compiled-plan cache removed before each run (a plan edit);
- `doit list`, warm: the cache in place; against plain doit listing the same number of
  trivial tasks with the same dependency shape;
- the start-of-run reconcile of a run whose tasks are all done (state files written as
  a finished run leaves them, their merge commit on main), in-process, and `doit` itself
  on that repo (nothing to do).
Targets: cold ≤ 1.5 s, warm ≤ 1.5× plain doit, reconcile ≤ 1 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import run as bench  # noqa: E402 — bench/run.py: Sandbox, new_repo, write_plan, PLAIN_SCALE_DODO

REPEATS = 3

DONE_PROBE = """\
import json, sys, time
from pathlib import Path
from hive.project import load_project
from hive.store.state import TaskState
from hive.store.files import atomic_write
from hive.store.paths import Paths
from hive.adapters import git
root = Path(sys.argv[1])
project = load_project(root)
head = git.rev_parse(root, "refs/heads/main")
paths = Paths(root)
for plan in project.plans.plans:
    for t in plan.tasks:
        st = TaskState(plan.name, t.id, state="done", attempt=1, attempts_used=1, task_hash=t.text_hash,
                       updated_at=time.time(),
                       merge_commit=head, branch=f"hive/{plan.name}-{t.id}-a1", reason="merged",
                       history=({"attempt": 1, "outcome": "done", "branch": f"hive/{plan.name}-{t.id}-a1"},))
        path = paths.state_file(plan.name, t.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(st.to_json())
"""

RECONCILE_PROBE = """\
import json, sys, time
from pathlib import Path
from hive.project import load_project
from hive.dodo.reconcile import start_run
project = load_project(Path(sys.argv[1]))
t0 = time.perf_counter()
notes, _ = start_run(project, [])
print(json.dumps({"reconcile_s": time.perf_counter() - t0, "notes": len(notes)}))
"""


def timed(
    sb: bench.Sandbox, argv: list[str], cwd: Path, before: Callable[[], object] | None = None
) -> tuple[float, list[float]]:
    runs = []
    for _ in range(REPEATS):
        if before:
            before()
        t, _r = sb.timed(argv, cwd)
        runs.append(round(t, 4))
    return statistics.median(runs), runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--rev", help="benchmark Hive as committed at this revision")
    ap.add_argument("--out", type=Path, default=BENCH / "results" / "scale.json")
    ap.add_argument("--keep", action="store_true", help="keep the scratch repos (their path is printed)")
    args = ap.parse_args()
    n = args.tasks
    sb = bench.Sandbox()
    under_test = sb.use_hive_rev(args.rev) if args.rev else {}
    root = bench.new_repo(sb, "scale")
    tasks = [
        (f"t{i:05d}", f"Scale task {i}", [f"t{i - 1:05d}"] if i % 10 == 0 else [], f"Task {i} of {n}.")
        for i in range(1, n + 1)
    ]
    bench.write_plan(root, "scale", f"Scale plan, {n} tasks", tasks)
    bench.commit_all(sb, root, "bench: scale plan")
    cache = root / ".hive" / "cache"
    cold, cold_runs = timed(sb, [bench.PY, "-m", "doit", "list"], root, lambda: shutil.rmtree(cache, True))
    warm, warm_runs = timed(sb, [bench.PY, "-m", "doit", "list"], root)
    plain = bench.new_repo(sb, "plain", hive=False)
    (plain / "dodo.py").write_text(bench.PLAIN_SCALE_DODO.format(n=n).replace(":04d", ":05d"))
    plain_list, plain_runs = timed(sb, [bench.PY, "-m", "doit", "list"], plain)
    done_probe, reconcile_probe = sb.dir / "done.py", sb.dir / "reconcile.py"
    done_probe.write_text(DONE_PROBE)
    reconcile_probe.write_text(RECONCILE_PROBE)
    sb.run([bench.PY, str(done_probe), str(root)], root)
    reconciles = [json.loads(sb.run([bench.PY, str(reconcile_probe), str(root)], root).stdout) for _ in range(REPEATS)]
    reconcile = statistics.median(r["reconcile_s"] for r in reconciles)
    all_done, all_done_runs = timed(sb, [bench.PY, "-m", "doit"], root)
    sb.kill_tmux()
    if args.keep:
        print(f"scratch repos kept in {sb.dir}", file=sys.stderr)
    else:
        shutil.rmtree(sb.dir, ignore_errors=True)
    results = {
        "tasks": n,
        "under_test": under_test,
        "cold_doit_list_s": cold,
        "cold_runs": cold_runs,
        "warm_doit_list_s": warm,
        "warm_runs": warm_runs,
        "plain_doit_list_s": plain_list,
        "plain_runs": plain_runs,
        "warm_ratio": round(warm / plain_list, 3),
        "reconcile_all_done_s": round(reconcile, 4),
        "reconcile_runs": reconciles,
        "doit_all_done_s": all_done,
        "doit_all_done_runs": all_done_runs,
    }
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    rows = [
        ("doit list, cold (plan cache removed)", f"{cold:.2f} s", "≤ 1.5 s", cold <= 1.5),
        (
            "doit list, warm",
            f"{warm:.2f} s = {warm / plain_list:.2f}× plain doit ({plain_list:.2f} s)",
            "≤ 1.5×",
            warm / plain_list <= 1.5,
        ),
        ("start-of-run reconcile, all done", f"{reconcile:.2f} s", "≤ 1 s", reconcile <= 1.0),
        ("doit, all done (nothing to run)", f"{all_done:.2f} s", "-", None),
    ]
    for name, value, target, ok in rows:
        print(f"{name:<40} {value:<40} {target:<8} {'' if ok is None else 'PASS' if ok else 'FAIL'}")
    return 0 if all(ok is not False for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
