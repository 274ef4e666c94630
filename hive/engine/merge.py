"""Merging a finished task into main: main moves one merge at a time across all workers.

The merge commit is built in git's object store (git 2.38's `merge-tree`: no checkout) and
published by a fast-forward of the user's checkout (git refuses rather than overwrite their
uncommitted or untracked work) or, when main is not checked out, by a compare-and-swap of
the ref.

A task with checks (Verify, test_command) goes through the merge queue (store/queue.py):
its merge commit is built on main plus every task queued ahead of it and verified at once,
off the merge lock, while the others verify theirs; it is published when its turn comes, if
what it was built on is then main — else it is built and verified again. Nothing reaches main
whose exact tree was not verified. With `[merge] batch = N` the tasks that finish while the
checks ahead of them run are verified together, by one run on the last one's merge commit, and
main moves over all of them at once; a batch that fails is bisected (engine/batch.py,
store/queue.py). A task without checks merges at once when nothing is queued, else takes its
turn. With a git older than 2.38 each merge is one step under the lock, built and verified in
the task's worktree.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from hive import crashsafe
from hive.adapters import git, gitmerge
from hive.crashsafe import crash_point, uninterruptible
from hive.engine import batch, hold
from hive.output import tail
from hive.sandbox.policy import UNCONFINED, Confined
from hive.store import queue
from hive.store.files import append_line, locked
from hive.store.queue import CHECKING, FAILED, PASSED, PENDING, Entry

MAX_RACES = 5
POLL = 0.1  # how often a queued task looks whether its turn has come


@dataclass(frozen=True)
class Spot:
    """A task's place in the merge queue."""

    key: str  # plan:ID
    claim: Path  # its claim lock (its entry lives while a worker holds it)
    file: Path  # the queue (.hive/queue.json)
    verified: Path  # where each tree whose checks passed is recorded (.hive/verified.jsonl)
    check_slots: tuple[Path, ...] = ()  # at most this many checks at once ([merge] max_checks); () = no cap
    batch: int = 1  # up to this many tasks verified by one run of checks ([merge] batch)


@dataclass(frozen=True)
class ReviewAsk:
    """What a review (engine/review.py) reads: a task's merge commit, as the queue would publish it."""

    worktree: str  # the task's checkout, where the merge commit is checked out
    merged: str
    base: str  # what it is built on: main, or the task ahead of it in the queue
    branch: str  # the task's branch commit: a verdict is its change's
    checks: tuple[tuple[str, str, str], ...] = ()  # (label, command, output) of the checks it passed


@dataclass(frozen=True)
class Reviewed:
    verdict: str  # "approved" | "changes" | "failed" (engine/review.py)
    text: str = ""


@dataclass(frozen=True)
class MergeRequest:
    root: Path
    lock: Path
    main_branch: str
    worktree: Path
    branch: str
    message: str
    checks: tuple[tuple[str, str], ...]  # (label, bash command) run on the merged result
    check_timeout: float
    env: dict[str, str]
    # how the checks run: in a sandbox (hive.sandbox), since they run code the agent may have
    # written, or as the user's own commands
    sandbox: Confined = UNCONFINED
    spot: Spot | None = None  # its place in the merge queue; None: one step under the lock
    hold: hold.Rules = hold.NONE  # what its change may not do without a human (none once one approved it)
    # its change's review, once its checks pass (engine/review.py); None: not reviewed
    review: Callable[[ReviewAsk], Reviewed] | None = None
    # where each check's whole output goes as it ends (the task's log: `hive logs` shows it, issue 43)
    log_check: Callable[[str, str, int, str], None] | None = None  # (label, command, exit code, output)


class MergeStatus(StrEnum):
    MERGED = "merged"  # main moved to the merged tree (or already held the branch)
    CONFLICT = "conflict"  # the branch and main conflict: nothing changed
    REFUSED = "refused"  # git or the deletion guard refused it: nothing changed; the reason says why
    CHECK_FAILED = "check_failed"  # Verify / test_command failed on the merged result: nothing changed
    # verified, but its change does what a task may not do on its own (engine/hold.py): it waits
    # for a human, main untouched
    HELD = "held"
    CHANGES = "changes"  # its checks passed, its review asked for changes (engine/review.py): main untouched
    REVIEW_FAILED = "review_failed"  # its checks passed, its reviewer failed twice: a human decides


