"""`hive doctor`: will the approved plans' agents start on this machine?

- `usage`      which agent profiles approved plans still need, for which tasks
- `agents`     a profile's program: on PATH, its version
- `repo`       git and tmux, the git identity, the main branch, the user's checkout
- `hosts`      a profile's checks where the agents run (on each host of a remote executor):
               its program, and what its CLI declares in hive.agent_clis (keyed by the
               binary's name): the user it runs as, its credentials, its first-run files
- `diagnose`   all of it, for `hive doctor`
- `preflight`  the cheap part (no subprocess) that `doit` runs before a run starts

Every check returns a `hive.checks.Check` (✓ ok, ! warning, ✗ failure, with its fix).
Nothing here is imported by `doit list`; checks show where a secret comes from, never
its value.
"""
