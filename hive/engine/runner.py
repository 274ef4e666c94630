"""One task's life — the action behind each doit task (SPEC "One task's run").

claim → decide from the recorded state → (start an attempt | re-attach | merge
only) → wait → finish, with every step recorded in the state store first, so a
run killed between any two lines can be resumed by the next one.
"""

from __future__ import annotations

import multiprocessing
import os
from contextlib import ExitStack
from pathlib import Path

from doit.exceptions import TaskError, TaskFailed

from hive import notify
from hive.adapters import git
from hive.buglog import at_the_edge
from hive.engine import attempt
from hive.engine.decide import Decision, Facts, Step, decide
from hive.engine.finish import finish, record_merged, tidy_up
from hive.engine.limits import run_budget_reached, wait_for_profile
from hive.engine.slots import Slot
from hive.engine.supervise import signalled
from hive.engine.task import Job, TaskContext, Worker
from hive.errors import CommandError, HiveError, user_message
from hive.executors.standing import Where, interrupted, next_step, standing
from hive.lifecycle import STATES, Ended, Kind, Outcome, Resume, State, verdict
from hive.output import emit, first_line, prefixed, say
from hive.reports.checkpoint import checkpoint_kind, checkpoint_report, how_to_answer
from hive.store import questions
from hive.store.files import FileLock, atomic_write
from hive.store.paths import Paths
from hive.store.questions import asked_lines
from hive.store.state import NEW_PR, TaskState, history_entry

__all__ = ["Job", "run_doit_task"]


def run_doit_task(job: Job) -> bool | TaskFailed | TaskError:
    """doit python-action: True when the task is done and merged, else TaskFailed."""
    parent = os.getppid()
    try:
        return TaskRunner(job).run()
    except KeyboardInterrupt:
        say(stopped_watching(TaskContext(job)))
        raise
    except Exception as e:  # noqa: BLE001 — the one error edge: user errors as task failures, bugs to the log
        failure = at_the_edge(e, Paths(job.root).debug_log, job.key)
        return (TaskError if failure.bug else TaskFailed)(f"{job.key}: {failure.message}")
    finally:
        _exit_if_orphaned(parent)


def stopped_watching(h: TaskContext) -> str:
    """The one line a run that is stopped (Ctrl-C, SIGTERM) says about a task it ran."""
    st = h.read()
    key = h.key
    if st.state != State.IN_PROGRESS:
        return f"{key}: stopped watching — it is {st.state}; the next `doit` goes on from there"
    where = standing(h.paths, h.executor, st)
    stop_it = f" (`hive stop {key}` stops it)" if where.kind == Where.RUNNING and where.signal is None else ""
    return f"{key}: stopped watching — {next_step(where, st.session, h.executor.kind, watched=True)}{stop_it}"


def _exit_if_orphaned(parent: int) -> None:
    """A doit worker whose doit was killed would wait forever for its next job:
    once its task is finished (and its locks released), it leaves."""
    if multiprocessing.parent_process() is not None and os.getppid() != parent:
        say("doit is gone; this worker finished its task and exits")
        os._exit(0)


