"""`hive demo`: run the example plan end to end in a scratch git repository."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from hive.actions.approve import approve_plan
from hive.adapters import git
from hive.cli.init import init
from hive.errors import HiveError
from hive.executors import executor
from hive.project import load_repo_config


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def make_scratch_repo(target: Path | None) -> Path:
    if target is None:
        target = Path(tempfile.mkdtemp(prefix="hive-demo-"))
    elif target.exists() and any(target.iterdir()):
        raise HiveError(f"{target} is not empty; give `hive demo --dir` a new or empty directory")
    target.mkdir(parents=True, exist_ok=True)
    git.git(target, "init", "-q", "-b", "main")
    git.git(target, "config", "user.name", "Hive Demo")
    git.git(target, "config", "user.email", "demo@hive.invalid")
    (target / "README.md").write_text("# Hive demo project\n")
    git.git(target, "add", "README.md")
    git.git(target, "commit", "-q", "-m", "Initial commit")
    return target


def run_demo(target: Path | None, workers: int) -> int:
    for tool in ("git", "tmux"):
        if shutil.which(tool) is None:
            raise HiveError(f"`{tool}` is not installed; install it (e.g. `sudo apt-get install -y {tool}`) and retry")
    repo = make_scratch_repo(target)
    print(f"hive demo: scratch repository {repo}", flush=True)
    root, _ = init(repo)
    plan = root / "plans" / "example.md"
    plan.write_text(resources.files("hive.templates").joinpath("example.md").read_text())
    config = load_repo_config(root)
    for line in approve_plan(plan, config):
        print(f"hive demo: {line}", flush=True)
    # The demo's agents get their own tmux server, removed afterwards (also on SIGTERM).
    os.environ["HIVE_TMUX_SOCKET"] = f"hive-demo-{os.getpid()}"
    signal.signal(signal.SIGTERM, _interrupt)
    cmd = [sys.executable, "-m", "doit", *(["-n", str(workers)] if workers > 1 else [])]
    print(f"hive demo: $ {' '.join(['doit', *cmd[3:]])}", flush=True)
    try:
        code = subprocess.call(cmd, cwd=root)
    finally:
        executor(config.executor).shutdown()
    print("\nhive demo: history of main:", flush=True)
    print(git.git(root, "log", "--graph", "--oneline", "--decorate=no", "main").stdout, flush=True)
    print("hive demo: $ hive status", flush=True)
    subprocess.call([sys.executable, "-m", "hive", "status"], cwd=root)
    print(
        f"\nhive demo: {'all tasks merged' if code == 0 else f'doit exited with {code}'}; look around in {root}",
        flush=True,
    )
    return code


def run(args: argparse.Namespace) -> int:
    return run_demo(Path(args.dir).resolve() if args.dir else None, args.workers)
