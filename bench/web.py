#!/usr/bin/env python3
"""`hive web` (issue 26): the dashboard of a 1,000-task plan, and what the server costs idle.

    .venv/bin/python bench/web.py [--tasks 1000] [--idle 60] [--out bench/results/web.json] [--keep]

In a scratch repo (bench/run.py's Sandbox: a temp dir, a private $HOME and tmux socket), an
approved plan of --tasks tasks in a random DAG, with states as a long run leaves them: most done
(with their attempts, tokens and cost), some failed, blocked or awaiting an answer, the rest
planned. Then `hive web --port 0` as a real subprocess, and:

- first page: GET / on the fresh server, the whole page read (target ≤ 1 s), then the median of 5;
- idle CPU: the server's own CPU time (user + system, from /proc) over --idle seconds with no page
  open, then again with one page's event stream open and nothing changing (target ≤ 1 % each);
- change to page: with the stream open, a blocked task re-opened (as `hive retry` does), to the
  first event on the stream after it (target ≤ 1 s), 5 times.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import run as bench  # noqa: E402 — bench/run.py: Sandbox, new_repo, write_plan

from hive.actions.retry import retry  # noqa: E402
from hive.lifecycle import State  # noqa: E402
from hive.project import load_project  # noqa: E402
from hive.store.files import atomic_write  # noqa: E402
from hive.store.paths import Paths  # noqa: E402
from hive.store.state import HistoryEntry, TaskState  # noqa: E402

CHANGES = 5
TICK = os.sysconf("SC_CLK_TCK")


def plan_tasks(n: int, rng: random.Random) -> list[tuple[str, str, list[str], str]]:
    """A DAG as plans have them: most tasks depend on one to three of the fifty before them."""
    tasks = []
    for i in range(1, n + 1):
        deps = sorted({rng.randint(max(1, i - 50), i - 1) for _ in range(rng.randint(0, 3))}) if i > 1 else []
        tasks.append((f"t{i}", f"Task number {i} of the big plan", [f"t{d}" for d in deps], f"Work item {i}."))
    return tasks


def write_states(root: Path, rng: random.Random) -> list[str]:
    """States as a long run leaves them; returns the blocked tasks' ids."""
    project = load_project(root)
    paths = Paths(root)
    blocked = []
    now = time.time()
    for plan in project.plans.plans:
        for i, t in enumerate(plan.tasks):
            share, started = i / len(plan.tasks), now - 3600 + i * 3
            if share < 0.6:
                state, reason = State.DONE, ""
            elif share < 0.63:
                state = rng.choice([State.FAILED, State.BLOCKED, State.AWAITING_HUMAN])
                reason = f"{state}: needs a look"
            else:
                continue
            st = TaskState(
                plan.name,
                t.id,
                state=state,
                attempt=1,
                attempts_used=1,
                task_hash=t.text_hash,
                reason=reason,
                merge_commit="0" * 40 if state == State.DONE else "",
                files=(f"f{i}.py",) if state == State.DONE else (),
                updated_at=started + 40,
                history=(attempt(i, started, state, reason),),
            )
            atomic_write(paths.state_file(plan.name, t.id), st.to_json())
            if state == State.BLOCKED:
                blocked.append(t.id)
    return blocked


def attempt(i: int, started: float, outcome: str, reason: str) -> HistoryEntry:
    used = {"tokens_in": 20_000 + i, "tokens_out": 3000, "cost_usd": 0.05, "cost_from": "cli"}
    return {"attempt": 1, "worker": f"w{i % 4 + 1}", "started_at": started, "finished_at": started + 40,
            "outcome": outcome, "reason": reason, "usage": used}  # fmt: skip


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far, its waited-for children's too (tmux calls while drawing)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / TICK


def idle_share(pid: int, seconds: float) -> float:
    before, began = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / (time.monotonic() - began)