class TaskRunner:
    def __init__(self, job: Job) -> None:
        self.h = TaskContext(job)

    def run(self) -> bool | TaskFailed:
        h = self.h
        if not h.job.plan.approved:
            return TaskFailed(f"{h.key}: plan is draft: run `hive approve {h.rel(h.job.plan.path)}` first")
        if not git.try_rev_parse(h.root, h.main_ref):
            if h.cfg.pr_mode:
                return TaskFailed(
                    f"{h.key}: the forge's {h.cfg.base_branch!r} was not fetched ({h.main_ref}): check that "
                    f"`git fetch {h.cfg.forge_remote} {h.cfg.base_branch}` works, or set [forge] base"
                )
            return TaskFailed(
                f"{h.key}: branch {h.cfg.main_branch!r} does not exist or has no commits; "
                f"commit something first or set [merge] main_branch in .hive/config.toml"
            )
        claim = FileLock(h.paths.claim_lock(h.plan_name, h.task.id))
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
        if st.state == State.IN_PROGRESS:
            # an error while merging is retried as a merge: the agent's work is on its branch
            st = h.end(st, State.FAILED, f"error: {message}", resume=st.resume if st.only_merge else "")
            notify.task_stopped(h, st)
        return TaskFailed(f"{h.key}: {message}")

    def _run_claimed(self) -> bool | TaskFailed:
        h = self.h
        while True:
            st = h.read()
            if st.state == State.AWAITING_HUMAN and (h.job.plan.issues or h.cfg.pr_mode):
                st = self._answered_on_the_forge(st)
            d = decide(st, self._facts(st), h.task.is_checkpoint, h.cfg.max_attempts)
            st = self._apply(d, st)
            if d.step in (Step.DONE, Step.MERGED_ALREADY):
                return True
            if d.step == Step.FOLLOW:
                after = self._after(self._follow(st))
                if after is None:
                    continue
                return after
            if d.step == Step.STOPPED:
                return self._stopped(st, news=False)  # stopped in an earlier run: already told
            if d.step == Step.CHECKPOINT:
                return self._stopped(self._checkpoint())
            if d.step == Step.NEW:
                over = run_budget_reached(h)
                if over:
                    notify.run_budget(h, over)  # the run's reporter says it, from the failure
                    return TaskFailed(f"{h.key}: not started — {over}")
                if not h.is_script:
                    wait_for_profile(h, h.profile().name)
            with ExitStack() as held:
                self._exclusion(held)
                worker = held.enter_context(Slot(h.paths, h.cfg.max_workers, h.key))
                outcome = self._step(d, h.read(), worker)
                st = finish(h, h.read(), outcome, worker)
            after = self._after(st)
            if after is not None:
                return after

    def _answered_on_the_forge(self, st: TaskState) -> TaskState:
        """A checkpoint `/approve`d or `/reject`ed on its issue, or a question `/answer`ed there
        while no run watched: recorded as `hive approve` and `hive answer` record them."""
        from hive.engine import issues  # the forge's client loads only for what is on a forge

        h = self.h
        if h.task.is_checkpoint and issues.decided(h, st):
            return h.read()
        if st.resume == Resume.ANSWER and h.cfg.pr_mode:
            asked = questions.waiting(questions.load(h.paths, h.plan_name, h.task.id))
            if asked is not None:
                issues.answers(h, asked)
        return h.read()

    def _told_on_its_issue(self, st: TaskState) -> None:
        """A task of a plan from issues that stopped (pull-request mode): its issue says why."""
        h = self.h
        if st.state in (State.FAILED, State.BLOCKED, State.TOO_BIG) and h.cfg.pr_mode and h.job.plan.issues:
            from hive.engine import issues

            issues.tell(h, st, issues.status_line(h, st))

    def _after(self, st: TaskState) -> bool | TaskFailed | None:
        """What the run does once an attempt (or a look at its PR) ended in `st`: the doit task's
        result, or None to go on with the next attempt."""
        h = self.h
        if st.state == State.DONE:
            notify.task_done(h, st)
            return True
        if st.state == State.PAUSED:
            notify.task_paused(h, st)
            return None  # not an attempt that counts: wait for its resume time, then go on
        if st.resume == Resume.ANSWER and self._answered():
            say(f"{h.key}: its question was answered as its agent ended; the next attempt goes on with it")
            return None
        if STATES[State(st.state)].retried and not st.permanent and st.attempts_used < h.cfg.max_attempts:
            say(self._again(st))
            return None
        return self._stopped(st)

    def _follow(self, st: TaskState) -> TaskState:
        """Its PR, as the forge has it now (a run before opened it): merged, sent back, or still open."""
        from hive.engine import pullrequest  # PR mode only: the forge client loads when a PR is followed

        h = self.h
        say(f"{h.key}: looking at PR #{st.pr} ({st.reason})")
        st = pullrequest.follow(h, st, h.forge())
        if st.state == State.DONE:
            tidy_up(h, st)
        return st

    def _again(self, st: TaskState) -> str:
        """What the run says as it starts the task's next attempt."""
        h = self.h
        if st.history and st.history[-1].get("outcome") == Ended.CHANGES:
            return f"{h.key}: attempt {st.attempt + 1} makes the changes its review asked for"
        if st.history and st.history[-1].get("outcome") == Ended.CI_FAILED:
            return f"{h.key}: attempt {st.attempt + 1} fixes what CI said on PR #{st.pr} (round {st.ci_rounds})"
        return (
            f"{h.key}: attempt {st.attempt} failed ({first_line(st.reason)}); trying again "
            f"({st.attempts_used} of {h.cfg.max_attempts} attempts used)"
        )

    def _facts(self, st: TaskState) -> Facts:
        """What git, the executor and the signal files say about the recorded state."""
        h = self.h

        def on_main(commit: str) -> bool:
            return git.is_ancestor(h.root, commit, h.main_ref)

        return Facts(
            merged_already=bool(st.merging) and st.state != State.DONE and on_main(st.merging),
            outdated=""
            if st.state == State.IN_PROGRESS
            else verdict(st, h.task.text_hash, on_main, h.cfg.main_branch).outdated,
            standing=standing(h.paths, h.executor, st) if st.state == State.IN_PROGRESS else None,
            answered=st.resume == Resume.ANSWER and self._answered(),
        )

    def _answered(self) -> bool:
        """No question of the task waits for its answer (questions.waiting)."""
        return questions.waiting(questions.load(self.h.paths, self.h.plan_name, self.h.task.id)) is None

    def _apply(self, d: Decision, st: TaskState) -> TaskState:
        """Record what the decision found before acting on it."""
        h = self.h
        if d.step == Step.MERGED_ALREADY:
            files = tuple(git.changed_files(h.root, f"{st.merging}^1", st.merging))
            st = record_merged(h, st, st.merging, files, "merged before the last run stopped")
            h.agent(st).close()
            tidy_up(h, st)
            say(f"{h.key}: done — its merge {st.merge_commit[:10]} landed before the last run stopped")
        if d.token is not None:  # the last run died before it recorded it
            st = h.update((State.IN_PROGRESS,), agent_token=d.token)
        if d.interrupted:
            st = interrupted(h.paths, h.executor, st, h.cfg.stop_patience, prefixed(say, h.key))
        if d.reopen:
            st = h.update(
                (st.state,),
                state=State.PLANNED,
                attempts_used=0,
                reason="",
                permanent=False,
                merge_commit="",
                resume="",
                # the next attempt's brief says why it runs again
                history=(*st.history, history_entry(st, Ended.REOPENED, d.reopen)) if st.attempt else st.history,
                event=f"reopened: {d.reopen}",
                **(NEW_PR if st.state == State.DONE else {}),
            )
            say(f"{h.key}: re-opened because {d.reopen}")
        return st

    def _step(self, d: Decision, st: TaskState, worker: Worker) -> Outcome:
        h = self.h
        if d.step == Step.ATTACH:
            say(f"{h.key}: re-attaching to its running agent ({h.executor.kind} session {st.session})")
            return attempt.watch(h, st)
        if d.signal is not None:  # Step.SIGNALLED
            if d.signal.exited:
                found = f"its script finished (exit 0) in attempt {st.attempt} while no run watched"
            elif d.signal.kind == Kind.BAD_FILE:
                found = f"that {d.signal.reason} (attempt {st.attempt})"
            else:
                found = f"its `hive {d.signal.kind}` signal from attempt {st.attempt} (sent while no run watched)"
            say(f"{h.key}: found {found}")
            return signalled(d.signal)
        if d.step == Step.MERGE:
            st = attempt.start_merge_only(h, st, worker)
            # the approval is this outcome's: an attempt after it (its merge failed) waits for a review of its own
            return Outcome(Kind.DONE, st.reason, approved=True)
        try:
            return attempt.watch(h, attempt.start(h, st, worker))
        except (HiveError, CommandError) as e:
            return Outcome(Kind.SPAWN_FAILED, f"agent_spawn_failed: could not start: {e}")

    def _checkpoint(self) -> TaskState:
        """Stop here for a human: write the checkpoint report and wait in awaiting_human."""
        h = self.h
        self._write_report()
        kind = checkpoint_kind(h.task)
        forge = f", or `/approve` on issue #{h.task.id}" if h.job.plan.issues else ""
        st = h.update(
            (State.PLANNED,),
            state=State.AWAITING_HUMAN,
            task_hash=h.task.text_hash,
            answer="",
            reason=f"{kind}: answer with `{how_to_answer(h.key, h.task)}`{forge}",
            event=f"checkpoint reached ({kind})",
        )
        if h.job.plan.issues:
            from hive.engine import issues

            st = issues.checkpoint_reached(h, st)
        return st

    def _write_report(self) -> str:
        """The checkpoint report as things stand now: a run after the one that reached the
        checkpoint shows today's progress, not the first run's (issue 43)."""
        h = self.h
        report = checkpoint_report(h.store, h.job.plan, h.task, h.cfg.main_branch)
        atomic_write(h.paths.checkpoint_file(h.plan_name, h.task.id), report, durable=False)
        return report

    def _exclusion(self, held: ExitStack) -> None:
        """Tasks sharing a Module never overlap, and a `Parallel-safe: no` task runs
        alone: locks, so the rule holds across workers and across doit processes."""
        h = self.h
        alone = FileLock(h.paths.parallel_lock, shared=h.task.parallel_safe)
        alone.acquire(
            on_wait=lambda _: say(
                f"{h.key}: waiting — "
                + (
                    "a task marked Parallel-safe: no is running"
                    if h.task.parallel_safe
                    else "it is marked Parallel-safe: no and runs alone"
                )
            )
        )
        held.callback(alone.release)
        if h.task.module:
            module = FileLock(h.paths.module_lock(h.task.module))
            module.acquire(
                on_wait=lambda pid: say(
                    f"{h.key}: waiting for another task in module {h.task.module!r} (pid {pid}) to finish"
                )
            )
            held.callback(module.release)

    def _stopped(self, st: TaskState, news: bool = True) -> TaskFailed:
        key = self.h.key
        if news:
            notify.task_stopped(self.h, st)
            if (
                st.state in (State.FAILED, State.BLOCKED, State.TOO_BIG)
                and self.h.cfg.pr_mode
                and self.h.job.plan.issues
            ):
                from hive.engine import issues

                st = issues.tell(self.h, st, issues.status_line(self.h, st))
        if st.state == State.AWAITING_HUMAN and self.h.task.is_checkpoint:
            emit(f"\n{self._write_report()}\n")
        lines = [f"{key} is {st.state}: {st.reason}", STATES[State(st.state)].hint.format(key=key)]
        asked = questions.waiting(questions.load(self.h.paths, self.h.plan_name, self.h.task.id))
        if st.resume == Resume.ANSWER and asked is not None:
            lines += asked_lines(asked.text, asked.details, asked.options, questions.answer_command(key, asked))
        if st.state == State.BLOCKED and st.worktree and Path(st.worktree).exists():
            lines.append(f"its work is kept in {st.worktree} (branch {st.branch})")
        if st.output_tail:
            lines.append("last output:\n" + st.output_tail)
        return TaskFailed("\n".join(x for x in lines if x))
