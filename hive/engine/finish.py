"""Ending one attempt: stop what is left of its agent, act on the outcome, merge
finished work, clean up only what git proves is safe."""

from __future__ import annotations

import functools
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from hive import logcap
from hive.adapters import worktrees
from hive.engine import hold
from hive.engine.attempt import retire_worktree, spare_for, worktree_for_merge
from hive.engine.bringback import bring_back, drop_private_gitdirs
from hive.engine.limits import pause_profile, pause_until
from hive.engine.merge import Checked, MergeRequest, MergeResult, MergeStatus, Recorders, Spot, merge
from hive.engine.review import Reviewer, end_reviewers, reviewer_of
from hive.engine.task import TaskContext, Worker
from hive.engine.taskenv import teardown_of, variables
from hive.lifecycle import Ended, Kind, Outcome, Resume, State, Worktree
from hive.output import first_line, prefixed, say
from hive.reviews import CheckRun, Review, changes_sent
from hive.sandbox import policy
from hive.store import names
from hive.store.state import TaskState


def finish(h: TaskContext, st: TaskState, outcome: Outcome, worker: Worker) -> TaskState:
    """Act on the outcome as lifecycle.OUTCOMES says (`worker`: the slot this process holds)."""
    spare = spare_for(h, worker)
    left = h.agent(st).stop(h.cfg.stop_patience, outcome.rule.ended_by_itself, prefixed(say, h.key))
    if left:
        say(f"{h.key}: warning: {left}")
    merging = outcome.rule.worktree == Worktree.MERGE
    brought = bring_back(h, st, approved=outcome.approved, keep_big=merging)
    if brought.bad:
        outcome = Outcome(Kind.BAD_FILE, brought.bad, outcome.output_tail)
    elif brought.held and merging:
        # its files never reached the repository: its private git directory keeps them for `hive approve`
        return _hold(h, st, brought.held)
    rule = outcome.rule
    if rule.worktree == Worktree.MERGE:
        return _merge(h, st, outcome, spare, worker)
    note = ""
    if rule.worktree == Worktree.REMOVE_IF_CLEAN and st.worktree and Path(st.worktree).exists():
        note = worktrees.remove_if_clean(h.root, Path(st.worktree), teardown_of(h), spare)
    elif rule.worktree == Worktree.RETIRE:
        retire_worktree(h, st, spare)
    reason = outcome.recorded_reason(h.key)
    changes: dict[str, Any] = {"permanent": rule.permanent, "pauses": 0}
    if not outcome.counts(st.history):
        changes["attempts_used"] = max(st.attempts_used - 1, 0)
    if outcome.history_outcome:
        changes["outcome"] = outcome.history_outcome
    if outcome.kind == Kind.ASKED:
        changes["resume"] = Resume.ANSWER
    if rule.state == State.PAUSED:
        until = pause_until(outcome.resume_at, st.pauses, time.time(), h.cfg.rate_limit_backoff)
        changes.update(resume_at=until, pauses=st.pauses + 1)
        pause_profile(h.paths, h.profile().name, until, reason)
        reason += f"; resumes at {time.strftime('%H:%M:%S', time.localtime(until))}"
    return h.end(st, rule.state, reason, outcome.output_tail, note, **changes)


