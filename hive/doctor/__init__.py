"""`hive doctor`: will the approved plans' agents start on this machine?

- `usage`      which agent profiles approved plans still need, for which tasks
- `agents`     a profile's program: on PATH, its version, Claude Code as root
- `credentials`  per agent CLI (keyed by the binary's name): where its login or key is
- `onboarding`   first-run files an interactive TUI needs (Claude Code's ~/.claude.json)
- `repo`       git and tmux, the git identity, the main branch, the user's checkout
- `hosts`      those agent checks where the agents run: on each host of a remote executor
- `diagnose`   all of it, for `hive doctor`
- `preflight`  the cheap part (no subprocess) that `doit` runs before a run starts

Every check returns a `hive.checks.Check` (✓ ok, ! warning, ✗ failure, with its fix).
Nothing here is imported by `doit list`; checks show where a secret comes from, never
its value.
"""
