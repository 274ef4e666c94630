"""Record what each real CLI prints in each failure mode, into tests/fixtures/agent_streams/.

    .venv/bin/python tests/real_cli/record_streams.py [--only claude-normal,codex-bad_key ...] [--jobs 3]

Each run is the CLI's built-in profile command line (cli_setup.command), in a fresh git repo
under /tmp/hive-rec/<run>/ with its own $HOME, against a fresh ModelServer, given Hive's
prompt that points at a brief holding the script. Writes <run>.txt (stdout and stderr as
printed, together) and a table of exit status and wall time in README.md (merged with the
rows already there, so a partial re-run keeps the others).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from cli_setup import MODEL, cli_environ, command, run_cli  # noqa: E402
from conftest import GIT_ENV  # noqa: E402 — tests/conftest.py: the pinned git identity
from model_server import ModelServer  # noqa: E402

OUT = HERE.parent / "fixtures" / "agent_streams"
WORK = Path("/tmp/hive-rec")
KEY = "test-key"
BRIEF = """\
# Task plan:1 — Write hello

Write hello.txt and commit it.

- model> write: hello.txt :: hello\\nworld
- model> run: git add -A && git commit -qm "Add hello"
- model> run: hive done
- model> say: hello.txt written and committed
"""
HIVE_STUB = '#!/bin/sh\necho "hive (stub): $*"\n'


def hive_prompt(brief: Path, hive: Path) -> str:
    """Hive's prompt (hive.engine.brief.prompt), with the names of this recording."""
    return (
        f"You are working on task plan:1 (Write hello) in this git worktree. Read {brief} now: "
        "it is your complete brief. Do the task, commit with git, then run `hive done` (or "
        "`hive blocked --reason ...` / `hive failed --reason ...`); "
        f"if `hive` is not found, it is `{hive}`."
    )


@dataclass
class Mode:
    name: str
    about: str
    timeout: float = 60.0
    api_key: str | None = KEY  # what the CLI sends; "" none
    max_retries: int | None = None
    unreachable: bool = False
    setup: Callable[[ModelServer], None] = lambda s: None
    extra_args: list[str] = field(default_factory=list)
    json_events: bool = False  # codex exec --json
    env: dict[str, str] = field(default_factory=dict)
    codex_model: str | None = None


def _rate_limited(seconds: float, message: str | None = None, headers: dict[str, str] | None = None):
    def setup(s: ModelServer) -> None:
        s.rate_limited_until = time.time() + seconds
        s.rate_limit_message = message
        s.rate_limit_headers = headers or {}

    return setup


def _overloaded(s: ModelServer) -> None:
    s.overloaded = True


def _gemini_401(s: ModelServer) -> None:
    s.gemini_auth_code = 401


HOUR = 3600.0
KILL = 20.0  # a run that has not ended by then is killed (and recorded so)


def modes(cli: str) -> list[Mode]:
    out = [
        Mode("normal", "three tool calls (write a file, git commit, `hive done`), then the final text"),
        Mode(
            "bad_key",
            "a wrong key: 401 (Gemini: 400 API_KEY_INVALID), the CLI's default retries",
            KILL,
            api_key="wrong-key",
        ),
        Mode("bad_key-noretry", "a wrong key, the CLI's retries set to 0", KILL, api_key="wrong-key", max_retries=0),
        Mode(
            "rate_limited",
            "429 with retry-after: 3600 (Gemini: RetryInfo 3600s), default retries",
            KILL,
            setup=_rate_limited(HOUR),
        ),
        Mode(
            "rate_limited-noretry",
            "429 with retry-after: 3600, retries set to 0",
            KILL,
            max_retries=0,
            setup=_rate_limited(HOUR),
        ),
        Mode(
            "rate_limited-recovers",
            "429 with retry-after: 3 for the first 3 s, then normal answers, default retries",
            60,
            setup=_rate_limited(3),
        ),
        Mode("unreachable", "the API URL is a closed port on 127.0.0.1", KILL, unreachable=True),
        Mode("no_key", "no API key in the environment at all", KILL, api_key=""),
    ]
    if cli == "aider":  # no knob for its retries: the -noretry runs would be the same
        out = [m for m in out if not m.name.endswith("-noretry")]
        out.append(Mode("normal-nostream", "as normal, with AIDER_STREAM=false", env={"AIDER_STREAM": "false"}))
    if cli == "gemini":
        out.append(
            Mode(
                "bad_key-401",
                "the server answers a bad key with 401 UNAUTHENTICATED instead of Gemini's real 400, retries 0",
                KILL,
                api_key="wrong-key",
                max_retries=0,
                setup=_gemini_401,
            )
        )
    if cli == "claude":
        usage_limit = f"Claude AI usage limit reached|{int(time.time() + HOUR)}"
        out += [
            Mode("overloaded", "529 overloaded_error on every request (default retries)", KILL, setup=_overloaded),
            Mode("overloaded-noretry", "529, retries set to 0", KILL, max_retries=0, setup=_overloaded),
            Mode(
                "usage_limit",
                "429 whose message is 'Claude AI usage limit reached|<epoch>', retries 0",
                KILL,
                max_retries=0,
                setup=_rate_limited(HOUR, usage_limit),
            ),
            Mode(
                "usage_limit-headers",
                "429 with anthropic-ratelimit-unified-status: rejected and -reset: <epoch>, retries 0",
                KILL,
                max_retries=0,
                setup=_rate_limited(
                    HOUR,
                    None,
                    {
                        "anthropic-ratelimit-unified-status": "rejected",
                        "anthropic-ratelimit-unified-reset": str(int(time.time() + HOUR)),
                        "anthropic-ratelimit-unified-representative-claim": "five_hour",
                    },
                ),
            ),
            Mode(
                "max_budget",
                "--max-budget-usd 0.0001 (each turn costs more than that)",
                KILL,
                extra_args=["--max-budget-usd", "0.0001"],
            ),
        ]
    if cli == "codex":
        out += [
            Mode(
                f"json-{m.name}",
                f"`codex exec --json`: {m.about}",
                m.timeout,
                m.api_key,
                m.max_retries,
                m.unreachable,
                m.setup,
                json_events=True,
            )
            for m in out
        ]
        out.append(
            Mode(
                "json-normal-mock_model",
                '`codex exec --json`, as normal with `model = "mock-model"` (classic function tools)',
                json_events=True,
                codex_model=MODEL,
            )
        )
    return out


