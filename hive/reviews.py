"""The records of what a task's change went through before it merged, as its state keeps them
(TaskState.reviews, TaskState.checks): each review — by a reviewer agent or a human — and each run
of its checks. Typed records with one way in and out of JSON: built in one place (`Review.new`),
written by the task's one writer, read by the brief, the reports and the dashboard (issue 44:
they were dicts with the same ten keys built in two places, and verdicts bare strings in six)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    APPROVED = "approved"  # it merges (`hive done` of a reviewer agent, `hive approve` of a human)
    CHANGES = "changes"  # its author tries again, the review in its brief (`hive changes`)
    FAILED = "failed"  # the reviewer crashed, timed out or said neither: tried again, then a human decides


class By(StrEnum):
    AGENT = "agent"  # a reviewer agent (its profile's name is the reviewer)
    HUMAN = "human"  # the user at the terminal or the dashboard (`hive changes plan:ID`)
    FORGE = "forge"  # a collaborator with write access, on the task's pull request (its reviewer: @login)


@dataclass(frozen=True)
class Review:
    round: int  # 1, 2, …: the reviews of the task so far, plus one
    attempt: int  # the author's attempt whose change it read
    by: By
    reviewer: str  # the reviewer profile's name; "you" for the human at this machine
    verdict: Verdict
    text: str  # its words: why it is good, what must change, or why the reviewer failed
    at: float  # when it was given (epoch seconds)
    seconds: float = 0.0  # how long the reviewer took
    usage: dict[str, Any] = field(default_factory=dict)  # its reviewer's tokens and cost (store.usage)
    branch: str = ""  # the branch commit it read: a verdict is that change's, kept across a restart
    via: str = ""  # a human's: the command that sent it, when not `hive changes` (`hive approve --reject`)

    @classmethod
    def new(
        cls,
        reviews: tuple[Review, ...],
        attempt: int,
        verdict: Verdict,
        text: str,
        reviewer: str = "",
        began: float | None = None,
        usage: Mapping[str, Any] | None = None,
        branch: str = "",
    ) -> Review:
        """The next review of a task whose reviews so far are `reviews`: the one place one is made.
        `reviewer`: the reviewer agent's profile; none for the human at this machine."""
        now = time.time()
        by = By.AGENT if reviewer else By.HUMAN
        return cls(
            round=len(reviews) + 1,
            attempt=attempt,
            by=by,
            reviewer=reviewer or "you",
            verdict=verdict,
            text=text if reviewer else text.strip(),
            at=round(now, 3),
            seconds=round(now - began, 3) if began is not None else 0.0,
            usage=dict(usage or {}),
            branch=branch,
        )

    @property
    def shown_by(self) -> str:
        """Who gave it, as a person reads it: "you" or the reviewer profile."""
        return "you" if self.by == By.HUMAN else self.reviewer  # a profile's name, or @login on the forge

    def details(self) -> dict[str, Any]:
        """What its `reviewed` event line says of it."""
        return {
            "verdict": str(self.verdict),
            "reviewer": self.reviewer,
            "text": self.text,
            "seconds": self.seconds,
            "cost": self.usage.get("cost_usd"),
        }

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "by": str(self.by), "verdict": str(self.verdict)}

    def shown(self) -> dict[str, Any]:
        """What `hive status --json` shows of it (not its usage, counted in the task's, nor its commit)."""
        return {k: v for k, v in self.to_json().items() if k not in ("usage", "branch")}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Review:
        return cls(
            round=int(data.get("round", 0)),
            attempt=int(data.get("attempt", 0)),
            by=By(data.get("by", By.AGENT)),
            reviewer=str(data.get("reviewer", "")),
            verdict=Verdict(data.get("verdict", Verdict.FAILED)),
            text=str(data.get("text", "")),
            at=float(data.get("at", 0.0)),
            seconds=float(data.get("seconds", 0.0)),
            usage=dict(data.get("usage") or {}),
            branch=str(data.get("branch", "")),
            via=str(data.get("via", "")),
        )


def changes_sent(reviews: tuple[Review, ...]) -> int:
    """How many rounds of changes reviews have sent back to the task's author."""
    return sum(1 for r in reviews if r.verdict == Verdict.CHANGES)


@dataclass(frozen=True)
class CheckRun:
    """One run of a task's checks in its latest merge step: on which base (main and the tasks queued
    ahead), for how long, whether they passed; `batch`: the tasks a run verified together, when it
    led a batch (engine/merge)."""

    base: str
    seconds: float
    passed: bool
    batch: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "seconds": self.seconds,
            "passed": self.passed,
            **({"batch": list(self.batch)} if self.batch else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CheckRun:
        return cls(
            base=str(data.get("base", "")),
            seconds=float(data.get("seconds", 0.0)),
            passed=bool(data.get("passed")),
            batch=tuple(str(k) for k in data.get("batch") or ()),
        )
