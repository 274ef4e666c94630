"""`python -I -S path/to/envexec.py ENV_FILE ARGV...`: run ARGV with exactly the
environment in ENV_FILE (a JSON object), then delete the file.

A tmux session starts with the environment of the tmux *server* — of whichever
process started it first — not of the `doit` that asks for the session: a variable
the user exported for this run (IS_SANDBOX=1, an API key) never reached the agent.
The whole intended environment goes through a file, not the command line, because
tmux limits the size of one command. It starts every agent, so it runs as a file
with `-I -S` and imports only the standard library: ~10 ms of CPU instead of ~20
for `-m hive.adapters.envexec` (site, Hive's venv), on a machine starting 64 agents.
"""

from __future__ import annotations

import json
import os
import sys


def main(args: list[str]) -> int:
    if len(args) < 2:
        print("usage: python -I -S envexec.py ENV_FILE ARGV...", file=sys.stderr)
        return 2
    path, argv = args[0], args[1:]
    try:
        with open(path, encoding="utf-8") as f:
            env = json.load(f)
        os.unlink(path)  # it may hold credentials: on disk no longer than needed
    except (OSError, ValueError) as e:
        print(f"hive: cannot read the agent's environment from {path}: {e}", file=sys.stderr)
        return 127
    try:
        os.execvpe(argv[0], argv, {str(k): str(v) for k, v in env.items()})
    except OSError as e:
        print(f"hive: cannot run {argv[0]!r}: {e}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