@dataclass(frozen=True)
class MergeResult:
    status: MergeStatus
    commit: str = ""
    files: tuple[str, ...] = ()
    reason: str = ""
    output_tail: str = ""


@dataclass(frozen=True)
class Checked:
    """One run of a task's checks: on which base (a batch's: its first task's), for how long, with
    what result."""

    base: str
    merged: str
    seconds: float
    passed: bool
    batch: tuple[str, ...] = ()  # the tasks a batch's run verified, in queue order (): its own alone


def _nothing(*_: object) -> None:
    return None


@dataclass(frozen=True)
class Recorders:
    # just before main moves: the task's merge commit, on main once main moved (a batch's first
    # task records its own; main moves past it to the batch's last)
    intent: Callable[[str], object]
    merged: Callable[[MergeResult], object]  # just after
    forget: Callable[[], object]  # main certainly did not move
    checked: Callable[[Checked], object] = _nothing  # its checks ran (in the queue)
    note: Callable[[str], object] = _nothing  # what it waits for, said once
    # its checks begin (the timeline's check phase), or, merged as one step, the lock is its
    checking: Callable[[], object] = _nothing
    reviewing: Callable[[], object] = _nothing  # its review begins (the timeline's review phase)


def merge(req: MergeRequest, rec: Recorders) -> MergeResult:
    """Merge the task branch into main. `rec.intent(commit)` is called just before
    main moves and `rec.merged(result)` just after, with Ctrl-C held off between
    them; a kill -9 in between leaves the intent, which the next run resolves. A task
    that reached main in a batch another task's worker published gets `rec.merged` alone
    (killed before it, its next run finds its merge commit on main)."""
    # asked before the lock: every merge waits while one is held
    identity = git.committer(req.root)
    if req.spot is not None and gitmerge.merges_without_worktree():
        # the branch does not move while its task is merged: resolved before the lock too
        branch = git.rev_parse(req.root, f"refs/heads/{req.branch}")
        # `git merge` signs as the user configured; `commit-tree` only when told
        sign = gitmerge.signs_commits(req.root)
        if not req.checks and req.review is None:
            with locked(req.lock):
                if not queue.living(queue.load(req.spot.file)):  # nothing waits: at once
                    return _races(req, rec, identity, branch, sign)
        return _queued(req, req.spot, rec, (identity, branch, sign))
    in_worktree = bool(req.checks) or not gitmerge.merges_without_worktree()
    branch = "" if in_worktree else git.rev_parse(req.root, f"refs/heads/{req.branch}")
    sign = not in_worktree and gitmerge.signs_commits(req.root)
    with locked(req.lock):
        return _races(req, rec, identity, branch, sign)


def _races(req: MergeRequest, rec: Recorders, identity: tuple[str, ...], branch: str, sign: bool) -> MergeResult:
    """The merge as one step, the lock held: tried again while main moves under it."""
    rec.checking()
    main_ref = f"refs/heads/{req.main_branch}"
    for _ in range(MAX_RACES):
        result = _attempt(req, main_ref, rec, identity, branch, sign)
        if result is not None:
            return result
    return MergeResult(
        MergeStatus.REFUSED,
        reason=f"{req.main_branch} kept moving during {MAX_RACES} merge attempts; run `hive retry` when it is quiet",
    )


# --- the queue ------------------------------------------------------------------------------

Making = tuple[tuple[str, ...], str, bool]  # (committer identity, the branch's commit, sign?)