class Stream:
    """A page's event stream, read in a thread: when each event arrived."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.conn.request("GET", "/events", headers={"Host": f"127.0.0.1:{port}"})
        self.response = self.conn.getresponse()
        self.events: list[tuple[float, str]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for raw in self.response:
                line = raw.decode(errors="replace")
                if line.startswith("event:"):
                    self.events.append((time.time(), line.split(":", 1)[1].strip()))
        except (OSError, ValueError, http.client.HTTPException):
            pass  # the stream was shut at the end

    def quiet(self, seconds: float = 1.5, timeout: float = 30) -> None:
        """Until no event came for `seconds` (the first sections sent)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = self.events[-1][0] if self.events else 0.0
            if self.events and time.time() - last >= seconds:
                return
            time.sleep(0.1)
        raise bench.BenchError("the event stream never went quiet")

    def first_after(self, moment: float, timeout: float = 10) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            later = [at for at, _ in self.events if at >= moment]
            if later:
                return later[0]
            time.sleep(0.005)
        raise bench.BenchError(f"no event within {timeout}s of a change")

    def close(self) -> None:
        if self.conn.sock is not None:
            self.conn.sock.shutdown(socket.SHUT_RDWR)  # the reading thread sees the end, then ends
        self.thread.join(timeout=10)
        self.conn.close()


def get(port: int, path: str) -> tuple[float, int, int]:
    """Seconds to the whole response, its status and size."""
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return time.perf_counter() - began, r.status, len(body)


def start(sb: bench.Sandbox, root: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [bench.PY, "-m", "hive", "web", "--port", "0"],
        cwd=root,
        env=sb.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    line = proc.stdout.readline() if ready else ""
    if "the dashboard is at http://127.0.0.1:" not in line:
        os.killpg(proc.pid, signal.SIGKILL)
        raise bench.BenchError(f"hive web did not start: {line!r}")
    return proc, int(line.split("127.0.0.1:")[1].split("/")[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--idle", type=float, default=60.0, help="seconds of each idle measurement")
    ap.add_argument("--out", type=Path, default=BENCH / "results" / "web.json")
    ap.add_argument("--keep", action="store_true", help="keep the scratch repo (its path is printed)")
    args = ap.parse_args()
    rng = random.Random(26)
    sb = bench.Sandbox()
    sb.precompile(bench.HIVE_SRC)
    root = bench.new_repo(sb, "web")
    bench.write_plan(root, "big", f"A plan of {args.tasks} tasks", plan_tasks(args.tasks, rng))
    bench.commit_all(sb, root, "bench: a big plan")
    sb.run([bench.PY, "-m", "doit", "list"], root)  # compiles the plan into its cache, as any run would
    blocked = write_states(root, rng)
    proc, port = start(sb, root)
    try:
        first, status, size = get(port, "/")
        if status != 200:
            raise bench.BenchError(f"GET / answered {status}")
        again = [get(port, "/")[0] for _ in range(5)]
        idle_closed = idle_share(proc.pid, args.idle)
        stream = Stream(port)
        stream.quiet()
        idle_open = idle_share(proc.pid, args.idle)
        latencies = []
        for task_id in blocked[:CHANGES]:
            stream.quiet(1.0)
            moment = time.time()
            retry(root, f"big:{task_id}")
            latencies.append(stream.first_after(moment) - moment)
        stream.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        sb.kill_tmux()
    if args.keep:
        print(f"scratch repo kept in {root}", file=sys.stderr)
    else:
        shutil.rmtree(sb.dir, ignore_errors=True)
    results = {
        "tasks": args.tasks,
        "first_page_s": round(first, 4),
        "page_bytes": size,
        "next_pages_s": [round(t, 4) for t in again],
        "idle_seconds": args.idle,
        "idle_cpu_no_page": round(idle_closed, 5),
        "idle_cpu_page_open": round(idle_open, 5),
        "change_to_page_s": [round(t, 4) for t in latencies],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    worst = max(latencies) if latencies else float("inf")
    rows = [
        (f"first page, {args.tasks} tasks ({size // 1024} kB)", f"{first:.3f} s", "≤ 1 s", first <= 1.0),
        ("next pages, median of 5", f"{statistics.median(again):.3f} s", "-", None),
        (f"server CPU idle {args.idle:.0f} s, no page open", f"{idle_closed:.3%}", "≤ 1 %", idle_closed <= 0.01),
        (f"server CPU idle {args.idle:.0f} s, a page open", f"{idle_open:.3%}", "≤ 1 %", idle_open <= 0.01),
        (
            f"state change to the page, {len(latencies)}×",
            f"median {statistics.median(latencies):.3f} s, max {worst:.3f} s",
            "≤ 1 s",
            worst <= 1.0,
        ),
    ]
    for name, value, target, ok in rows:
        print(f"{name:<42} {value:<34} {target:<6} {'' if ok is None else 'PASS' if ok else 'FAIL'}")
    return 0 if all(ok is not False for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
