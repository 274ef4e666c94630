"""The merge queue's steps for one task (store/queue.py keeps the queue): join it, have its merge
commit built on main plus every task queued ahead of it, verify and review it off the lock while
the others verify theirs, and publish it at its turn if what it was built on is then main — else it
is built and verified again. Nothing reaches main whose exact tree was not verified. With `[merge]
batch = N` the tasks that finish while the checks ahead of them run are verified together, by one
run on the last one's merge commit, and main moves over all of them at once; a batch that fails is
bisected (engine/batch.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from hive import crashsafe
from hive.adapters import git, gitmerge
from hive.crashsafe import crash_point
from hive.engine import batch
from hive.engine.merge import build, checks
from hive.engine.merge.publish import land
from hive.engine.merge.types import (
    AGAIN,
    Again,
    Checked,
    CheckFailure,
    Making,
    MergeRequest,
    MergeResult,
    MergeStatus,
    Move,
    Recorders,
    ReviewAsk,
    Spot,
)
from hive.store import queue
from hive.store.files import append_line, locked
from hive.store.queue import CHECKING, FAILED, PASSED, PENDING, Entry

POLL = 0.1  # how often a queued task looks whether its turn has come


@dataclass(frozen=True)
class Waiting:
    """It cannot be built yet: what it waits for, for people."""

    why: str


@dataclass(frozen=True)
class Held:
    """A task's merge commit that waits for a human once verified (engine/hold.py): out of the
    queue, so that no task is built on it."""

    base: str
    merged: str
    files: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Current:
    """The queue as it is now (under the lock), and the task's entry in it."""

    entries: list[Entry]
    me: Entry


def queued(req: MergeRequest, spot: Spot, rec: Recorders, making: Making) -> MergeResult:
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
        if isinstance(placed, Held):
            return _verify_held(req, spot, rec, placed, note)
        if isinstance(placed, Waiting):
            note(placed.why)
            crashsafe.pause(POLL)
            continue
        entry = placed
        if entry.checks == PENDING and entry.leads:
            checked = _verify(req, spot, rec, entry, note)
            if isinstance(checked, Again):
                continue
            if isinstance(checked, MergeResult):
                return checked
            entry = checked
        result = _turn(req, spot, rec, entry, note)
        if not isinstance(result, Again):
            return result


def _load(spot: Spot) -> list[Entry]:
    """The queue as the living workers left it, each group ended by its leader (queue.regroup)."""
    return queue.regroup(queue.living(queue.load(spot.file)))


def _place(req: MergeRequest, spot: Spot, rec: Recorders, making: Making) -> Entry | Held | MergeResult | Waiting:
    """Its entry, built on what is ahead of it now (under the lock); a result if it cannot be
    merged at all; its merge commit if a human must see it first; or what it waits for."""
    with locked(req.lock):
        entries = queue.join(_load(spot), spot.key, spot.claim, making.branch)
        me = queue.find(entries, spot.key)
        assert me is not None
        main = git.rev_parse(req.root, req.main_ref)
        base = queue.base_for(entries, spot.key, main)
        if base is None:
            queue.save(spot.file, entries)
            return Waiting("waiting for the task ahead of it in the merge queue to be built")
        if me.built and me.base == base:
            if me.checks == CHECKING:  # a run of its checks that a stopped run left: none runs now
                me = replace(me, checks=PENDING)
            queue.save(spot.file, queue.put(entries, me))
            return me
        if git.is_ancestor(req.root, making.branch, main):
            queue.save(spot.file, queue.leave(entries, spot.key))
            result = _on_main(req, making.branch, main)
            rec.merged(result)
            return result
        return _built(req, spot, entries, me, base, main, making)