def _merge(h: TaskContext, st: TaskState, outcome: Outcome, spare: Path | None, worker: Worker) -> TaskState:
    name = h.context_name()
    st, wt = worktree_for_merge(h, st, st.worker or "w1", spare)
    if st.resume == Resume.MERGING:
        # The agent's work is all on the branch; what is in the worktree besides it was
        # left by an interrupted merge (a checkout of main cut short leaves HEAD on the
        # branch but files and index of main: never commit that).
        worktrees.reset_to_branch(wt, st.branch)
    else:
        worktrees.restore_branch(wt, st.branch)
        worktrees.retire_context(wt, name)
        try:
            limit = None if outcome.approved else h.cfg.max_file_bytes
            worktrees.salvage(wt, f"hive: changes {h.key} left uncommitted", limit)
        except worktrees.Oversized as e:  # never hashed into the repository's objects unless approved
            return _hold(h, st, hold.reason((), e.files, h.cfg.max_file_mb, leaves=True))
        if worktrees.undo_context_changes(wt, st.base, name):
            worktrees.salvage(wt, f"hive: keep the project's {name} unchanged")
        st = h.update((State.IN_PROGRESS,), resume=Resume.MERGING, checks=())
    if not h.cfg.auto_merge and not outcome.approved:
        return h.end(
            st,
            State.AWAITING_HUMAN,
            f"review branch {st.branch} (worktree {h.rel(wt)}), then `hive approve {h.key}` to merge it",
            resume=Resume.REVIEW,
        )
    checks = ((("Verify", h.task.verify),) if h.task.verify else ()) + (
        (("test_command", h.cfg.test_command),) if h.cfg.require_tests else ()
    )
    req = MergeRequest(
        root=h.root,
        lock=h.paths.merge_lock,
        main_branch=h.cfg.main_branch,
        worktree=wt,
        branch=st.branch,
        message=f"hive: merge {h.key} — {h.task.title}\n\nbranch {st.branch}",
        checks=checks,
        check_timeout=h.task.timeout or h.cfg.task_timeout,
        # the ports of the worker that runs it, as its agent had them: a Verify may start its server
        env=variables(h.plan_name, h.task.id, h.root, names.worker_number(st.worker or "w1")),
        sandbox=policy.check(h.cfg, h.paths, (h.plan_name, h.task.id), wt) if checks else policy.UNCONFINED,
        # a human's `hive approve` takes the change as it is
        hold=hold.NONE if outcome.approved else hold.rules(h.cfg),
        review=Reviewer(h, worker, reviewer) if (reviewer := reviewer_of(h)) and not outcome.approved else None,
        log_check=functools.partial(_log_check, h),
        base_ref=h.main_ref,
        spot=Spot(
            h.key,
            h.paths.claim_lock(h.plan_name, h.task.id),
            h.paths.queue,
            h.paths.verified,
            tuple(h.paths.check_slot(n) for n in range(1, h.cfg.max_checks + 1)),
            h.cfg.merge_batch,
        ),
    )

    if h.cfg.pr_mode:  # the forge's client loads in pull-request mode only
        from hive.engine import pullrequest

        forge = h.forge()
        req = replace(req, publisher=pullrequest.publisher(h, st, forge))
    records = _Records(h, st, outcome.reason)
    result = merge(req, records.recorders())
    st = records.st
    if result.status == MergeStatus.PROPOSED and h.cfg.pr_mode:
        st = pullrequest.proposed(h, st, result, forge)
        if st.state == State.DONE:
            tidy_up(h, st, spare)
        return st
    return _merge_ended(h, st, result, wt, spare)


def _merge_ended(h: TaskContext, st: TaskState, result: MergeResult, wt: Path, spare: Path | None) -> TaskState:
    """What the merge step came to, recorded."""
    if result.status == MergeStatus.HELD:
        return _hold(h, st, result.reason, result.files)
    if result.status in (MergeStatus.CHANGES, MergeStatus.REVIEW_FAILED):
        return _reviewed(h, st, result)
    if result.status == MergeStatus.MERGED:
        tidy_up(h, st, spare)
        where = f"{h.cfg.forge_remote}/{h.cfg.base_branch} (on the forge)" if h.cfg.pr_mode else h.cfg.main_branch
        say(f"{h.key}: done — merged into {where} as {result.commit[:10]} ({len(result.files)} file(s))")
        return st
    if result.status == MergeStatus.CHECK_FAILED:
        return h.end(st, State.FAILED, result.reason, result.output_tail, outcome=Ended.CHECK_FAILED)
    if result.status == MergeStatus.CONFLICT and h.cfg.resolve_conflicts and not h.is_script:
        if st.attempts_used < h.cfg.max_attempts:
            # the next attempt is the agent's, on its branch: merge main, resolve, verify, `hive done`
            reason = f"{result.reason}; a resolve attempt follows"
            return h.end(st, State.FAILED, reason, files=result.files, resume=Resume.RESOLVE, outcome=Ended.CONFLICT)
    # The agent's work is safe on its branch: `hive retry` redoes only the merge
    # (after the human resolved the conflict on the branch or cleaned the checkout).
    reason = result.reason + (by_hand(h, wt) if result.status == MergeStatus.CONFLICT else "")
    return h.end(st, State.BLOCKED, reason, result.output_tail, files=result.files, resume=Resume.MERGE)


def _hold(h: TaskContext, st: TaskState, why: str, files: tuple[str, ...] = ()) -> TaskState:
    """Its change waits for a human (engine/hold.py), its worktree and branch kept as they are."""
    reason = (
        f"{why} — `hive approve {h.key}` merges it as it is; `hive retry {h.key}` runs it again, "
        f"told to leave them alone (branch {st.branch})"
    )
    # its history entry keeps `why`: what its next attempt is told if the human says `hive retry`
    return h.end(st, State.AWAITING_HUMAN, reason, files=files, resume=Resume.HELD, outcome=Ended.HELD, held=why)


