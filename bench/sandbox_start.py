"""What the sandbox adds to starting one agent (issue 24's figure: target ≤ 50 ms).

    python bench/sandbox_start.py [--runs 40] [--out sandbox_start.json]

Two parts, each the median of `--runs`, sandboxed against not:

- `prepare`: what an attempt does before its tmux session exists when it sandboxes (its private
  git directory, its folders, bubblewrap's command line) — the same calls engine/attempt.py makes;
- `chain`: from starting the pane's command (hive.adapters.tmux's: envexec then the agent
  unsandboxed; the pane's shell, bubblewrap taking the environment and the relay inside,
  sandboxed) to the agent's first instruction, with `[sandbox] network = "allowlist"` (the
  proxy beside it is the log's writer's, not on this way). The agent is `sh -c 'date +%s%N >FILE; exit 0'`-like: the
  time it writes is the moment it runs.

Needs bubblewrap. Uses a throwaway git repository under a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hive.adapters import tmux  # noqa: E402
from hive.sandbox import bwrap, gitdir, policy  # noqa: E402
from hive.settings.config import load_config  # noqa: E402
from hive.store.paths import Paths  # noqa: E402

# the agent: the time it first runs, in ns, written where the bench reads it
AGENT = [sys.executable, "-I", "-S", "-c", "import sys,time; open(sys.argv[1],'w').write(str(time.time_ns()))"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def make_repo(tmp: Path) -> tuple[Path, Path, str]:
    """A repository with one task worktree: (root, worktree, branch)."""
    root = tmp / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("bench\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "init")
    wt = tmp / "wt"
    git(root, "worktree", "add", "-q", "-b", "hive/bench", str(wt))
    return root, wt, "hive/bench"


def prepare(paths: Paths, rules: policy.Rules, wt: Path, refs: dict[str, str], attempt: int) -> policy.Confined:
    """What engine/attempt.py's _in_sandbox does (`refs`: the branch, at its commit)."""
    private = paths.private_gitdir("bench", "T", attempt)
    (branch,) = refs
    shown = gitdir.create(private, wt, branch, refs, paths.excludes_file("bench", "T", attempt))
    a = policy.Attempt(paths, "bench", "T", attempt, wt, tuple(AGENT), shown, private)
    return policy.agent(rules, a)


def chain(confined: policy.Confined, wt: Path, env: dict[str, str], tmp: Path) -> float:
    """Seconds from starting the pane's command (hive.adapters.tmux's, as an agent's session runs
    it, without tmux) to the agent's first instruction."""
    out = wt / ".ran"  # the agent's checkout: a sandboxed agent's /tmp is its own
    out.unlink(missing_ok=True)
    sandboxed = confined is not policy.UNCONFINED
    program = tmux.Program([*confined.prefix, *AGENT, str(out)], env, tmp / "agent.env", confined.beside, sandboxed)
    argv, _ = tmux.pane_command(program, {**env, "HIVE_EXIT_FILE": str(tmp / "exit")})
    started = time.time_ns()
    subprocess.run(argv, cwd=wt, check=True, stdin=subprocess.DEVNULL)
    return (int(out.read_text()) - started) / 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if why := bwrap.unavailable():
        print(f"cannot measure: {why}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="hsb") as d:
        tmp = Path(d)
        root, wt, branch = make_repo(tmp)
        refs = {branch: git(root, "rev-parse", branch)}
        paths = Paths(root)
        rules = policy.rules(load_config(paths.config))  # the run's, read once
        env = dict(os.environ)
        prep, plain, boxed = [], [], []
        for n in range(args.runs):
            t = time.perf_counter()
            confined = prepare(paths, rules, wt, refs, n + 1)
            prep.append(time.perf_counter() - t)
            full_env = {k: v for k, v in {**env, **confined.env}.items() if k not in confined.unset}
            # alternate, so that a busy moment of the machine falls on both alike
            plain.append(chain(policy.UNCONFINED, wt, env, tmp))
            boxed.append(chain(confined, wt, full_env, tmp))
            gitdir.remove(paths.private_gitdir("bench", "T", n + 1))
    runs = {"prepare": prep, "plain": plain, "boxed": boxed}
    med = {k: round(statistics.median(v) * 1000, 1) for k, v in runs.items()}
    low = {k: round(min(v) * 1000, 1) for k, v in runs.items()}  # the machine's quietest moments
    result = {
        "runs": args.runs,
        "load_average": os.getloadavg(),
        "prepare_ms": med["prepare"],
        "chain_unsandboxed_ms": med["plain"],
        "chain_sandboxed_ms": med["boxed"],
        "added_ms": round(med["prepare"] + med["boxed"] - med["plain"], 1),
        "added_min_ms": round(low["prepare"] + low["boxed"] - low["plain"], 1),
        "target_added_ms": 50,
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
