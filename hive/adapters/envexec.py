"""`python -I -S path/to/envexec.py ENV_FILE [--beside N PROGRAM...] ARGV...`: run ARGV with
exactly the environment in ENV_FILE (a JSON object), then delete the file; with `--beside`,
first start the N words of PROGRAM beside it, for its life.

A tmux session starts with the environment of the tmux *server* — of whichever
process started it first — not of the `doit` that asks for the session: a variable
the user exported for this run (IS_SANDBOX=1, an API key) never reached the agent.
The whole intended environment goes through a file, not the command line, because
tmux limits the size of one command. It starts every agent, so it runs as a file
with `-I -S` and imports only the standard library: ~10 ms of CPU instead of ~20
for `-m hive.adapters.envexec` (site, Hive's venv), on a machine starting 64 agents.

PROGRAM (a sandbox's proxy) runs as this process's child, with the same environment and two
more arguments: this process's pid and a pidfd of it (-1 where the kernel has none), by which
it sees ARGV's end (this process becomes ARGV). Starting it here, beside ARGV rather than
before it, keeps its start (~30 ms) off the agent's way.
"""

from __future__ import annotations

import json
import os
import sys


def main(args: list[str]) -> int:
    if len(args) >= 3 and args[1] == "--beside" and args[2].isdigit():
        n = int(args[2])
        path, beside, argv = args[0], args[3 : 3 + n], args[3 + n :]
    else:
        path, beside, argv = args[0] if args else "", [], args[1:]
    if not argv:
        print("usage: python -I -S envexec.py ENV_FILE [--beside N PROGRAM...] ARGV...", file=sys.stderr)
        return 2
    try:
        with open(path, encoding="utf-8") as f:
            env = {str(k): str(v) for k, v in json.load(f).items()}
        os.unlink(path)  # it may hold credentials: on disk no longer than needed
    except (OSError, ValueError) as e:
        print(f"hive: cannot read the agent's environment from {path}: {e}", file=sys.stderr)
        return 127
    if beside:
        start_beside(beside, env)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as e:
        print(f"hive: cannot run {argv[0]!r}: {e}", file=sys.stderr)
        return 127


def start_beside(program: list[str], env: dict[str, str]) -> None:
    """`program` + [this pid, a pidfd of this process], as a child that outlives the exec."""
    me = os.getpid()
    try:
        fd = os.pidfd_open(me)  # close-on-exec: only the child's inheritable copy stays open
    except (OSError, AttributeError):
        fd = -1
    if os.fork() == 0:
        try:
            if fd >= 0:
                os.set_inheritable(fd, True)
            os.execve(program[0], [*program, str(me), str(fd)], env)
        except OSError as e:
            print(f"hive: cannot start {program[0]!r} beside the agent: {e}", file=sys.stderr)
        os._exit(127)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
