"""Publishing: the last step of a merge, where a verified merge commit reaches main — the seam a
second way plugs into (pull-request mode: the forge's main instead of this repository's). One
protocol (`types.Publisher`), a typed result (`types.Published`); the local way is
`local.LocalMain`. `land` is the step around it: the intent recorded first, the result after."""

from __future__ import annotations

from collections.abc import Callable

from hive.crashsafe import crash_point, uninterruptible
from hive.engine.merge.local import LocalMain
from hive.engine.merge.types import (
    AGAIN,
    Again,
    MergeRequest,
    MergeResult,
    MergeStatus,
    Move,
    Outcome,
    Publisher,
    Recorders,
)


def publisher_of(req: MergeRequest) -> Publisher:
    return req.publisher if req.publisher is not None else LocalMain()


def land(
    req: MergeRequest, rec: Recorders, intent: str, move: Move, then: Callable[[], MergeResult]
) -> MergeResult | Again:
    """Publish `move`, its task's merge commit `intent` recorded first: on main exactly when main
    moved, it is what the next run finds there after a crash. Published: `then` says what was merged
    and it is recorded, Ctrl-C held off from the intent to the record (a kill -9 in between leaves
    the intent, which the next run resolves). Else the intent is forgotten: AGAIN if main moved
    meanwhile, or the refusal."""
    with uninterruptible():
        rec.intent(intent)
        crash_point("before-publish")
        published = publisher_of(req).publish(req, move)
        if published.outcome == Outcome.PUBLISHED:
            crash_point("after-publish")
            result = then()
            rec.merged(result)
            return result
        rec.forget()
    if published.outcome == Outcome.MOVED:
        return AGAIN
    return MergeResult(MergeStatus.REFUSED, reason=published.reason)
