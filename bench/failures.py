"""Time to a clear failure, per failure class, through `doit` with the real agent CLIs
(installed on first use by tests/clis.py) against the tests' scripted model server.

    .venv/bin/python bench/failures.py [--json results/failures.json] [--only claude]

Each case is a fresh repo with one task and `max_attempts = 1`; the time is `doit`'s
wall time from start to exit, and the case passes when the task ends as the class says
(permanent: `failed` and not retried, with the reason's words) within the target:
10 s for not found, root refusal, not logged in and bad key; 60 s for an unreachable API.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent / "tests"), str(BENCH.parent / "tests" / "real_cli")]

import run as bench  # noqa: E402 — bench/run.py: Sandbox, new_repo
from cli_setup import MODEL, cli_env  # type: ignore[import-not-found]  # noqa: E402 — tests/real_cli
from clis import cli_bin_dir  # noqa: E402 — tests/
from model_server import ModelServer  # noqa: E402 — tests/

CONFIG = """\
[agent]
default = "{profile}"

[execution]
spawn_grace_period = "60s"
task_timeout = "5m"
max_attempts = 1

[merge]
main_branch = "main"
"""

PLAN = """---
status: approved
---
# Failures

## Tasks

### Task 1: Login page
model> write: login.html :: <h1>Please log in</h1>
model> run: hive done
"""


@dataclass(frozen=True)
class Case:
    cls: str  # the failure class
    profile: str
    target: float  # seconds
    expect: str  # words the outcome must contain (stderr of doit, or the task's reason)


CASES = [
    Case("not found", "claude", 10, "is not on PATH"),
    Case("not found", "codex", 10, "is not on PATH"),
    Case("root refusal", "claude", 10, "IS_SANDBOX"),
    Case("not logged in", "claude", 10, "not logged in"),
    Case("not logged in", "codex", 10, "not logged in"),
    Case("not logged in", "gemini", 10, "not logged in"),
    Case("not logged in", "aider", 10, "not logged in"),
    Case("bad key", "claude", 10, "API key is invalid"),
    Case("bad key", "codex", 10, "API key is invalid"),
    Case("bad key", "gemini", 10, "API key is invalid"),
    Case("bad key", "aider", 10, "API key is invalid"),
    Case("unreachable", "claude", 60, "unreachable"),
    Case("unreachable", "codex", 60, "unreachable"),
    Case("unreachable", "gemini", 60, "unreachable"),
    Case("unreachable", "aider", 60, "unreachable"),
]


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def run_case(sb: bench.Sandbox, case: Case, n: int) -> dict:
    root = bench.new_repo(sb, f"r{n}")
    (root / ".hive" / "config.toml").write_text(CONFIG.format(profile=case.profile))
    (root / "plans" / "f.md").write_text(PLAN)
    home = sb.dir / f"home{n}"
    with ModelServer(api_key="right-key") as server:
        target = closed_port() if case.cls == "unreachable" else server
        key = {"bad key": "wrong-key", "not logged in": ""}.get(case.cls)
        env = cli_env(case.profile, target, home, api_key=key, codex_model=MODEL if case.profile == "codex" else None)
        env["HOME"] = str(home)
        if case.cls == "root refusal":
            env.pop("IS_SANDBOX", None)
        saved = dict(sb.env)
        sb.env.update(env)
        if case.cls == "root refusal":
            sb.env.pop("IS_SANDBOX", None)
        if case.cls != "not found":
            sb.env["PATH"] = f"{saved['PATH']}{os.pathsep}{cli_bin_dir(case.profile)}"
        try:
            took, r = sb.timed([bench.PY, "-m", "doit"], root, check=False)
        finally:
            sb.env = saved
            sb.kill_tmux()
    state_file = root / ".hive" / "state" / "f" / "1.json"
    st = json.loads(state_file.read_text()) if state_file.exists() else {"state": "planned", "reason": ""}
    said = f"{r.stderr}\n{st.get('reason', '')}"
    ok = r.returncode != 0 and case.expect.lower() in said.lower() and int(st.get("attempt", 0)) <= 1
    return {
        "class": case.cls,
        "profile": case.profile,
        "seconds": round(took, 2),
        "target": case.target,
        "ok": ok and took <= case.target,
        "state": st["state"],
        "reason": (st.get("reason") or r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "")[:200],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--only", help="only this profile")
    args = parser.parse_args()
    sb = bench.Sandbox()
    rows = []
    try:
        for n, case in enumerate(c for c in CASES if not args.only or c.profile == args.only):
            row = run_case(sb, case, n)
            rows.append(row)
            mark = "ok " if row["ok"] else "BAD"
            timing = f"{row['seconds']:6.1f}s (≤{row['target']:g}s)"
            print(f"{mark} {row['class']:<14} {row['profile']:<7} {timing}  {row['reason']}")
    finally:
        sb.kill_tmux()
    if args.json:
        args.json.write_text(json.dumps({"when": time.strftime("%Y-%m-%d %H:%M"), "cases": rows}, indent=1) + "\n")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