def _queued(req: MergeRequest, spot: Spot, rec: Recorders, making: Making) -> MergeResult:
    """Join the queue, build and verify, and publish at its turn (see the module's doc)."""
    said: set[str] = set()

    def note(text: str) -> None:
        if text not in said:
            said.add(text)
            rec.note(text)

    while True:
        placed = _place(req, spot, rec, making)
        if isinstance(placed, MergeResult):
            return placed
        if isinstance(placed, _Held):
            return _verify_held(req, spot, rec, placed, note)
        if isinstance(placed, str):  # waits for the tasks ahead
            note(placed)
            crashsafe.pause(POLL)
            continue
        entry = placed
        if entry.checks == PENDING and entry.leads:
            checked = _verify(req, spot, rec, entry, note)
            if checked is None:
                continue
            if isinstance(checked, MergeResult):
                return checked
            entry = checked
        result = _turn(req, spot, rec, entry, note)
        if result is not None:
            return result


def _load(spot: Spot) -> list[Entry]:
    """The queue as the living workers left it, each group ended by its leader (queue.regroup)."""
    return queue.regroup(queue.living(queue.load(spot.file)))


@dataclass(frozen=True)
class _Held:
    """A task's merge commit that waits for a human once verified (engine/hold.py): out of the
    queue, so that no task is built on it."""

    base: str
    merged: str
    files: tuple[str, ...]
    reason: str


def _place(req: MergeRequest, spot: Spot, rec: Recorders, making: Making) -> Entry | _Held | MergeResult | str:
    """Its entry, built on what is ahead of it now (under the lock); a result if it cannot be
    merged at all; its merge commit if a human must see it first; or what it waits for."""
    identity, branch, sign = making
    with locked(req.lock):
        entries = queue.join(_load(spot), spot.key, spot.claim, branch)
        me = queue.find(entries, spot.key)
        assert me is not None
        main = git.rev_parse(req.root, f"refs/heads/{req.main_branch}")
        base = queue.base_for(entries, spot.key, main)
        if base is None:
            queue.save(spot.file, entries)
            return "waiting for the task ahead of it in the merge queue to be built"
        if me.built and me.base == base:
            if me.checks == CHECKING:  # a run of its checks that a stopped run left: none runs now
                me = replace(me, checks=PENDING)
            queue.save(spot.file, queue.put(entries, me))
            return me
        if git.is_ancestor(req.root, branch, main):
            queue.save(spot.file, queue.leave(entries, spot.key))
            result = _on_main(req, branch, main)
            rec.merged(result)
            return result
        built = _build(req, base, branch, identity, sign)
        changes = git.changes(req.root, base, built) if isinstance(built, str) else []
        lost = _unexpected_deletions(req, base, {p for s, p in changes if s == "D"})
        if lost:
            built = _deleting(lost)
        if isinstance(built, MergeResult):
            queue.save(spot.file, queue.leave(entries, spot.key))
            if (
                built.status == MergeStatus.CONFLICT
                and base != main
                and not gitmerge.merge_tree(req.root, main, branch)[1]
            ):
                # only with tasks queued ahead: it joins again behind them once they have moved on
                return f"it conflicts with a task ahead of it in the merge queue ({', '.join(built.files[:5])})"
            _back_to_branch(req)
            return built
        files = tuple(path for _, path in changes)
        held = _held(req, base, built, files)
        if held:
            queue.save(spot.file, queue.leave(entries, spot.key))
            return _Held(base, built, files, held)
        checks = PENDING if req.checks or req.review else PASSED
        me = replace(
            me,
            base=base,
            merged=built,
            files=files,
            checks=checks,
            reason="",
            output="",
            commands=req.checks,
            reviewed=req.review is not None,
        )
        entries = queue.rebuilt(queue.put(entries, me), me, spot.batch)
        queue.save(spot.file, entries)
        return queue.find(entries, spot.key) or me


def _on_main(req: MergeRequest, branch: str, main: str) -> MergeResult:
    """A branch main holds already: merged with its batch while no worker of its lived to record
    it (its merge commit is on main's first-parent line), or with nothing to merge."""
    commit = git.merge_of(req.root, main, branch)
    if not commit:
        return MergeResult(MergeStatus.MERGED, commit=main, files=(), reason="no changes to merge")
    files = tuple(git.changed_files(req.root, f"{commit}^1", commit))
    return MergeResult(MergeStatus.MERGED, commit=commit, files=files, reason="merged before the last run stopped")