def _built(
    req: MergeRequest, spot: Spot, entries: list[Entry], me: Entry, base: str, main: str, making: Making
) -> Entry | Held | MergeResult | Waiting:
    """Its merge commit on `base`, vetted (the lock held): its entry, held for a human, refused, or
    waiting behind a task ahead that it conflicts with."""
    built = build.build(req, base, making.branch, making.identity, making.sign)
    changes = git.changes(req.root, base, built.commit) if isinstance(built, build.Built) else []
    lost = build.unexpected_deletions(req, base, {p for s, p in changes if s == "D"})
    if lost:
        built = build.deleting(lost)
    if isinstance(built, MergeResult):
        queue.save(spot.file, queue.leave(entries, spot.key))
        if (
            built.status == MergeStatus.CONFLICT
            and base != main
            and not gitmerge.merge_tree(req.root, main, making.branch)[1]
        ):
            # only with tasks queued ahead: it joins again behind them once they have moved on
            return Waiting(f"it conflicts with a task ahead of it in the merge queue ({', '.join(built.files[:5])})")
        build.back_to_branch(req)
        return built
    files = tuple(path for _, path in changes)
    held = build.held(req, base, built.commit, files)
    if held:
        queue.save(spot.file, queue.leave(entries, spot.key))
        return Held(base, built.commit, files, held)
    me = replace(
        me,
        base=base,
        merged=built.commit,
        files=files,
        checks=PENDING if req.checks or req.review else PASSED,
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


def _verify_held(req: MergeRequest, spot: Spot, rec: Recorders, held: Held, note: Callable[[str], None]) -> MergeResult:
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
            ran = checks.run_checks(req, req.checks)
        finally:
            if slot is not None:
                slot.release()
        rec.checked(Checked(held.base, held.merged, time.monotonic() - started, ran.failed is None))
        build.back_to_branch(req)
        if ran.failed is not None:
            return checks.failed(ran.failed)
    return MergeResult(MergeStatus.HELD, commit=held.merged, files=held.files, reason=held.reason)


def _still(req: MergeRequest, spot: Spot, rec: Recorders, entry: Entry) -> Current | MergeResult | Again:
    """The queue and its entry (under the lock), if that is still the one built as `entry`;
    else what `_gone` says: merged with its batch, or AGAIN (it is built again)."""
    entries = _load(spot)
    me = queue.find(entries, spot.key)
    return _gone(req, rec, entry) if me is None or me.merged != entry.merged else Current(entries, me)


def _gone(req: MergeRequest, rec: Recorders, entry: Entry) -> MergeResult | Again:
    """Its entry left the queue, or was built again: merged if its batch reached main (the first
    of the batch moved main over every member's merge commit), else AGAIN: it is built again."""
    if not entry.merged or not git.is_ancestor(req.root, entry.merged, req.main_ref):
        return AGAIN
    result = MergeResult(MergeStatus.MERGED, commit=entry.merged, files=entry.files)
    rec.merged(result)
    return result


def _verify(
    req: MergeRequest, spot: Spot, rec: Recorders, entry: Entry, note: Callable[[str], None]
) -> Entry | MergeResult | Again:
    """The checks of the group it leads, on its merge commit, off the lock: its entry as they
    left it (or as a member, if a task joined its group first); its result if its batch reached
    main meanwhile, or if its review did not approve it; AGAIN if it must be built again."""
    git.checkout(req.worktree, entry.merged, detach=True, force=True)
    crash_point("checking")
    rec.checking()
    run = _start(req, spot, rec, entry, note)
    if not isinstance(run, batch.Run):
        return run
    if run.batch:
        crash_point("batch-checking")
    started = time.monotonic()
    refused = None
    try:
        ran = checks.run_checks(req, batch.checks_of(run.group, req.checks))
        # a batch's base is its first task's: the main (and tasks ahead) it was verified on top of
        rec.checked(Checked(run.group[0].base, entry.merged, time.monotonic() - started, ran.failed is None, run.batch))
        if ran.failed is None and req.review is not None:  # in the check slot it holds: max_checks caps both
            ask = ReviewAsk(str(req.worktree), entry.merged, entry.base, entry.branch, ran.passed)
            refused = checks.review(req, rec, ask)
    finally:
        run.release()
    if refused is not None:
        with locked(req.lock):  # out of the queue: the tasks behind it are built again without it
            queue.save(spot.file, queue.leave(_load(spot), spot.key))
        build.back_to_branch(req)
        return refused
    return _record(req, spot, rec, entry, run, ran.failed)


def _start(
    req: MergeRequest, spot: Spot, rec: Recorders, entry: Entry, note: Callable[[str], None]
) -> batch.Run | Entry | MergeResult | Again:
    """Wait until the group it leads may start its checks (queue.waits_to_start, a task about to
    join it, a free check slot) and mark it checking, under the lock: from then on it takes no one
    more. Its entry if it no longer leads a group to verify (a task joined its group as leader)."""
    waiting_since = time.monotonic()
    while True:
        with locked(req.lock):
            found = _still(req, spot, rec, entry)
            if not isinstance(found, Current):
                return found
            entries, me = found.entries, found.me
            if me.checks != PENDING or not me.leads:
                return me
            main = git.rev_parse(req.root, req.main_ref)
            if queue.base_for(entries, spot.key, main) != me.base:  # what is ahead changed: no run on it
                return AGAIN
            waits = batch.waits(entries, spot.key, spot.batch, time.monotonic() - waiting_since)
            free, slot = batch.take_slot(spot.check_slots) if not waits else (False, None)
            if free:
                queue.save(spot.file, queue.put(entries, replace(me, checks=CHECKING)))
                return batch.Run(tuple(queue.group_of(entries, spot.key)), slot)
        note(waits or f"waiting for a check slot ([merge] max_checks = {len(spot.check_slots)})")
        crashsafe.pause(POLL)


def _record(
    req: MergeRequest, spot: Spot, rec: Recorders, entry: Entry, run: batch.Run, failed: CheckFailure | None
) -> Entry | MergeResult | Again:
    """What its checks found, under the lock, if its merge commit is still the one they ran on:
    passed, for every member of its group (their leader's tree holds them all) — the tree is
    recorded as verified; or failed, on the leader alone (`_turn` bisects a batch)."""
    with locked(req.lock):
        found = _still(req, spot, rec, entry)
        if not isinstance(found, Current):
            return found
        entries, me = found.entries, found.me
        if failed is None:
            tree = git.tree_of(req.root, me.merged)
            verified = {"tree": tree, "commit": me.merged, "task": spot.key}
            append_line(spot.verified, json.dumps({**verified, **({"batch": run.batch} if run.batch else {})}))
            entries = queue.passed(entries, spot.key)
        else:
            entries = queue.put(entries, replace(me, checks=FAILED, reason=failed.reason, output=failed.output))
        queue.save(spot.file, entries)
        return queue.find(entries, spot.key) or AGAIN


def _turn(
    req: MergeRequest, spot: Spot, rec: Recorders, entry: Entry, note: Callable[[str], None]
) -> MergeResult | Again:
    """Wait for its turn and publish; bisect the batch it leads when that failed; AGAIN when it
    must be built again (what was ahead of it changed: a task failed or left, or main moved) or
    now leads a group whose checks are to run (its leader left, or a bisection made it one)."""
    while True:
        with locked(req.lock):
            found = _still(req, spot, rec, entry)
            if not isinstance(found, Current):
                return found
            entries, me = found.entries, found.me
            tips = gitmerge.tips(req.root, req.main_ref)
            main = tips.main if tips else git.rev_parse(req.root, req.main_ref)
            # it leads a group whose checks are to run (or a run of them a stopped run left)
            if queue.base_for(entries, spot.key, main) != me.base or (me.leads and me.checks in (PENDING, CHECKING)):
                return AGAIN
            group = queue.group_of(entries, spot.key)
            ahead = queue.ahead(entries, group[0].key)
            if me.checks == FAILED and all(e.checks == PASSED for e in ahead):
                if len(group) == 1:
                    # what it was verified on passed its own checks: the failure is its own
                    queue.save(spot.file, queue.leave(entries, spot.key))
                    build.back_to_branch(req)
                    return MergeResult(MergeStatus.CHECK_FAILED, reason=me.reason, output_tail=me.output)
                # everything ahead passed: one of its batch fails, found by halves
                queue.save(spot.file, queue.split(entries, spot.key))
                note(f"bisecting: its batch ({queue.span(group)}) failed its checks; {me.reason}")
                continue
            if group[0].key == spot.key and group[-1].checks == PASSED and not ahead:
                if queue.chained(entries, group, main):
                    published = _publish_group(req, spot, rec, entries, group, tips)
                    if not isinstance(published, Again):
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


def _publish_group(
    req: MergeRequest,
    spot: Spot,
    rec: Recorders,
    entries: list[Entry],
    group: list[Entry],
    tips: gitmerge.Tips | None,
) -> MergeResult | Again:
    """Main from its base (main now) to the verified merge commit of its group's leader: its
    own, or for a batch the last member's, over the other members' merge commits (never verified
    alone); AGAIN if main moved meanwhile. Its own merge commit is its intent (publish.land)."""
    me = group[0]

    def merged() -> MergeResult:
        if len(group) > 1:
            crash_point("batch-published")
        queue.save(spot.file, queue.without(entries, {e.key for e in group}))
        return MergeResult(MergeStatus.MERGED, commit=me.merged, files=me.files)

    landed = land(req, rec, me.merged, Move(me.base, group[-1].merged, tips), merged)
    if isinstance(landed, MergeResult) and landed.status == MergeStatus.REFUSED:
        queue.save(spot.file, queue.leave(entries, spot.key))
        build.back_to_branch(req)
    return landed
