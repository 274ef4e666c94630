"""The task's environment (issue 24): the variables every command Hive runs for a task sees —
its agent, `[worktrees] setup`, its checks (Verify, test_command) and `[worktrees] teardown` —
built in one place, so that each finds the same ports and the same Compose project; and the
teardown, run in a task's checkout just before Hive removes it (to stop the services its
agent or its checks started there)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hive.errors import CommandError
from hive.output import clean_tail, say
from hive.sandbox import policy
from hive.settings.config import Config
from hive.store import names
from hive.store.paths import Paths

if TYPE_CHECKING:
    from hive.engine.task import TaskContext

PORT_BASE = 41000
# ports per task; a worker runs one task at a time, so its block is that task's alone within a run
BLOCK = 10
# A teardown stops what a task started (`docker compose down` gives each container 10 s to
# stop): minutes at most. Not the task's timeout (an hour by default): a hung teardown would
# hold its worker, or `hive cleanup`, that long, for a step whose failure is only a warning.
TEARDOWN_TIMEOUT = 300.0


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


@dataclass(frozen=True)
class Teardown:
    """`[worktrees] teardown` for task plan:task_id, called with one of its checkouts just before
    Hive removes it (worktrees.remove_*, once per removal, only a sound checkout): it runs there
    with the task's variables, in the checks' sandbox when the run is sandboxed (it runs code
    the agent may have edited, a Makefile say). Its failure is a warning (`warn`), never the
    task's: the checkout goes all the same."""

    command: str
    config: Config
    root: Path
    plan: str
    task_id: str
    warn: Callable[[str], None]

    def __call__(self, wt: Path) -> None:
        key = names.task_key(self.plan, self.task_id)
        owner = names.worktree_owner(wt.name, self.plan, self.task_id)
        if owner is None:  # not named as Hive names this task's checkouts: whose ports would it stop?
            self.warn(f"{key}: warning: [worktrees] teardown not run in {wt}: Hive did not make it for {key}")
            return
        refused, _ = policy.preflight(self.config)
        if refused:  # `hive cleanup` on a machine where the sandbox asked for does not work
            self.warn(f"{key}: warning: [worktrees] teardown not run in {wt}: {refused[0]}")
            return
        worker, attempt = owner
        env = {**variables(self.plan, self.task_id, self.root, worker), "HIVE_ATTEMPT": str(attempt)}
        env["HIVE_WORKTREE"] = str(wt)
        sandbox = policy.check(self.config, Paths(self.root), (self.plan, self.task_id), wt)
        try:
            done = sandbox.run(self.command, wt, env, TEARDOWN_TIMEOUT)
        except CommandError as e:  # it timed out, or bash (or bwrap) is missing
            self.warn(_failed(key, wt, f"exit {e.code}", e.output))
        except OSError as e:  # the checkout cannot be entered
            self.warn(_failed(key, wt, type(e).__name__, str(e)))
        else:
            if done.code != 0:
                self.warn(_failed(key, wt, f"exit {done.code}", done.output))


def _failed(key: str, wt: Path, why: str, output: str) -> str:
    said = clean_tail(output, 10)
    return f"{key}: warning: [worktrees] teardown failed ({why}) in {wt}; removing it all the same" + (
        f":\n{said}" if said else ""
    )


def teardown(config: Config, root: Path, plan: str, task_id: str, warn: Callable[[str], None]) -> Teardown | None:
    """The teardown of task plan:task_id's checkouts; None when `[worktrees] teardown` is not set."""
    if not config.worktree_teardown:
        return None
    return Teardown(config.worktree_teardown, config, root, plan, task_id, warn)


def teardown_of(h: TaskContext) -> Teardown | None:
    """The teardown of the task `h` runs, its warnings said as the run's other news."""
    return teardown(h.cfg, h.root, h.plan_name, h.task.id, say)