def _held(req: MergeRequest, base: str, merged: str, files: tuple[str, ...]) -> str:
    """Why this merge of the task (`merged`, on `base`; its `files`) waits for a human ("": it
    does not): Hive's own files among them, or a file over the size limit among its objects."""
    protected = hold.touched(req.hold.protected, files)
    if hold.PYPROJECT in files and hold.guards_doit(req.hold.protected) and hold.PYPROJECT not in protected:
        before, after = (git.show_file(req.root, rev, hold.PYPROJECT) for rev in (base, merged))
        if hold.doit_table(before) != hold.doit_table(after):
            protected.append(hold.DOIT_TABLE)
    limit = req.hold.max_bytes
    big = git.big_files(req.root, merged, base, limit) if limit is not None else []
    return hold.reason(protected, big, req.hold.max_mb)


def _verify_held(
    req: MergeRequest, spot: Spot, rec: Recorders, held: _Held, note: Callable[[str], None]
) -> MergeResult:
    """Its checks on its merge commit (a check slot taken, off the lock, as the queue's), then
    its result: HELD for a human to look at, or CHECK_FAILED as any task's."""
    if req.checks:
        git.checkout(req.worktree, held.merged, detach=True, force=True)
        rec.checking()
        while not (taken := batch.take_slot(spot.check_slots))[0]:
            note(f"waiting for a check slot ([merge] max_checks = {len(spot.check_slots)})")
            crashsafe.pause(POLL)
        slot, started = taken[1], time.monotonic()
        try:
            failed, _ = _run_checks(req, req.checks)
        finally:
            if slot is not None:
                slot.release()
        rec.checked(Checked(held.base, held.merged, time.monotonic() - started, failed is None))
        _back_to_branch(req)
        if failed is not None:
            return MergeResult(MergeStatus.CHECK_FAILED, reason=failed[0], output_tail=failed[1])
    return MergeResult(MergeStatus.HELD, commit=held.merged, files=held.files, reason=held.reason)


def _still(
    req: MergeRequest, spot: Spot, rec: Recorders, entry: Entry
) -> tuple[list[Entry], Entry] | MergeResult | None:
    """The queue and its entry (under the lock), if that is still the one built as `entry`;
    else what `_gone` says: merged with its batch, or None (it is built again)."""
    entries = _load(spot)
    me = queue.find(entries, spot.key)
    return _gone(req, rec, entry) if me is None or me.merged != entry.merged else (entries, me)


def _gone(req: MergeRequest, rec: Recorders, entry: Entry) -> MergeResult | None:
    """Its entry left the queue, or was built again: merged if its batch reached main (the first
    of the batch moved main over every member's merge commit), else None: it is built again."""
    if not entry.merged or not git.is_ancestor(req.root, entry.merged, f"refs/heads/{req.main_branch}"):
        return None
    result = MergeResult(MergeStatus.MERGED, commit=entry.merged, files=entry.files)
    rec.merged(result)
    return result


def _verify(
    req: MergeRequest, spot: Spot, rec: Recorders, entry: Entry, note: Callable[[str], None]
) -> Entry | MergeResult | None:
    """The checks of the group it leads, on its merge commit, off the lock: its entry as they
    left it (or as a member, if a task joined its group first); its result if its batch reached
    main meanwhile; None if it must be built again."""
    git.checkout(req.worktree, entry.merged, detach=True, force=True)
    crash_point("checking")
    rec.checking()
    run = _start(req, spot, rec, entry, note)
    if not isinstance(run, batch.Run):
        return run
    if run.batch:
        crash_point("batch-checking")
    started = time.monotonic()
    reviewed = None
    try:
        failed, outputs = _run_checks(req, batch.checks_of(run.group, req.checks))
        # a batch's base is its first task's: the main (and tasks ahead) it was verified on top of
        rec.checked(Checked(run.group[0].base, entry.merged, time.monotonic() - started, failed is None, run.batch))
        if failed is None and req.review is not None:  # in the check slot it holds: max_checks caps both
            reviewed = _review(req, rec, ReviewAsk(str(req.worktree), entry.merged, entry.base, entry.branch, outputs))
    finally:
        run.release()
    if reviewed is not None and reviewed.status != MergeStatus.MERGED:
        with locked(req.lock):  # out of the queue: the tasks behind it are built again without it
            queue.save(spot.file, queue.leave(_load(spot), spot.key))
        _back_to_branch(req)
        return reviewed
    return _record(req, spot, rec, entry, run, failed)


