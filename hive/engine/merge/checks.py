"""A task's checks (Verify, test_command) on its merge commit, and then its review: what the merge
queue runs off the lock, in a check slot, before a merge commit may be published."""

from __future__ import annotations

from dataclasses import dataclass

from hive.engine.merge.types import (
    CheckFailure,
    CheckOutput,
    MergeRequest,
    MergeResult,
    MergeStatus,
    Recorders,
    ReviewAsk,
)
from hive.output import tail
from hive.reviews import Verdict

OUTPUT_KEPT = 30  # lines of a check's output kept for its failure's reason and for a review


@dataclass(frozen=True)
class Ran:
    """What a task's checks came to: the one that failed (None: all passed), and those that passed."""

    failed: CheckFailure | None
    passed: tuple[CheckOutput, ...] = ()


def run_checks(req: MergeRequest, checks: tuple[tuple[str, str], ...]) -> Ran:
    """Each check in the task's worktree, until one fails."""
    passed: list[CheckOutput] = []
    for label, command in checks:
        check = req.sandbox.run(command, req.worktree, req.env, req.check_timeout)
        if req.log_check is not None:
            req.log_check(label, command, check.code, check.output)
        if check.code != 0:
            failure = CheckFailure(f"{label} failed (exit {check.code}): {command}", tail(check.output, OUTPUT_KEPT))
            return Ran(failure, tuple(passed))
        passed.append(CheckOutput(label, command, tail(check.output, OUTPUT_KEPT)))
    return Ran(None, tuple(passed))


def failed(failure: CheckFailure) -> MergeResult:
    return MergeResult(MergeStatus.CHECK_FAILED, reason=failure.reason, output_tail=failure.output)


def review(req: MergeRequest, rec: Recorders, ask: ReviewAsk) -> MergeResult | None:
    """Its change's review, on the merge commit the checks passed: None if it approved (the merge
    goes on), else the result that says why it does not merge."""
    assert req.review is not None
    rec.reviewing()
    said = req.review(ask)
    if said.record is not None:  # a verdict given now (one kept from before a restart is recorded already)
        rec.reviewed(said.record)
    if said.verdict == Verdict.APPROVED:
        return None
    status = MergeStatus.CHANGES if said.verdict == Verdict.CHANGES else MergeStatus.REVIEW_FAILED
    return MergeResult(status, reason=said.text)
