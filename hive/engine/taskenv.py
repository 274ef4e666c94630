"""The task's environment (issue 24): the variables every command Hive runs for a task sees —
its agent, `[worktrees] setup` and its checks (Verify, test_command) — built in one place, so
that each finds the same ports and the same Compose project."""

from __future__ import annotations

from pathlib import Path

from hive.store import names

PORT_BASE = 41000
# ports per task; a worker runs one task at a time, so its block is that task's alone within a run
BLOCK = 10


def ports(worker: int) -> range:
    """Worker `worker`'s block: HIVE_PORT and the nine after it."""
    first = PORT_BASE + BLOCK * worker
    return range(first, first + BLOCK)


def variables(plan: str, task_id: str, root: Path, worker: int) -> dict[str, str]:
    """What every command run for task plan:task_id by worker number `worker` is told of it.
    HIVE_PORTS is space-separated (`for p in $HIVE_PORTS`); the Compose project is a name made
    safe (names.compose_project), so plan text never reaches Compose or a shell through it."""
    block = ports(worker)
    return {
        "HIVE_TASK": names.task_key(plan, task_id),
        "HIVE_ROOT": str(root),
        "HIVE_PORT": str(block[0]),
        "HIVE_PORTS": " ".join(map(str, block)),
        "COMPOSE_PROJECT_NAME": names.compose_project(plan, task_id),
    }