def _review(req: MergeRequest, rec: Recorders, ask: ReviewAsk) -> MergeResult:
    """Its change's review, on the merge commit the checks passed: MERGED for an approval (it goes
    on to its turn), else why it does not merge."""
    assert req.review is not None
    rec.reviewing()
    said = req.review(ask)
    if said.verdict == "approved":
        return MergeResult(MergeStatus.MERGED)
    status = MergeStatus.CHANGES if said.verdict == "changes" else MergeStatus.REVIEW_FAILED
    return MergeResult(status, reason=said.text)


def _start(
    req: MergeRequest, spot: Spot, rec: Recorders, entry: Entry, note: Callable[[str], None]
) -> batch.Run | Entry | MergeResult | None:
    """Wait until the group it leads may start its checks (queue.waits_to_start, a task about to
    join it, a free check slot) and mark it checking, under the lock: from then on it takes no one
    more. Its entry if it no longer leads a group to verify (a task joined its group as leader)."""
    waiting_since = time.monotonic()
    while True:
        with locked(req.lock):
            if not isinstance(found := _still(req, spot, rec, entry), tuple):
                return found
            entries, me = found
            if me.checks != PENDING or not me.leads:
                return me
            main = git.rev_parse(req.root, f"refs/heads/{req.main_branch}")
            if queue.base_for(entries, spot.key, main) != me.base:  # what is ahead changed: no run on it
                return None
            waits = batch.waits(entries, spot.key, spot.batch, time.monotonic() - waiting_since)
            free, slot = batch.take_slot(spot.check_slots) if not waits else (False, None)
            if free:
                queue.save(spot.file, queue.put(entries, replace(me, checks=CHECKING)))
                return batch.Run(tuple(queue.group_of(entries, spot.key)), slot)
        note(waits or f"waiting for a check slot ([merge] max_checks = {len(spot.check_slots)})")
        crashsafe.pause(POLL)


def _run_checks(
    req: MergeRequest, checks: tuple[tuple[str, str], ...]
) -> tuple[tuple[str, str] | None, tuple[tuple[str, str, str], ...]]:
    """Each check in the task's worktree, until one fails: (why, its output's end) or None, and
    (label, command, output's end) of those that passed (a review reads them)."""
    passed: list[tuple[str, str, str]] = []
    for label, command in checks:
        check = req.sandbox.run(command, req.worktree, req.env, req.check_timeout)
        if req.log_check is not None:
            req.log_check(label, command, check.code, check.output)
        if check.code != 0:
            return (f"{label} failed (exit {check.code}): {command}", tail(check.output, 30)), tuple(passed)
        passed.append((label, command, tail(check.output, 30)))
    return None, tuple(passed)


def _record(
    req: MergeRequest, spot: Spot, rec: Recorders, entry: Entry, run: batch.Run, failed: tuple[str, str] | None
) -> Entry | MergeResult | None:
    """What its checks found, under the lock, if its merge commit is still the one they ran on:
    passed, for every member of its group (their leader's tree holds them all) — the tree is
    recorded as verified; or failed, on the leader alone (`_turn` bisects a batch)."""
    with locked(req.lock):
        if not isinstance(found := _still(req, spot, rec, entry), tuple):
            return found
        entries, me = found
        if failed is None:
            tree = git.tree_of(req.root, me.merged)
            verified = {"tree": tree, "commit": me.merged, "task": spot.key}
            append_line(spot.verified, json.dumps({**verified, **({"batch": run.batch} if run.batch else {})}))
            entries = queue.passed(entries, spot.key)
        else:
            entries = queue.put(entries, replace(me, checks=FAILED, reason=failed[0], output=failed[1]))
        queue.save(spot.file, entries)
        return queue.find(entries, spot.key)


