"""What a merge is asked and what it answers: the request (what to merge, its checks, its review,
its place in the queue, how main is published), the result, and the small records its steps hand
each other — typed, so that no step answers with a sentinel ("" for done, None for "main moved")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from hive.adapters import gitmerge
from hive.engine import hold
from hive.reviews import Review, Verdict
from hive.sandbox.policy import UNCONFINED, Confined


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
class CheckOutput:
    """One check that passed: what a review reads of it."""

    label: str  # "Verify", "test_command"
    command: str
    output: str  # its output's end


@dataclass(frozen=True)
class CheckFailure:
    """The check that failed: why, for people, and its output's end."""

    reason: str
    output: str


@dataclass(frozen=True)
class ReviewAsk:
    """What a review (engine/review.py) reads: a task's merge commit, as the queue would publish it."""

    worktree: str  # the task's checkout, where the merge commit is checked out
    merged: str
    base: str  # what it is built on: main, or the task ahead of it in the queue
    branch: str  # the task's branch commit: a verdict is its change's
    checks: tuple[CheckOutput, ...] = ()  # the checks it passed


@dataclass(frozen=True)
class Reviewed:
    """A review's verdict on a change; `record`: the review to keep in the task's state (None for
    a verdict kept from before a restart, recorded then)."""

    verdict: Verdict
    text: str = ""
    record: Review | None = None


class Outcome(StrEnum):
    PUBLISHED = "published"  # main is the new commit now
    MOVED = "moved"  # main moved meanwhile: nothing changed, the merge is built again on the new main
    REFUSED = "refused"  # it cannot be done safely (the user's work in the way): nothing changed, the reason says why
    PROPOSED = "proposed"  # a forge: the task's branch pushed and a PR open for it; the forge merges it
    PAUSED = "paused"  # a forge's rate limit: nothing lost, publish again at `until`


@dataclass(frozen=True)
class Published:
    outcome: Outcome
    reason: str = ""  # REFUSED: why, one line for a person
    pr: int = 0  # PROPOSED: its pull request
    url: str = ""  # ... and where a person sees it
    pushed: str = ""  # ... the commit its branch has on the forge now
    until: float = 0.0  # PAUSED: when the forge answers again


@dataclass(frozen=True)
class Move:
    """What to publish: main from `old` (what the merge was built and verified on) to `new`."""

    old: str
    new: str
    tips: gitmerge.Tips | None = None  # the user's checkout, read at the start of this try (gitmerge.tips)


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
    # how a verified merge reaches main (publish.py); None: the local one, main in this repository
    publisher: Publisher | None = None
    base_ref: str = ""  # what it is merged into, when not main here: the forge's base as fetched (PR mode)

    @property
    def main_ref(self) -> str:
        return self.base_ref or f"refs/heads/{self.main_branch}"


class Publisher(Protocol):
    """How a verified merge commit reaches main (publish.py): the seam a second way plugs into.
    One that `moves_main` moves main from `move.old` to the merge commit `move.new`; one that does
    not (a forge) is given the task branch's commit as `move.new` and proposes it (PROPOSED)."""

    moves_main: bool

    def refresh(self, req: MergeRequest) -> None:
        """Bring `req.main_ref` up to date before a merge commit is built on it (a fetch)."""
        ...

    def publish(self, req: MergeRequest, move: Move) -> Published: ...


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
    PROPOSED = "proposed"  # verified here, and proposed as a pull request on the forge (`pr`): the forge merges it


@dataclass(frozen=True)
class MergeResult:
    status: MergeStatus
    commit: str = ""
    files: tuple[str, ...] = ()
    reason: str = ""
    output_tail: str = ""
    proposed: Published | None = None  # PROPOSED: the PR


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
    reviewed: Callable[[Review], object] = _nothing  # its review gave its verdict: kept in its state


@dataclass(frozen=True)
class Again:
    """The merge must be built again: main, or what is queued ahead of it, changed under it."""


AGAIN = Again()


@dataclass(frozen=True)
class Making:
    """How a merge commit is made: whose name it carries, of which branch commit, signed or not
    (all asked before the merge lock: every merge waits while one is held)."""

    identity: tuple[str, ...]  # the committer, as `git.committer` says
    branch: str  # the task branch's commit ("": merged in the task's worktree instead)
    sign: bool  # `commit-tree -S`, as the user's `git merge` would sign