def closed_port() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there once the socket is closed


@dataclass
class Row:
    run: str
    about: str
    exit: str
    seconds: float
    requests: int
    note: str = ""


def record(cli: str, mode: Mode) -> Row:
    run = f"{cli}-{mode.name}"
    work = WORK / run
    shutil.rmtree(work, ignore_errors=True)
    repo, home, bin_dir = work / "repo", work / "home", work / "bin"
    for d in (repo, home, bin_dir):
        d.mkdir(parents=True)
    hive = bin_dir / "hive"
    hive.write_text(HIVE_STUB)
    hive.chmod(0o755)
    brief = work / "brief.md"
    brief.write_text(BRIEF)
    git_env = {**os.environ, **GIT_ENV, "HOME": str(home)}
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=git_env)
    (repo / "README.md").write_text("# project\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=git_env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "initial commit"], check=True, env=git_env)
    with ModelServer(api_key=KEY) as server:
        mode.setup(server)
        target: ModelServer | str = closed_port() if mode.unreachable else server
        env = cli_environ(
            cli, target, home, api_key=mode.api_key, max_retries=mode.max_retries, codex_model=mode.codex_model
        )
        env.update(GIT_ENV)
        env.update(mode.env)
        cmd = command(cli, hive_prompt(brief, hive), read=brief, json_events=mode.json_events)
        cmd[1:1] = mode.extra_args if cli == "claude" else []
        ran = run_cli(cmd, repo, env, timeout=mode.timeout)
        requests = len(server.log())
    (OUT / f"{run}.txt").write_text(ran.output)
    exit_ = "killed (no exit)" if ran.timed_out else str(ran.returncode)
    log = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True, text=True).stdout
    note = "commits: " + ", ".join(x for x in log.splitlines() if x)
    shutil.rmtree(work, ignore_errors=True)
    return Row(run, mode.about, exit_, ran.seconds, requests, note)


HEADER = "| run | what | exit status | wall time (s) | requests to the server | note |\n|---|---|---|---|---|---|\n"
ROW = re.compile(r"^\| `([^`]+)` \|")


def write_readme(rows: list[Row]) -> None:
    readme = OUT / "README.md"
    old: dict[str, str] = {}
    if readme.exists():
        for line in readme.read_text().splitlines():
            if m := ROW.match(line):
                old[m.group(1)] = line
    for r in rows:
        old[r.run] = f"| `{r.run}` | {r.about} | {r.exit} | {r.seconds:.1f} | {r.requests} | {r.note} |"
    intro = (readme.read_text().split("| run |")[0] if readme.exists() else "# Recorded agent CLI streams\n\n").rstrip()
    readme.write_text(intro + "\n\n" + HEADER + "\n".join(old[k] for k in sorted(old)) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma-separated runs (cli-mode) or CLIs")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (the slow ones mostly wait)")
    args = parser.parse_args()
    only = {x for x in args.only.split(",") if x}
    todo = [
        (cli, m)
        for cli in ("claude", "codex", "gemini", "aider")
        for m in modes(cli)
        if not only or cli in only or f"{cli}-{m.name}" in only
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for row in pool.map(lambda t: record(*t), todo):
            print(f"{row.run}: exit {row.exit} in {row.seconds:.1f}s, {row.requests} requests {row.note}", flush=True)
            rows.append(row)
    write_readme(rows)


if __name__ == "__main__":
    main()