def _turn(
    req: MergeRequest, spot: Spot, rec: Recorders, entry: Entry, note: Callable[[str], None]
) -> MergeResult | None:
    """Wait for its turn and publish; bisect the batch it leads when that failed; None when it
    must be built again (what was ahead of it changed: a task failed or left, or main moved) or
    now leads a group whose checks are to run (its leader left, or a bisection made it one)."""
    main_ref = f"refs/heads/{req.main_branch}"
    while True:
        with locked(req.lock):
            if not isinstance(found := _still(req, spot, rec, entry), tuple):
                return found
            entries, me = found
            tips = gitmerge.tips(req.root, main_ref)
            main = tips[0] if tips else git.rev_parse(req.root, main_ref)
            # it leads a group whose checks are to run (or a run of them a stopped run left)
            if queue.base_for(entries, spot.key, main) != me.base or (me.leads and me.checks in (PENDING, CHECKING)):
                return None
            group = queue.group_of(entries, spot.key)
            ahead = queue.ahead(entries, group[0].key)
            if me.checks == FAILED and all(e.checks == PASSED for e in ahead):
                if len(group) == 1:
                    # what it was verified on passed its own checks: the failure is its own
                    queue.save(spot.file, queue.leave(entries, spot.key))
                    _back_to_branch(req)
                    return MergeResult(MergeStatus.CHECK_FAILED, reason=me.reason, output_tail=me.output)
                # everything ahead passed: one of its batch fails, found by halves
                queue.save(spot.file, queue.split(entries, spot.key))
                note(f"bisecting: its batch ({queue.span(group)}) failed its checks; {me.reason}")
                continue
            if group[0].key == spot.key and group[-1].checks == PASSED and not ahead:
                if queue.chained(entries, group, main):
                    published = _publish_entry(req, spot, rec, entries, group, tips)
                    if published is not None:
                        return published
        waiting = _waiting(spot.key, group, ahead)
        if waiting:
            note(waiting)
        crashsafe.pause(POLL)


def _waiting(key: str, group: list[Entry], ahead: list[Entry]) -> str:
    """What a task in the queue waits for, said once ("": nothing worth saying)."""
    if len(group) > 1 and group[-1].key != key:
        return f"in the batch {group[-1].key} verifies ({queue.span(group)})"
    return f"queued behind {', '.join(e.key for e in ahead)}" if ahead else ""


def _publish_entry(
    req: MergeRequest,
    spot: Spot,
    rec: Recorders,
    entries: list[Entry],
    group: list[Entry],
    tips: tuple[str, str, str] | None,
) -> MergeResult | None:
    """Main from its base (main now) to the verified merge commit of its group's leader: its
    own, or for a batch the last member's, over the other members' merge commits (never verified
    alone); None if main moved meanwhile. It records its own merge commit as its intent: on main
    exactly when main moved, it is what the next run finds there (with its files) after a crash."""
    main_ref = f"refs/heads/{req.main_branch}"
    me = group[0]
    with uninterruptible():
        rec.intent(me.merged)
        crash_point("before-publish")
        published = _publish(req, main_ref, me.base, group[-1].merged, tips)
        if published == "":
            crash_point("after-publish")
            if len(group) > 1:
                crash_point("batch-published")
            queue.save(spot.file, queue.without(entries, {e.key for e in group}))
            result = MergeResult(MergeStatus.MERGED, commit=me.merged, files=me.files)
            rec.merged(result)
            return result
        rec.forget()
    if published is None:
        return None
    queue.save(spot.file, queue.leave(entries, spot.key))
    _back_to_branch(req)
    return MergeResult(MergeStatus.REFUSED, reason=published)


def _back_to_branch(req: MergeRequest) -> None:
    """The task's worktree back on its branch, whatever its checks left in its files."""
    git.checkout(req.worktree, req.branch, force=True)


