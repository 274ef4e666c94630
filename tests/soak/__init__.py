"""Randomized fault-injection soak for Hive (see docs/development.md, "The soak").

Each trial builds a random plan of 3-7 fake-agent tasks (a random DAG), protects
a "user" checkout (a dirty tracked file, an untracked file, commits made during
the run), runs `doit` while injecting random faults (kill -9 of the process
group, SIGTERM/SIGINT, tmux server killed, a worktree deleted under its agent,
agents that crash or stay silent on attempt 1, two doits started at once) at
random times or right after Hive reaches a phase (a claim, an agent's signal, a
merge), then re-runs `doit` until it exits 0 and checks invariants: every task
merged exactly once, no merged task re-spawned, the user's work untouched, no
traceback, clean exit codes, nothing left behind.

A seed fixes the plan and the faults (what, which task, when); the interleaving
with Hive's own timing is not reproducible, so a replay may need a few tries.
Stdlib only (plus Hive and doit as subprocesses; `--ray`, in ray.py, needs Ray).

The package is `soak` to pytest (tests/ is on its sys.path, as for `conftest` and `clis`) and
`tests.soak` to `python -m tests.soak` from the repository root: its modules import each other
relatively, so either name works.
"""
