"""One task's run as every engine step sees it: the job (plan, task, config), its
recorded state, its executor and its worker slot."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hive.agent_clis.profile import AgentProfile
from hive.engine.job import Job
from hive.errors import HiveError
from hive.executors import Agent, AgentRef, Executor, executor
from hive.lifecycle import State, TaskType
from hive.output import first_line, say
from hive.sandbox import policy
from hive.store import names
from hive.store.paths import Paths
from hive.store.state import StaleState, StateStore, TaskState

if TYPE_CHECKING:
    from hive.forges.base import Forge

__all__ = ["Job", "TaskContext", "Worker"]

SCRIPT_BRIEF = "HIVE_TASK.md"


@dataclass(frozen=True)
class Worker:
    """One of `max_workers` slots (`engine.slots`): its number picks the agent's port."""

    number: int

    @property
    def id(self) -> str:
        return names.worker_id(self.number)


class TaskContext:
    """What every engine step of one task's run needs at hand (named `h`): its job, paths, state
    store, config, executor. `runner.TaskRunner` drives the run."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self.task = job.task
        self.cfg = job.config
        self.root = job.root
        self.key = job.key
        self.paths = Paths(job.root)
        self.store = StateStore(self.paths)
        self.plan_name = job.plan.name
        self.main_ref = self.cfg.main_ref  # in PR mode the forge's base, as last fetched
        self.executor: Executor = executor(self.cfg.executor, self.cfg, self.root)
        self._forge: Forge | None = None

    def forge(self) -> Forge:
        """The forge this task's PR and issue are on (pull-request mode, plans from issues): made
        once per task run, so what it learnt (whose comments are Hive's, who may write) and the
        token's lookup (`gh auth token`, a process) are not done again at each look."""
        if self._forge is None:
            from hive import forges  # its client loads only where a task is on a forge

            self._forge = forges.connect(self.cfg, self.root, self.paths.hive / "forge")
        return self._forge

    @property
    def hive_command(self) -> str:
        """`hive` by its absolute path, for shells whose PATH was reset (codex's `bash -lc`)."""
        return shlex.quote(str(self.paths.shim))

    def agent(self, st: TaskState) -> Agent:
        """The agent of the attempt `st` records, as its executor holds it."""
        return self.executor.agent(AgentRef.of(self.root, st))

    def read(self) -> TaskState:
        return self.store.read(self.plan_name, self.task.id)

    def update(
        self,
        expect: tuple[State, ...] | None,
        event: str = "",
        details: Mapping[str, object] | None = None,
        **changes: object,
    ) -> TaskState:
        """Change this task's state, compare-and-swap against `expect`; `details` go into its event."""
        try:
            return self.store.update(
                self.plan_name, self.task.id, expect=expect, event=event, details=details, **changes
            )
        except StaleState as e:
            raise HiveError(
                f"{self.key} changed to {e.current.state} under us (is another run or a `hive` command changing it?)"
            ) from None

    def end(
        self,
        st: TaskState,
        state: State,
        reason: str,
        output_tail: str = "",
        note: str = "",
        files: tuple[str, ...] = (),
        resume: str = "",
        **changes: Any,
    ) -> TaskState:
        """Close the current attempt in `state`, and say so."""
        # `merging` stays: only the merge step knows whether main moved (the next run checks it)
        st = self.store.close_attempt(st, state, reason, output_tail=output_tail, files=files, resume=resume, **changes)
        say(f"{self.key}: {state} — {first_line(reason)}" + (f" ({note})" if note else ""))
        return st

    @property
    def sandboxed(self) -> bool:
        """Its agents run in the sandbox this machine makes (hive.sandbox); an executor whose
        agents run on other hosts has them make theirs (`Launch.sandbox`)."""
        return not self.executor.capabilities.remote_checkout and policy.sandboxed(self.cfg)

    def profile(self) -> AgentProfile:
        return self.cfg.agents[self.cfg.profile_name(self.job.plan.agent, self.task.agent)]

    @property
    def is_script(self) -> bool:
        return self.task.type == TaskType.SCRIPT

    def context_name(self) -> str:
        return SCRIPT_BRIEF if self.is_script else self.profile().context_file

    def rel(self, path: Path | str) -> str:
        try:
            return str(Path(path).relative_to(self.root))
        except ValueError:
            return str(path)