def _deleting(lost: list[str]) -> MergeResult:
    return MergeResult(
        MergeStatus.REFUSED,
        reason=f"the merge would delete files the task did not delete: {', '.join(lost[:10])}; "
        f"merge by hand or `hive retry`",
    )


def _attempt(
    req: MergeRequest, main_ref: str, rec: Recorders, identity: tuple[str, ...], branch: str, sign: bool
) -> MergeResult | None:
    """One try; None means main moved under us and the merge must be rebuilt. `branch`:
    the branch's commit to merge in git's object store (signed if `sign`), "" to merge in the worktree."""
    wt = req.worktree
    # main, and the user's checkout, in one git command: each one here is one more every other merge waits for
    tips = gitmerge.tips(req.root, main_ref)
    main_sha = tips[0] if tips else git.rev_parse(req.root, main_ref)
    built = _build(req, main_sha, branch, identity, sign) if branch else _build_in(wt, req, main_sha, identity)
    if isinstance(built, MergeResult):
        return built
    merged = built

    def back_to_branch() -> None:
        if not branch:
            git.checkout(wt, req.branch)

    changes = git.changes(req.root, main_sha, merged)
    lost = _unexpected_deletions(req, main_sha, {path for status, path in changes if status == "D"})
    if lost:
        back_to_branch()
        return _deleting(lost)
    failed, outputs = _run_checks(req, req.checks)
    if failed is not None:
        back_to_branch()
        return MergeResult(MergeStatus.CHECK_FAILED, reason=failed[0], output_tail=failed[1])
    if req.review is not None:  # a git before 2.38: under the lock, as its checks are
        tip = branch or git.rev_parse(req.root, f"refs/heads/{req.branch}")
        reviewed = _review(req, rec, ReviewAsk(str(wt), merged, main_sha, tip, outputs))
        if reviewed.status != MergeStatus.MERGED:
            back_to_branch()
            return reviewed
    files = tuple(path for _, path in changes)
    held = _held(req, main_sha, merged, files) if changes else ""
    if held:
        back_to_branch()
        return MergeResult(MergeStatus.HELD, commit=merged, files=files, reason=held)
    if merged == main_sha or (not changes and git.is_ancestor(req.root, f"refs/heads/{req.branch}", main_sha)):
        result = MergeResult(MergeStatus.MERGED, commit=main_sha, files=(), reason="no changes to merge")
        rec.merged(result)
        return result
    with uninterruptible():
        rec.intent(merged)
        crash_point("before-publish")
        published = _publish(req, main_ref, main_sha, merged, tips)
        if published == "":
            crash_point("after-publish")
            result = MergeResult(MergeStatus.MERGED, commit=merged, files=files)
            rec.merged(result)
            return result
        rec.forget()
    if published is None:
        return None
    back_to_branch()
    return MergeResult(MergeStatus.REFUSED, reason=published)


def _build(req: MergeRequest, main_sha: str, branch: str, identity: tuple[str, ...], sign: bool) -> str | MergeResult:
    """The merge commit, made in git's object store only; or why there is none."""
    crash_point("in-merge")
    tree, conflicts = gitmerge.merge_tree(req.root, main_sha, branch)
    if conflicts:
        return _conflict(req, conflicts)
    made = gitmerge.commit_tree(req.root, tree, (main_sha, branch), req.message, identity, sign)
    if made.code != 0:  # e.g. signing failed: as `git merge` would, say so and leave main alone
        return MergeResult(MergeStatus.REFUSED, reason=f"git could not make the merge commit: {tail(made.output, 5)}")
    return made.stdout.strip()