def _reviewed(h: TaskContext, st: TaskState, result: MergeResult) -> TaskState:
    """Its review did not approve it: its author tries again, told why (an attempt that does not
    count against max_attempts), until `[merge] max_reviews` rounds of changes; then, or when its
    reviewer failed twice, it waits for a human with every review so far."""
    said = f'hive approve {h.key}` merges it as it is; `hive changes {h.key} --reason "..."` sends it back'
    if result.status == MergeStatus.REVIEW_FAILED:
        reason = f"its review failed twice ({first_line(result.reason)}) — `{said}"
        return h.end(st, State.AWAITING_HUMAN, reason, resume=Resume.REVIEW)
    sent = changes_sent(st.reviews)  # the merge step recorded the latest review
    if sent > h.cfg.max_reviews:
        reason = (
            f"its reviews asked for changes {sent} times ([merge] max_reviews = {h.cfg.max_reviews}); the latest: "
            f"{first_line(result.reason)} — `{said}"
        )
        return h.end(st, State.AWAITING_HUMAN, reason, resume=Resume.REVIEW)
    reason = f"its review asked for changes: {first_line(result.reason)}"
    used = max(st.attempts_used - 1, 0)  # a review's round is not a failed attempt
    return h.end(st, State.FAILED, reason, outcome=Ended.CHANGES, attempts_used=used, resume="")


class _Records:
    """What each step of a merge records, and the state the next one builds on (`st`)."""

    def __init__(self, h: TaskContext, st: TaskState, reason: str) -> None:
        self.h, self.st, self.reason = h, st, reason

    def recorders(self) -> Recorders:
        return Recorders(
            self.intent, self.merged, self.forget, self.checked, self.note, self.checking, self.reviewing, self.reviewed
        )

    def intent(self, commit: str) -> None:
        self.st = self.h.update((State.IN_PROGRESS,), merging=commit, event="merging")

    def merged(self, r: MergeResult) -> None:
        self.st = record_merged(self.h, self.st, r.commit, r.files, self.reason or r.reason)

    def forget(self) -> None:
        self.st = self.h.update((State.IN_PROGRESS,), merging="")

    def checked(self, c: Checked) -> None:
        # a batch's run is recorded by its leader, with the tasks it verified
        record = CheckRun(c.base, round(c.seconds, 3), c.passed, c.batch)
        details = {**record.to_json(), "merged": c.merged}
        self.st = self.h.update(
            (State.IN_PROGRESS,), event="checked", details=details, checks=(*self.st.checks, record)
        )
        verdict = "passed" if c.passed else "failed"
        whose = f"the checks of its batch ({', '.join(c.batch)})" if c.batch else "its checks"
        say(f"{self.h.key}: {whose} {verdict} on {c.base[:10]} ({c.seconds:.1f} s)")

    def checking(self) -> None:  # where the timeline's queue ends and its check begins (hive timeline)
        self.h.store.mark(self.st, "checking")

    def reviewing(self) -> None:  # where its check ends and its review begins (hive timeline)
        self.h.store.mark(self.st, "reviewing")

    def reviewed(self, review: Review) -> None:
        h = self.h
        reviews = (*self.st.reviews, review)
        self.st = h.update((State.IN_PROGRESS,), reviews=reviews, event="reviewed", details=review.details())
        said = f" — {first_line(review.text)}" if review.text else ""
        say(f"{h.key}: review {review.round} by {review.reviewer}: {review.verdict}{said}")

    def note(self, text: str) -> None:
        say(f"{self.h.key}: {text}")


def by_hand(h: TaskContext, wt: Path) -> str:
    """How a human resolves a conflict the agents could not."""
    return (
        f"; resolve it by hand: `cd {wt} && git merge {h.cfg.main_branch}`, fix the files, "
        f"`git commit`, then `hive retry {h.key}` merges it"
    )


def record_merged(h: TaskContext, st: TaskState, commit: str, files: tuple[str, ...], reason: str) -> TaskState:
    return h.store.close_attempt(
        st,
        State.DONE,
        reason,
        merge_commit=commit,
        files=tuple(files),
        merging="",
        task_hash=h.task.text_hash,
        resume="",
        feedback="",
        event="merged",
    )


def _log_check(h: TaskContext, label: str, command: str, code: int, output: str) -> None:
    """A check's output in the task's log, under a header of its own (`hive logs` shows it)."""
    log, cap = h.paths.log_file(h.plan_name, h.task.id), h.cfg.log_max_mb * logcap.MB
    logcap.section(log, f"{h.key} {label} (exit {code}): {command}", cap)
    logcap.append(log, output.encode(errors="replace") + (b"" if output.endswith("\n") or not output else b"\n"), cap)


def tidy_up(h: TaskContext, st: TaskState, spare: Path | None = None) -> None:
    """Remove the worktree (or keep it as the worker's `spare`) and every attempt's branch, each
    only once git shows it is in main."""
    left = worktrees.remove_merged_leftovers(h.root, st, h.main_ref, teardown=teardown_of(h), spare=spare)
    for note in left.notes:
        say(f"{h.key}: {note}")
    if left.branches:
        say(f"{h.key}: {worktrees.superseded_note(left.branches, h.main_ref)}")
        h.update((State.DONE,), kept_branches=tuple(left.branches))
    drop_private_gitdirs(h, st.attempt + 1)
    end_reviewers(h)
