"""One task's life — the action behind each doit task (SPEC "One task's run").

claim → decide from the recorded state → (start an attempt | re-attach | merge
only) → wait → finish, with every step recorded in the state store first, so a
run killed between any two lines can be resumed by the next one.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from doit.exceptions import TaskError, TaskFailed

from hive.adapters import git, tmux
from hive.cli.stop import prefixed
from hive.engine import attempt
from hive.engine.finish import cleanup_merged, finish, record_merged
from hive.engine.standing import GONE, MERGING, RUNNING, SIGNALLED, interrupted, standing
from hive.engine.supervise import Outcome
from hive.engine.task import Job, TaskHandle, first_line, say
from hive.errors import CommandError, HiveError, record_bug, user_message
from hive.reports.checkpoint import checkpoint_kind, checkpoint_report, how_to_answer
from hive.store import names
from hive.store.files import HeldLock, atomic_write
from hive.store.paths import Paths
from hive.store.state import INTERRUPTED, TaskState, shown_state

HOLD_STATES = ("blocked", "too_big", "awaiting_human")

__all__ = ["Job", "run_doit_task"]


def run_doit_task(job: Job) -> bool | TaskFailed | TaskError:
    """doit python-action: True when the task is done and merged, else TaskFailed."""
    parent = os.getppid()
    try:
        return TaskRunner(job).run()
    except KeyboardInterrupt:
        say(stopped_watching(TaskHandle(job)))
        raise
    except Exception as e:  # noqa: BLE001 — the one error edge: user errors as task failures, bugs to the log
        message = user_message(e)
        if message is not None:
            return TaskFailed(f"{job.key}: {message}")
        where = record_bug(Paths(job.root).debug_log, job.key)
        return TaskError(f"{job.key}: internal error: {e!r} ({where})")
    finally:
        _exit_if_orphaned(parent)


def stopped_watching(h: TaskHandle) -> str:
    """The one line a run that is stopped (Ctrl-C, SIGTERM) says about a task it ran."""
    st = h.read()
    key = h.key
    if st.state != "in_progress":
        return f"{key}: stopped watching — it is {st.state}; the next `doit` goes on from there"
    where = standing(h.paths, st)
    if where.signal is not None:
        return (f"{key}: stopped watching — its agent signalled `{where.signal.kind}`; "
                f"the next `doit` takes it from there")
    if where.kind == MERGING:
        return f"{key}: stopped watching while merging — the next `doit` finishes the merge"
    if where.kind == RUNNING:
        return (f"{key}: stopped watching — its agent keeps running in tmux session {st.session}; the next "
                f"`doit` re-attaches to it (`hive stop {key}` stops it)")
    return f"{key}: stopped watching — its agent is gone; the next `doit` starts a new attempt"


def _exit_if_orphaned(parent: int) -> None:
    """A doit worker whose doit was killed would wait forever for its next job:
    once its task is finished (and its locks released), it leaves."""
    if multiprocessing.parent_process() is not None and os.getppid() != parent:
        say("doit is gone; this worker finished its task and exits")
        os._exit(0)


class TaskRunner:
    def __init__(self, job: Job) -> None:
        self.h = TaskHandle(job)
        self.merge_approved = False   # a human asked for this merge (hive retry / approve)

    def run(self) -> bool | TaskFailed:
        h = self.h
        if not h.job.plan.approved:
            return TaskFailed(f"{h.key}: plan is draft: run `hive approve {h.rel(h.job.plan.path)}` first")
        if not git.try_rev_parse(h.root, h.main_ref):
            return TaskFailed(f"{h.key}: branch {h.cfg.main_branch!r} does not exist or has no commits; "
                              f"commit something first or set [merge] main_branch in .hive/config.toml")
        claim = HeldLock(h.paths.claim_lock(h.plan_name, h.task.id))
        claim.acquire(on_wait=lambda pid: say(f"{h.key}: another run (pid {pid}) is running it; waiting for it"))
        try:
            return self._run_claimed()
        except (HiveError, CommandError) as e:
            return self._failed_by(e)
        finally:
            claim.release()

    def _failed_by(self, error: HiveError | CommandError) -> TaskFailed:
        """A git/tmux failure or a bad state in the middle of an attempt: the attempt
        ends failed with the command and its output, its branch kept for the next
        attempt (which only merges, if the agent had finished)."""
        h = self.h
        message = user_message(error) or str(error)
        st = h.read()
        if st.state == "in_progress":
            # an error while merging is retried as a merge: the agent's work is on its branch
            h.end(st, "failed", f"error: {message}", resume=st.resume if st.only_merge else "")
        return TaskFailed(f"{h.key}: {message}")

    def _run_claimed(self) -> bool | TaskFailed:
        h = self.h
        while True:
            st = h.read()
            step = self._decide(st)
            if step == "done":
                return True
            if step == "hold":
                return self._held(st)
            if step == "checkpoint":
                return self._held(self._checkpoint(st))
            with ExitStack() as held:
                self._exclusion(held)
                worker = held.enter_context(_Slot(h.paths, h.cfg.max_workers, h.key))
                outcome = self._step(step, h.read(), worker)
                st = finish(h, h.read(), outcome, self.merge_approved)
            if st.state == "done":
                return True
            if st.state == "failed" and st.attempts < h.cfg.max_attempts:
                say(f"{h.key}: attempt {st.attempt} failed ({first_line(st.reason)}); trying again "
                    f"({st.attempts} of {h.cfg.max_attempts} attempts used)")
                continue
            return self._held(st)

    def _step(self, step: str, st: TaskState, worker: str) -> Outcome:
        h = self.h
        if step == "attach":
            say(f"{h.key}: re-attaching to its running agent (tmux session {st.session})")
            return attempt.watch(h, st)
        if step == "signalled":
            return attempt.pending_signal(h, st)
        if step == "merge":
            self.merge_approved = True
            st = attempt.start_merge_only(h, st, worker)
            return Outcome("done", st.reason)
        try:
            return attempt.watch(h, attempt.start(h, st, worker))
        except (HiveError, CommandError) as e:
            return Outcome("spawn_failed", f"agent_spawn_failed: could not start: {e}")

    def _decide(self, st: TaskState) -> str:
        """What to do with the task as recorded (SPEC "Task states" re-run table)."""
        h = self.h
        if st.merging and st.state != "done" and git.is_ancestor(h.root, st.merging, h.main_ref):
            files = tuple(git.changed_files(h.root, f"{st.merging}^1", st.merging))
            st = record_merged(h, st, st.merging, files, "merged before the last run stopped")
            tmux.kill_session(st.session)
            cleanup_merged(h, st)
            say(f"{h.key}: done — its merge {st.merge_commit[:10]} landed before the last run stopped")
            return "done"
        if st.state == "in_progress":
            return self._in_progress(st)
        why = self._outdated(st)
        if why:
            h.update((st.state,), state="planned", attempts=0, reason="", merge_commit="", resume="",
                     event=f"reopened: {why}")
            say(f"{h.key}: re-opened because {why}")
            st = h.read()
        if st.state == "done":
            return "done"
        if st.state in HOLD_STATES:
            return "hold"
        if st.state == "failed" and st.reason != INTERRUPTED and st.attempts >= h.cfg.max_attempts:
            return "hold"
        if h.task.is_checkpoint:
            return "checkpoint"
        if st.only_merge:
            return "merge"
        return "new"

    def _outdated(self, st: TaskState) -> str:
        """Why a finished or held task must run again, if it must: its text in the plan
        changed (for every state, as `hive status` shows it), or its merge left main."""
        h = self.h
        if st.state == "planned":
            return ""
        if shown_state(st, h.task.text_hash) == "planned":
            return "its text in the plan changed"
        if st.state == "done" and not (st.merge_commit and git.is_ancestor(h.root, st.merge_commit, h.main_ref)):
            return f"its merge commit is no longer on {h.cfg.main_branch}"
        return ""

    def _in_progress(self, st: TaskState) -> str:
        """Recorded as running and nobody holds its claim: the last run stopped."""
        h = self.h
        where = standing(h.paths, st)
        if where.kind == RUNNING and where.pane_pid != st.pane_pid:   # the last run died before it recorded it
            h.update(("in_progress",), pane_pid=where.pane_pid)
        if where.kind == GONE:
            interrupted(h.paths, st, h.cfg.stop_patience, prefixed(say, h.key))
        return {SIGNALLED: "signalled", MERGING: "merge", RUNNING: "attach", GONE: "new"}[where.kind]

    def _checkpoint(self, st: TaskState) -> TaskState:
        """Stop here for a human: write the checkpoint report and wait in awaiting_human."""
        h = self.h
        report = checkpoint_report(h.store, h.job.plan, h.task, h.cfg.main_branch)
        atomic_write(h.paths.checkpoint_file(h.plan_name, h.task.id), report)
        kind = checkpoint_kind(h.task)
        return h.update(("planned",), state="awaiting_human", task_hash=h.task.text_hash, answer="",
                        reason=f"{kind}: answer with `{how_to_answer(h.key, h.task)}`",
                        event=f"checkpoint reached ({kind})")

    def _exclusion(self, held: ExitStack) -> None:
        """Tasks sharing a Module never overlap, and a `Parallel-safe: no` task runs
        alone: locks, so the rule holds across workers and across doit processes."""
        h = self.h
        locks = h.paths.locks
        alone = HeldLock(locks / "parallel.lock", shared=h.task.parallel_safe)
        alone.acquire(on_wait=lambda _: say(f"{h.key}: waiting — " + (
            "a task marked Parallel-safe: no is running" if h.task.parallel_safe
            else "it is marked Parallel-safe: no and runs alone")))
        held.callback(alone.release)
        if h.task.module:
            module = HeldLock(locks / "modules" / f"{names.module_lock(h.task.module)}.lock")
            module.acquire(on_wait=lambda pid: say(f"{h.key}: waiting for another task in module "
                                                   f"{h.task.module!r} (pid {pid}) to finish"))
            held.callback(module.release)

    def _held(self, st: TaskState) -> TaskFailed:
        key = self.h.key
        how = {"blocked": f"resolve it, then `hive retry {key}`",
               "too_big": f"split it in the plan, or `hive retry {key}`",
               "awaiting_human": "",
               "failed": f"`hive retry {key}` after fixing the cause (logs: `hive logs {key}`)"}
        report = self.h.paths.checkpoint_file(self.h.plan_name, self.h.task.id)
        if st.state == "awaiting_human" and self.h.task.is_checkpoint and report.exists():
            # the checkpoint report goes to stderr: doit captures a task's stdout
            print("\n" + report.read_text(), file=sys.stderr, flush=True)
        lines = [f"{key} is {st.state}: {st.reason}", how.get(st.state, "")]
        if st.state == "blocked" and st.worktree and Path(st.worktree).exists():
            lines.append(f"its work is kept in {st.worktree} (branch {st.branch})")
        if st.output_tail:
            lines.append("last output:\n" + st.output_tail)
        return TaskFailed("\n".join(x for x in lines if x))


class _Slot:
    """A worker slot: one of `max_workers` lock files, held while an agent runs, so
    the cap holds across every doit process on the repo. Its number is the worker id."""

    def __init__(self, paths: Paths, size: int, key: str) -> None:
        self.locks = [HeldLock(paths.locks / "slots" / f"w{i}.lock") for i in range(1, size + 1)]
        self.key = key
        self.held: HeldLock | None = None

    def __enter__(self) -> str:
        said = False
        while True:
            for i, lock in enumerate(self.locks, 1):
                if lock.try_acquire():
                    self.held = lock
                    return f"w{i}"
            if not said:
                say(f"{self.key}: waiting for a free worker slot (max_workers={len(self.locks)})")
                said = True
            time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        if self.held:
            self.held.release()
