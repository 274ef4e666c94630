#!/usr/bin/env python3
"""Issue 45's benchmark: what pull-request mode asks of the forge's API — the calls one PR costs
over a task's life, and the calls an hour costs with 50 PRs open — against the scripted forge of
the tests (tests/forge: every request counted; a 304 costs nothing of the rate limit, as on GitHub).

    .venv/bin/python bench/forge_calls.py [--out F.json] [--keep]

1. One PR's life: one task, its CI green, no approval needed: the calls from the push to the
   merge, split into those that count against the rate limit and the free 304s.
2. Open PRs while their CI runs: 4 tasks at `doit -n 4`, each PR's check running for 12 s, polled
   every 0.5 s: requests per PR per poll while nothing changes. From it, an hour with 50 open PRs at
   the default `[forge] poll = "30s"`: requests, and those that count, against GitHub's 5,000/h
   less Hive's 20 % headroom (4,000).

Scratch repos, a private $HOME and tmux server come from bench/run.py's Sandbox; Hive runs as
real `python -m doit` subprocesses with bench/instant_agent.sh as the agent.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

import run as bench  # noqa: E402  (bench/run.py)
from forge import Forge  # noqa: E402  (tests/forge)
from forge.ci import CI  # noqa: E402

TOKEN = "bench-token"
HOUR_BUDGET = 5000
HEADROOM = 0.2
DEFAULT_POLL = 30.0


def pr_repo(sb: bench.Sandbox, forge: Forge, name: str, poll: float) -> Path:
    root = bench.new_repo(sb, name)
    bench.git(sb, root, "remote", "add", "origin", str(forge.remote))
    bench.git(sb, root, "push", "-q", "origin", "main")
    config = bench.hive_config().replace("[merge]\n", '[merge]\nmode = "pr"\n', 1)
    config += (
        f'\n[forge]\napi_url = "{forge.url}"\nrepository = "{forge.owner}/{forge.repo}"\n'
        f'poll = "{poll}s"\napprovals = 0\n'
    )
    (root / ".hive" / "config.toml").write_text(config)
    sb.env["GH_TOKEN"] = TOKEN
    return root


def green(_read: object) -> tuple[str, str]:
    return "success", "all tests passed"


def by_endpoint(forge: Forge) -> dict[str, int]:
    return by_endpoint_of(forge.calls)


def by_endpoint_of(calls: list) -> dict[str, int]:
    counts: dict[str, int] = {}
    for call in calls:
        parts = call.path.split("/")
        shape = "/".join(p if not p.isdigit() and len(p) != 40 else "{n}" for p in parts)
        key = f"{call.method} {shape}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def one_life(sb: bench.Sandbox, problems: list[str]) -> dict:
    with Forge(sb.dir / "forge-life", token=TOKEN) as forge, CI(forge, green, takes=2.0):
        root = pr_repo(sb, forge, "life", poll=0.5)
        bench.write_plan(root, "p", "one PR", [("t1", "One change", [], "Change one thing.")])
        t0 = time.perf_counter()
        r = sb.run([bench.PY, "-m", "doit"], root, check=False)
        took = time.perf_counter() - t0
        if r.returncode != 0:
            problems.append(f"one PR's life: doit exited {r.returncode}: {r.stdout[-800:]}")
        forge.check()
        calls = len(forge.calls)
        return {
            "seconds": round(took, 2),
            "requests": calls,
            "billable": forge.api_calls,
            "not_modified": sum(c.not_modified for c in forge.calls),
            "by_endpoint": by_endpoint(forge),
        }


def open_prs(sb: bench.Sandbox, problems: list[str]) -> dict:
    n, poll, ci_takes = 4, 0.5, 12.0
    with Forge(sb.dir / "forge-open", token=TOKEN) as forge, CI(forge, green, takes=ci_takes):
        root = pr_repo(sb, forge, "open", poll=poll)
        tasks: list[tuple[str, str, list[str], str]] = [
            (f"t{i}", f"Change {i}", [], f"Change thing {i}.") for i in range(1, n + 1)
        ]
        bench.write_plan(root, "p", "open PRs", tasks)
        r = sb.run([bench.PY, "-m", "doit", "-n", str(n)], root, check=False)
        if r.returncode != 0:
            problems.append(f"open PRs: doit exited {r.returncode}: {r.stdout[-800:]}")
        forge.check()
        # the window in which every PR's check was running and nothing else happened
        checks = sorted(forge.checks.values(), key=lambda c: c.created_at)
        start = max(c.created_at for c in checks) + 1.0
        end = min(c.completed_at or 0.0 for c in checks) - 1.0
        quiet = [c for c in forge.calls if start <= c.at < end]
        span = max(end - start, 0.001)
        per_pr_poll = len(quiet) / (n * span / poll)
        billable_per_pr_poll = sum(c.billable for c in quiet) / (n * span / poll)
        polls_per_hour = 3600 / DEFAULT_POLL
        return {
            "prs": n,
            "poll_s": poll,
            "quiet_window_s": round(span, 2),
            "requests_in_window": len(quiet),
            "requests_per_pr_per_poll": round(per_pr_poll, 3),
            "billable_per_pr_per_poll": round(billable_per_pr_poll, 3),
            "hour_50_prs_requests": round(per_pr_poll * 50 * polls_per_hour),
            "hour_50_prs_billable": round(billable_per_pr_poll * 50 * polls_per_hour),
            "budget_after_headroom": int(HOUR_BUDGET * (1 - HEADROOM)),
            "window_by_endpoint": by_endpoint_of(quiet),
            "whole_run_requests": len(forge.calls),
            "whole_run_billable": forge.api_calls,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(HERE / "results" / "forge_calls.json"))
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    sb, problems = bench.Sandbox(), list[str]()
    sb.precompile(bench.HIVE_SRC)
    results: dict = {}
    try:
        results["one_pr_life"] = one_life(sb, problems)
        results["open_prs"] = open_prs(sb, problems)
    finally:
        results["cleanup"] = sb.close(args.keep, problems)
    results["problems"] = problems
    life, quiet = results["one_pr_life"], results["open_prs"]
    ok = quiet["hour_50_prs_billable"] <= quiet["budget_after_headroom"]
    print(f"one PR's life: {life['requests']} requests, {life['billable']} billable ({life['seconds']} s)")
    for endpoint, count in life["by_endpoint"].items():
        print(f"    {count:4d}  {endpoint}")
    print(
        f"open PRs, CI running: {quiet['requests_per_pr_per_poll']} requests per PR per poll "
        f"({quiet['billable_per_pr_per_poll']} billable)"
    )
    for endpoint, count in quiet["window_by_endpoint"].items():
        print(f"    {count:4d}  {endpoint}")
    print(
        f"an hour, 50 open PRs, poll 30 s: {quiet['hour_50_prs_requests']} requests, "
        f"{quiet['hour_50_prs_billable']} billable — budget {quiet['budget_after_headroom']}: "
        + ("pass" if ok else "FAIL")
    )
    for p in problems:
        print(f"problem: {p}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    return 0 if ok and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
