"""The merge step in pull-request mode: the task's change verified here first — merged with the
forge's base as last fetched, checked (Verify, test_command) and reviewed on exactly that tree, an
early and cheap signal that saves CI minutes — then proposed: its branch pushed and its PR opened
(a Publisher that does not move main). Nothing moves main here, and no merge lock is held while the
checks run: each PR is merged on the forge, on its own."""

from __future__ import annotations

import time

from hive import crashsafe
from hive.adapters import git
from hive.engine import batch
from hive.engine.merge import build, checks
from hive.engine.merge.publish import publisher_of
from hive.engine.merge.types import (
    Checked,
    Making,
    MergeRequest,
    MergeResult,
    MergeStatus,
    Move,
    Outcome,
    Recorders,
    ReviewAsk,
)

POLL = 0.1


def proposal(req: MergeRequest, rec: Recorders, making: Making) -> MergeResult:
    publisher = publisher_of(req)
    publisher.refresh(req)
    base = git.rev_parse(req.root, req.main_ref)
    if git.is_ancestor(req.root, making.branch, base):  # merged on the forge already (a person, or a run before)
        commit = git.merge_of(req.root, base, making.branch) or base
        result = MergeResult(MergeStatus.MERGED, commit=commit, files=(), reason="merged on the forge")
        rec.merged(result)
        return result
    built = build.build(req, base, making.branch, making.identity, making.sign)
    if isinstance(built, MergeResult):
        return built
    changes = git.changes(req.root, base, built.commit)
    lost = build.unexpected_deletions(req, base, {path for status, path in changes if status == "D"})
    if lost:
        return build.deleting(lost)
    files = tuple(path for _, path in changes)
    held = build.held(req, base, built.commit, files) if changes else ""
    if held:
        return MergeResult(MergeStatus.HELD, commit=built.commit, files=files, reason=held)
    refused = _verified(req, rec, base, built.commit, making.branch) if req.checks or req.review else None
    if refused is not None:
        return refused
    published = publisher.publish(req, Move(base, making.branch))
    while published.outcome == Outcome.PAUSED:  # the forge's rate limit: waited out, never a failure
        rec.note(published.reason)
        crashsafe.pause(max(1.0, min(published.until - time.time(), 60.0)))
        published = publisher.publish(req, Move(base, making.branch))
    if published.outcome != Outcome.PROPOSED:
        return MergeResult(MergeStatus.REFUSED, reason=published.reason)
    return MergeResult(MergeStatus.PROPOSED, commit=built.commit, files=files, proposed=published)


def _verified(req: MergeRequest, rec: Recorders, base: str, merged: str, branch: str) -> MergeResult | None:
    """Its checks and its review on the merge commit, in a check slot: None when it may be
    proposed, else why it may not."""
    git.checkout(req.worktree, merged, detach=True, force=True)
    rec.checking()
    slots = req.spot.check_slots if req.spot is not None else ()
    while not (taken := batch.take_slot(slots))[0]:
        rec.note(f"waiting for a check slot ([merge] max_checks = {len(slots)})")
        crashsafe.pause(POLL)
    slot, started = taken[1], time.monotonic()
    try:
        ran = checks.run_checks(req, req.checks)
        rec.checked(Checked(base, merged, time.monotonic() - started, ran.failed is None))
        refused = checks.failed(ran.failed) if ran.failed is not None else None
        if refused is None and req.review is not None:
            refused = checks.review(req, rec, ReviewAsk(str(req.worktree), merged, base, branch, ran.passed))
    finally:
        if slot is not None:
            slot.release()
        build.back_to_branch(req)
    return refused


def proposes(req: MergeRequest) -> bool:
    """Does this merge go to a forge as a pull request (a publisher that does not move main)?"""
    return req.publisher is not None and not req.publisher.moves_main