def _build_in(wt: Path, req: MergeRequest, main_sha: str, identity: tuple[str, ...]) -> str | MergeResult:
    """The merge commit, made in the task's worktree (left checked out there for the
    checks); or why there is none (the worktree back on the task's branch)."""
    git.checkout(wt, main_sha, detach=True)
    crash_point("in-merge")
    res = gitmerge.merge_no_ff(wt, req.branch, req.message, identity)
    if res.code == 0:
        return git.head(wt)
    conflicts = gitmerge.conflicted_files(wt)
    gitmerge.merge_abort(wt)
    git.checkout(wt, req.branch)
    if conflicts:
        return _conflict(req, conflicts)
    return MergeResult(MergeStatus.REFUSED, reason=f"git refused the merge: {tail(res.output, 5)}")


def _conflict(req: MergeRequest, files: list[str]) -> MergeResult:
    return MergeResult(
        MergeStatus.CONFLICT,
        files=tuple(files),
        reason=f"merge conflict with {req.main_branch} in: {', '.join(files)}",
    )


def _unexpected_deletions(req: MergeRequest, main_sha: str, deleted: set[str]) -> list[str]:
    """Files the merge would delete that the task did not mean to: ones its branch
    never deleted — and every file, if the merge would leave the project empty (a
    branch that committed an interrupted checkout "deleted" them all)."""
    if not deleted:
        return []
    if len(deleted) >= git.count_files(req.root, main_sha):
        return sorted(deleted)
    fork = git.merge_base(req.root, main_sha, req.branch)
    by_task = set(git.changed_files(req.root, fork, f"refs/heads/{req.branch}", "D"))
    return sorted(deleted - by_task)


def _publish(req: MergeRequest, main_ref: str, old: str, new: str, tips: tuple[str, str, str] | None) -> str | None:
    """Move main from `old` to `new`. "" on success, None if main moved meanwhile,
    else why it could not be done safely. `tips`: gitmerge.tips of the user's checkout,
    read at the start of this try (mostly it is the checkout that holds main)."""
    if tips is not None and tips[2] == main_ref:
        holder: Path | str | None = req.root
        head = tips[1]
    else:
        holder = next((w["path"] for w in git.worktrees(req.root) if w["branch"] == main_ref), None)
        head = git.rev_parse(holder, "HEAD") if holder is not None else ""
    if holder is None:
        return "" if git.update_ref(req.root, main_ref, new, old) else None
    if head != old:
        return None
    res = gitmerge.ff_merge(holder, new)
    if res.code != 0 and git.rev_parse(holder, "HEAD") == old and _undo_interrupted_update(holder, new, res.output):
        res = gitmerge.ff_merge(holder, new)
    if res.code == 0:
        return ""
    if git.rev_parse(holder, "HEAD") != old:
        return None
    # one line (the run prints a reason's first line): the files git named, else its last words
    named = _in_the_way(res.output)
    kind = "untracked files" if "untracked working tree files" in res.output else "changed files"
    what = f"{kind} in the way: {', '.join(named)}" if named else " ".join(tail(res.output, 3).split())
    return (
        f"could not update your checkout of {req.main_branch} at {holder} without touching your "
        f"uncommitted work ({what}) — commit or stash those files, then `hive retry`"
    )


# git lists the files it will not overwrite, one per line, indented with a tab
_IN_THE_WAY = re.compile(r"would be overwritten by merge:\n((?:\t.*\n?)+)")


def _in_the_way(refusal: str) -> list[str]:
    return [line.strip() for m in _IN_THE_WAY.finditer(refusal) for line in m.group(1).splitlines()]


def _undo_interrupted_update(checkout: Path | str, new: str, refusal: str) -> bool:
    """A fast-forward of the user's checkout that was killed half-way leaves files of
    the new commit written but not recorded, and git then refuses to write them again.
    If every file git names is byte-for-byte what `new` has there, it is Hive's own
    leftover (or the user's identical copy: the result is the same) and is put back as
    HEAD has it; anything else is the user's work, and the merge is refused."""
    named = _in_the_way(refusal)
    if not named or any(
        not (blob := git.blob_of_file(checkout, path)) or blob != git.blob_at(checkout, new, path) for path in named
    ):
        return False
    for path in named:
        if git.blob_at(checkout, "HEAD", path):
            git.restore_file(checkout, "HEAD", path)
        else:
            (Path(checkout) / path).unlink()
    return True
