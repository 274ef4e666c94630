"""doit reporter: Hive's start-of-run reconcile (in the main process, before any
worker forks), SIGTERM handled like Ctrl-C, a live `[done/total]` progress line
on a terminal, and `.hive/report.md` rewritten as tasks finish (the main process
is its single writer).

Hive owns the run's output (issue 43): every line goes to stdout, on a terminal or in a
file alike; a task that does not finish is one line of Hive's (what it is, what to do),
a task that cannot run is one line naming what it waits for, and doit's own dump
(`TaskFailed - taskid:…`, `UnmetDependency`, the captured-output blocks) is not printed:
Hive said it all, and better. A bug (doit's TaskError) still shows its traceback."""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

from doit.exceptions import BaseFail, TaskFailed, UnmetDependency
from doit.reporter import ConsoleReporter
from doit.task import Task as DoitTask

from hive import crashsafe
from hive.errors import HiveError
from hive.output import CLEAR_LINE, duration, emit, live, say
from hive.project import Project

if TYPE_CHECKING:
    from hive.plan.model import Plan
    from hive.store.state import TaskState


REPORT_EVERY = 1.0  # seconds: report.md rewritten at most this often while tasks end


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
        self.live = live()
        # under `-P thread` doit calls a reporter from its worker threads and its main thread
        self.lock = threading.RLock()
        self.started = time.monotonic()
        self.ticking = False
        self.selected: set[str] = set()
        self.reported = 0.0  # when report.md was last written (monotonic)
        self.report_due: threading.Timer | None = None

    def initialize(self, tasks: dict[str, DoitTask], selected_tasks: list[str]) -> None:
        # SIGTERM and Ctrl-C are handled by hive.crashsafe (installed by the dodo loader):
        # the line is cleared before the workers print why they stopped.
        crashsafe.add_stop_hook(self._stopping)
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
        self.selected = _selected_subtasks(tasks, selected_tasks) if selected_tasks else set()
        self.total = len(_selected_subtasks(tasks, selected_tasks))
        # Load the runner and its templates once here: forked workers inherit them
        # instead of each importing them while the first agents start.
        import hive.engine.runner  # noqa: F401
        from hive.render import environment

        environment().get_template("context.md.j2")

    def write(self, text: str) -> None:
        """doit's own lines (`.  task`, `-- task`) go where Hive's go, erasing the progress line."""
        emit(text)

    def execute_task(self, task: DoitTask) -> None:
        with self.lock:
            super().execute_task(task)
            if task.subtask_of:
                self.running[task.name] = time.time()
            self._progress()
            self._tick()

    def skip_uptodate(self, task: DoitTask) -> None:
        with self.lock:
            super().skip_uptodate(task)
            if task.subtask_of:
                self.finished.add(task.name)

    def add_success(self, task: DoitTask) -> None:
        with self.lock:
            self._done(task)

    def add_failure(self, task: DoitTask, fail: BaseFail) -> None:
        with self.lock:
            self._done(task, at_once=True)
            self.failures.append({"task": task, "exception": fail})
            said = self._failure(task, fail)
            if said:
                emit(said)
            self._progress()

    def _failure(self, task: DoitTask, fail: BaseFail) -> str:
        """What a task that did not finish comes to, as Hive says it ("" for a plan's group task:
        its tasks each said theirs)."""
        if isinstance(fail, UnmetDependency):
            return f"hive: {task.name} {self._skip_reason(task, fail)}\n" if task.subtask_of else ""
        if isinstance(fail, TaskFailed):
            first, *rest = fail.get_msg().strip().splitlines() or [task.name]
            return "".join([f"hive: {first}\n", *(f"    {line}\n" for line in rest)])
        # a bug, or doit's own trouble with the task: its traceback, as doit shows it
        return f"hive: {task.name}: {fail.get_name()}\n{fail.get_msg()}\n"

    def _skip_reason(self, task: DoitTask, fail: BaseFail) -> str:
        """`skipped: waits for f:1 (failed)`, as `hive status` says it."""
        from hive.lifecycle import shown_state
        from hive.reports import skipped

        plan_name, _, task_id = task.name.partition(":")
        plan = next((p for p in self.plans if p.name == plan_name), None)
        if plan is not None:
            states = self.store.read_all() if self.project is not None else {}
            shown = {t.id: shown_state(st, t.text_hash) for t in plan.tasks if (st := states.get(plan.key(t.id)))}
            skip = skipped.skips(plan, shown).get(task_id)
            if skip is not None:
                return skip.reason
        return f"skipped: waits for {fail.get_msg().strip() or 'a task that did not finish'}"

    def complete_run(self) -> None:
        self.ticking = False
        with self.lock:
            self._clear()
            if self.plans:
                self.states = self.store.read_all()  # other runs may have finished tasks too
                self._write_report()
                self._notify_finished()
                self._summary()
            if self.runtime_errors:  # doit's own (not a task's): what it aborted for
                emit("Execution aborted.\n" + "\n".join(self.runtime_errors) + "\n")
        crashsafe.run_finished()

    def _done(self, task: DoitTask, at_once: bool = False) -> None:
        self.running.pop(task.name, None)
        if task.subtask_of:
            self.finished.add(task.name)
            plan, _, task_id = task.name.partition(":")
            try:
                self.states[task.name] = self.store.read(plan, task_id)
            except HiveError:  # an unreadable state file: the task's own failure says so, with the fix
                pass
            self._report_soon(at_once)
        self._progress()

    def _report_soon(self, at_once: bool) -> None:
        """report.md shows a task's end within REPORT_EVERY (a failure's at once), rewritten no
        more often: it is rendered whole, every task's notes read, and one rewrite at each end
        made a run of n tasks cost O(n²) (issue 44: ~5 ms of each instant task's 20)."""
        wait = self.reported + REPORT_EVERY - time.monotonic()
        if at_once or wait <= 0:
            self._write_report()
        elif self.report_due is None:
            self.report_due = threading.Timer(wait, self._report_when_due)
            self.report_due.daemon = True  # complete_run writes it anyway; a killed run's is made again
            self.report_due.start()

    def _report_when_due(self) -> None:
        with self.lock:
            if self.report_due is not None:
                self._write_report()

    def _summary(self) -> None:
        """The run's last line: what its tasks came to, and where to look."""
        if self.project is not None:
            from hive.reports.execution import run_summary

            line = run_summary(
                self.project.paths, self.plans, self.states, time.monotonic() - self.started, self.selected
            )
            say(line)

    def _notify_finished(self) -> None:
        if self.project is not None:
            from hive import notify  # a real run only, like reconcile

            notify.run_finished(self.project, self.states)

    def _write_report(self) -> None:
        if self.report_due is not None:
            self.report_due.cancel()
            self.report_due = None
        self.reported = time.monotonic()
        if self.plans and self.project is not None:
            from hive.reports.execution import write_report

            write_report(self.project.paths, self.plans, self.states, time.monotonic() - self.started)

    def _progress(self) -> None:
        """One line, rewritten in place: only on a terminal. Every message erases it first
        (`output.emit`); it is drawn again after this process's messages and, for its workers',
        by `_tick` within a second."""
        if not self.live or not self.total:
            return
        now = time.time()
        names = ", ".join(f"{name} {duration(now - at)}" for name, at in sorted(self.running.items())) or "-"
        line = f"[{len(self.finished)}/{self.total}] running: {names}" + self._paused_profiles()
        self._draw(CLEAR_LINE + line[:200])

    def _tick(self) -> None:
        """Draw the progress line again each second while tasks run: a worker's message erased it,
        and the running tasks' times move on. Started with the first task, after doit forked
        its workers (a thread at a fork would be copied half-way through a lock)."""
        if not self.live or self.ticking:
            return
        self.ticking = True

        def tick() -> None:
            while self.ticking:
                time.sleep(1.0)
                with self.lock:
                    if self.ticking:
                        self._progress()

        threading.Thread(target=tick, name="hive-progress", daemon=True).start()

    def _draw(self, text: str) -> None:
        stream = sys.__stdout__
        try:
            if stream is not None:
                stream.write(text)
                stream.flush()
        except (OSError, ValueError, RuntimeError):  # RuntimeError: reentered from a signal handler
            pass

    def _stopping(self) -> None:
        """Ctrl-C or SIGTERM: the line goes, and is not drawn again, before the workers say why they stop."""
        self.ticking = False
        self._clear()

    def _paused_profiles(self) -> str:
        """Rate-limited profiles the run waits for, e.g. " · claude rate-limited until 14:05:00"."""
        if self.project is None:
            return ""
        from hive.engine.limits import profile_pauses

        now = time.time()
        return "".join(
            f" · {pause.profile} rate-limited until {time.strftime('%H:%M:%S', time.localtime(pause.until))}"
            for pause in profile_pauses(self.project.paths)
            if pause.until > now
        )

    def _clear(self) -> None:
        if self.live:
            self._draw(CLEAR_LINE)


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
