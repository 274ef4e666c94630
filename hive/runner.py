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
import traceback
from contextlib import ExitStack
from pathlib import Path

from doit.exceptions import TaskError, TaskFailed

from hive import attempt, git, names, signals, tmux
from hive.errors import CommandError, HiveError
from hive.finish import cleanup_merged, finish, record_merged
from hive.fsutil import HeldLock, atomic_write
from hive.handle import Job, TaskHandle, first_line, say
from hive.paths import Paths
from hive.report import checkpoint_file, checkpoint_kind, checkpoint_report, how_to_answer
from hive.state import INTERRUPTED, TaskState
from hive.supervise import Outcome, pid_alive

HOLD_STATES = ("blocked", "too_big", "awaiting_human")

__all__ = ["Job", "run_doit_task"]


def run_doit_task(job: Job) -> bool | TaskFailed | TaskError:
    """doit python-action: True when the task is done and merged, else TaskFailed."""
    parent = os.getppid()
    try:
        return TaskRunner(job).run()
    except HiveError as e:
        return TaskFailed(f"{job.key}: {e}")
    except KeyboardInterrupt:
        st = TaskHandle(job).read()
        if st.state == "in_progress" and tmux.has_session(st.session):
            say(f"{job.key}: stopped watching; its agent keeps running in tmux session {st.session} — the next "
                f"`doit` re-attaches to it (`hive stop {job.key}` stops it)")
        raise
    except Exception:  # a bug, not a user error: keep the traceback out of the way but on disk
        log = Paths(job.root).debug_log
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as f:
            f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {job.key}\n{traceback.format_exc()}")
        return TaskError(f"{job.key}: internal error: {sys.exc_info()[1]!r} (traceback in {log})")
    finally:
        _exit_if_orphaned(parent)


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
        finally:
            claim.release()

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
                say(f"{h.key}: attempt {st.attempt} failed ({first_line(st.reason)}); "
                    f"starting attempt {st.attempt + 1} of {h.cfg.max_attempts}")
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
        if st.state == "done":
            if st.task_hash == h.task.text_hash and st.merge_commit and \
                    git.is_ancestor(h.root, st.merge_commit, h.main_ref):
                return "done"
            why = "its text in the plan changed" if st.task_hash != h.task.text_hash else \
                f"its merge commit is no longer on {h.cfg.main_branch}"
            h.update(("done",), state="planned", attempts=0, reason="", merge_commit="", event=f"reopened: {why}")
            say(f"{h.key}: re-opened because {why}")
            return self._decide(h.read())
        if st.state == "in_progress":
            if signals.read(h.paths.signal_file(h.plan_name, h.task.id, st.attempt)):
                return "signalled"
            if st.session and pid_alive(st.pane_pid) and tmux.has_session(st.session):
                return "attach"
            h.store.mark_interrupted(st)
            return "new"
        if st.state in HOLD_STATES:
            return "hold"
        if st.state == "failed" and st.reason != INTERRUPTED and st.attempts >= h.cfg.max_attempts:
            return "hold"
        if h.task.is_checkpoint:
            return "checkpoint"
        if st.state == "planned" and st.resume == "merge":
            return "merge"
        return "new"

    def _checkpoint(self, st: TaskState) -> TaskState:
        """Stop here for a human: write the checkpoint report and wait in awaiting_human."""
        h = self.h
        report = checkpoint_report(h.store, h.job.plan, h.task, h.cfg.main_branch)
        atomic_write(checkpoint_file(h.paths, h.plan_name, h.task.id), report)
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
        report = checkpoint_file(self.h.paths, self.h.plan_name, self.h.task.id)
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
