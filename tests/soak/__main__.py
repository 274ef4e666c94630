"""Randomized fault-injection soak for Hive: trials of seeded plans and faults.

Run from the repository root (the package is `tests.soak` there):

    .venv/bin/python -m tests.soak --trials 20 [--seed 1] [--keep-failed]   # seeds 1..20
    .venv/bin/python -m tests.soak --replay 7 [--keep] [--trace-git]       # one trial, verbosely
    .venv/bin/python -m tests.soak --ray --trials 30                        # on a local Ray cluster
    .venv/bin/python -m tests.soak --replay 129 --local                     # a seed in local mode

A third of the seeds draw pull-request mode (a scripted forge, issue 45); `--pr` and `--local`
run every trial in one mode whatever its seed drew.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import time

from .ray import RaySoak
from .results import report, summary
from .trial import TrialMaker, run_trial


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=10, help="how many trials (default 10)")
    ap.add_argument("--seed", type=int, default=1, help="first seed (trials use seed, seed+1, ...)")
    ap.add_argument("--replay", type=int, metavar="SEED", help="run one trial verbosely")
    ap.add_argument("--keep", action="store_true", help="keep every trial's temp dir")
    ap.add_argument("--keep-failed", action="store_true", help="keep the temp dirs of failed trials")
    ap.add_argument("--trace-git", action="store_true", help="log every git command to <temp dir>/git-trace.log")
    ap.add_argument(
        "--ray", action="store_true", help="on the Ray executor: a local cluster of a head and 2 worker nodes"
    )
    sandbox = ap.add_mutually_exclusive_group()
    sandbox.add_argument(
        "--sandbox", action="store_const", const="on", dest="sandbox", help='[sandbox] mode = "on" (default: "auto")'
    )
    sandbox.add_argument(
        "--no-sandbox", action="store_const", const="off", dest="sandbox", help='[sandbox] mode = "off"'
    )
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--pr", action="store_const", const=True, dest="pr", help="every trial in pull-request mode")
    mode.add_argument("--local", action="store_const", const=False, dest="pr", help="every trial in local mode")
    args = ap.parse_args(argv)
    if args.sandbox == "on" and args.ray:
        ap.error("the Ray executor does not sandbox its agents yet: --sandbox or --ray, not both")
    seeds = [args.replay] if args.replay is not None else list(range(args.seed, args.seed + args.trials))
    t0 = time.monotonic()
    results = []
    with contextlib.ExitStack() as stack:
        on_ray: TrialMaker | None = None
        if args.ray:  # needs `pip install -e '.[ray]'` (ray.py itself imports Ray only when the cluster starts)
            on_ray = stack.enter_context(RaySoak()).trial
        for seed in seeds:
            res = run_trial(
                seed,
                verbose=args.replay is not None,
                keep=args.keep or args.keep_failed,
                trace_git=args.trace_git,
                on_ray=on_ray,
                sandbox=args.sandbox or "",
                pr=args.pr,
            )
            if res.passed and args.keep_failed and not args.keep:
                shutil.rmtree(res.dir, ignore_errors=True)
            report(res)
            results.append(res)
    print(summary(results, time.monotonic() - t0))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
