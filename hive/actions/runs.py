"""What a human's answer is told of the run going on (issue 38: the dashboard said "run `doit`"
to a person who watched a run go on)."""

from __future__ import annotations

from hive.adapters.procfs import pid_alive
from hive.store import usage
from hive.store.paths import Paths


def run_going(paths: Paths) -> int:
    """The pid of the `doit` run going on now (0: none)."""
    _, pid = usage.last_run(paths)
    return pid if pid and pid_alive(pid) else 0


def next_run(paths: Paths, what: str) -> str:
    """When `what` ("merges it", "runs it") happens, as things stand. A run going on has already
    passed by the task a human answers (doit runs each task once a run: it held it), so it is the
    next `doit` either way, which may start now beside the one going on."""
    pid = run_going(paths)
    if pid:
        return (
            f"the run going on (doit pid {pid}) has passed it by: the next `doit` {what} — start one "
            f"now beside it, or once it ends"
        )
    return f"the next `doit` {what}"
