"""A human's review of a task's change (`hive changes plan:ID --reason "…"`, the dashboard's
Changes): it goes back to its author, whose next attempt reads the review under its own heading,
as a reviewer agent's does (engine/review.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hive.actions.runs import next_run
from hive.errors import HiveError
from hive.lifecycle import Resume, State
from hive.reviews import Review, Verdict
from hive.store.names import parse_key
from hive.store.paths import Paths
from hive.store.state import StateStore


def send_back(root: Path, key: str, text: str, via: str = "") -> str:
    """Send the task awaiting a review (`auto_merge = false`, a change Hive held, or one whose
    reviews a human must settle) back to its author with `text`: the one way back, for `hive
    changes` and `hive approve --reject` (`via`) alike."""
    if not text.strip():
        raise HiveError(f'hive changes {key} needs --reason "what must change": its author reads it first')
    plan, task_id = parse_key(key)
    paths = Paths(root)
    store = StateStore(paths)
    st = store.read(plan, task_id)
    if st.state != State.AWAITING_HUMAN or st.resume not in (Resume.REVIEW, Resume.HELD):
        raise HiveError(
            f"{key} is {st.state}, not waiting for a review of its change; `hive changes` sends back a task "
            f"awaiting review (`hive status` shows which)"
        )
    review = replace(Review.new(st.reviews, st.attempt, Verdict.CHANGES, text), via=via)
    store.update(
        plan,
        task_id,
        expect=(State.AWAITING_HUMAN,),
        state=State.PLANNED,
        resume="",
        attempts_used=0,
        reason="",
        reviews=(*st.reviews, review),
        event="reviewed",
        details=review.details(),
    )
    then = next_run(paths, f"starts its next attempt from branch {st.branch}")
    return f"{key}: sent back to its author with your review — {then}"
