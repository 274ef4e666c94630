"""doit reporter: Hive's start-of-run reconcile (in the main process, before any
worker forks), SIGTERM handled like Ctrl-C, a live `[done/total]` progress line
on a terminal, and `.hive/report.md` rewritten as tasks finish (the main process
is its single writer)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

from doit.reporter import ConsoleReporter
from doit.task import Task as DoitTask

from hive import crashsafe
from hive.errors import HiveError
from hive.output import say
from hive.project import Project

if TYPE_CHECKING:
    from hive.plan.model import Plan
    from hive.store.state import TaskState


def reporter_for(project: Project | None) -> type[ConsoleReporter]:
    """doit makes the reporter from a class: this one carries the project the loader
    already loaded, so a run reads config and plans once."""
    return type("HiveReporter", (HiveReporter,), {"project": project})


class HiveReporter(ConsoleReporter):  # type: ignore[misc]  # doit has no type hints
    desc = "Hive: doit console output, progress line, execution report"
    project: Project | None = None

    def __init__(self, outstream: TextIO, options: dict[str, Any]) -> None:
        super().__init__(outstream, options)
        self.plans: tuple[Plan, ...] = ()
        self.states: dict[str, TaskState] = {}
        self.total = 0
        self.finished: set[str] = set()
        self.running: dict[str, float] = {}
        self.live = sys.stderr.isatty()
        # under `-P thread` doit calls a reporter from its worker threads and its main thread
        self.lock = threading.RLock()
        self.started = time.monotonic()

    def initialize(self, tasks: dict[str, DoitTask], selected_tasks: list[str]) -> None:
        # SIGTERM and Ctrl-C are handled by hive.crashsafe (installed by the dodo loader):
        # the line is cleared before the workers print why they stopped.
        crashsafe.add_stop_hook(self._clear)
        from hive.dodo.reconcile import start_run  # a real run only: `doit list` never loads it
        from hive.errors import user_message

        if self.project is None:  # a bad plan or config: doit reports it and runs nothing
            return
        from hive.store.state import StateStore

        self.store = StateStore(self.project.paths)
        try:
            lines, self.states = start_run(self.project, sys.argv[1:])
        except Exception as e:  # each task re-checks its own state when it runs
            message = user_message(e)
            if message is None:
                raise
            lines = [f"warning: could not check the recorded state before the run: {message}"]
            self.states = self.store.read_all()
        for line in lines:
            say(line)
        self.plans = self.project.plans.plans  # states: re-read one task at a time, as each finishes
        from hive import notify

        notify.run_started(self.project, self.states)
        self.total = len(_selected_subtasks(tasks, selected_tasks))
        # Load the runner and its templates once here: forked workers inherit them
        # instead of each importing them while the first agents start.
        import hive.engine.runner  # noqa: F401
        from hive.render import environment

        environment().get_template("context.md.j2")

    def execute_task(self, task: DoitTask) -> None:
        with self.lock:
            self._clear()
            super().execute_task(task)
            if task.subtask_of:
                self.running[task.name] = time.time()
            self._progress()

    def skip_uptodate(self, task: DoitTask) -> None:
        with self.lock:
            super().skip_uptodate(task)
            if task.subtask_of:
                self.finished.add(task.name)

    def add_success(self, task: DoitTask) -> None:
        with self.lock:
            self._done(task)
            super().add_success(task)

    def add_failure(self, task: DoitTask, fail: BaseException) -> None:
        with self.lock:
            self._done(task)
            super().add_failure(task, fail)

    def complete_run(self) -> None:
        self._clear()
        if self.plans:
            self.states = self.store.read_all()  # other runs may have finished tasks too
            self._write_report()
            self._notify_finished()
            self._summary()
        super().complete_run()
        crashsafe.run_finished()

    def _done(self, task: DoitTask) -> None:
        self._clear()
        self.running.pop(task.name, None)
        if task.subtask_of:
            self.finished.add(task.name)
            plan, _, task_id = task.name.partition(":")
            try:
                self.states[task.name] = self.store.read(plan, task_id)
            except HiveError:  # an unreadable state file: the task's own failure says so, with the fix
                pass
            self._write_report()
        self._progress()

    def _summary(self) -> None:
        """The run's last line: what its tasks came to, and where to look."""
        if self.project is not None:
            from hive.reports.execution import run_summary

            line = run_summary(self.project.paths, self.plans, self.states, time.monotonic() - self.started)
            say(line)

    def _notify_finished(self) -> None:
        if self.project is not None:
            from hive import notify  # a real run only, like reconcile

            notify.run_finished(self.project, self.states)

    def _write_report(self) -> None:
        if self.plans and self.project is not None:
            from hive.reports.execution import write_report

            write_report(self.project.paths, self.plans, self.states, time.monotonic() - self.started)

    def _progress(self) -> None:
        """One line, rewritten in place: quiet when stderr is not a terminal."""
        if not self.live or not self.total:
            return
        names = ", ".join(sorted(self.running)) or "-"
        line = f"[{len(self.finished)}/{self.total}] running: {names}" + self._holds()
        sys.stderr.write("\r\x1b[2K" + line[:200])
        sys.stderr.flush()

    def _holds(self) -> str:
        """Rate-limited profiles the run waits for, e.g. " · claude rate-limited until 14:05:00"."""
        if self.project is None:
            return ""
        from hive.engine.limits import holds

        now = time.time()
        return "".join(
            f" · {hold.profile} rate-limited until {time.strftime('%H:%M:%S', time.localtime(hold.until))}"
            for hold in holds(self.project.paths)
            if hold.until > now
        )

    def _clear(self) -> None:
        if self.live:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def _selected_subtasks(tasks: dict[str, DoitTask], selected: list[str]) -> set[str]:
    """The `<plan>:<ID>` tasks a run was asked for (a plan name selects all of its tasks)."""
    out: set[str] = set()
    for name in selected or []:
        task = tasks.get(name)
        if task is not None and task.has_subtask:
            out.update(task.task_dep)
        elif task is not None and task.subtask_of:
            out.add(name)
    return out
