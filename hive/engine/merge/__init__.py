"""Merging a finished task into main: main moves one merge at a time across all workers.

- `types`    what a merge is asked (MergeRequest) and answers (MergeResult), and its records
- `build`    the merge commit, built in git's object store (or the task's worktree) and vetted
- `checks`   its checks on the merge commit, then its review
- `onestep`  the merge as one step under the merge lock
- `queued`   the merge queue's steps for one task (store/queue.py keeps the queue)
- `publish`  the seam where a verified merge commit reaches main (`Publisher`), and `land`
- `local`    the local publisher: a fast-forward of the user's checkout or a compare-and-swap of main
- `forge`    the forge's publisher (pull-request mode): the task's branch pushed, its PR opened
- `proposal` the merge step in pull-request mode: verified on the forge's base, then proposed

A task with checks (Verify, test_command) or a review goes through the merge queue: its merge
commit is built on main plus every task queued ahead of it and verified off the merge lock while
the others verify theirs; it is published at its turn if what it was built on is then main. A
task without either merges at once when nothing is queued, else takes its turn. With a git older
than 2.38 each merge is one step under the lock, built and verified in the task's worktree.
"""

from __future__ import annotations

from hive.adapters import git, gitmerge
from hive.engine.merge.build import unexpected_deletions
from hive.engine.merge.onestep import races
from hive.engine.merge.proposal import proposal, proposes
from hive.engine.merge.queued import queued
from hive.engine.merge.types import (
    Checked,
    CheckOutput,
    Making,
    MergeRequest,
    MergeResult,
    MergeStatus,
    Recorders,
    ReviewAsk,
    Reviewed,
    Spot,
)
from hive.store import queue
from hive.store.files import locked

__all__ = [
    "CheckOutput",
    "Checked",
    "MergeRequest",
    "MergeResult",
    "MergeStatus",
    "Recorders",
    "ReviewAsk",
    "Reviewed",
    "Spot",
    "merge",
    "unexpected_deletions",
]


def merge(req: MergeRequest, rec: Recorders) -> MergeResult:
    """Merge the task branch into main. `rec.intent(commit)` is called just before
    main moves and `rec.merged(result)` just after, with Ctrl-C held off between
    them; a kill -9 in between leaves the intent, which the next run resolves. A task
    that reached main in a batch another task's worker published gets `rec.merged` alone
    (killed before it, its next run finds its merge commit on main)."""
    # asked before the lock: every merge waits while one is held
    identity = git.committer(req.root)
    if proposes(req):
        branch = git.rev_parse(req.root, f"refs/heads/{req.branch}")
        return proposal(req, rec, Making(identity, branch, gitmerge.signs_commits(req.root)))
    if req.spot is not None and gitmerge.merges_without_worktree():
        # the branch does not move while its task is merged, and `git merge` signs as the user
        # configured (`commit-tree` only when told): both resolved before the lock too
        making = Making(identity, git.rev_parse(req.root, f"refs/heads/{req.branch}"), gitmerge.signs_commits(req.root))
        if not req.checks and req.review is None:
            with locked(req.lock):
                if not queue.living(queue.load(req.spot.file)):  # nothing waits: at once
                    return races(req, rec, making)
        return queued(req, req.spot, rec, making)
    in_worktree = bool(req.checks) or not gitmerge.merges_without_worktree()
    branch = "" if in_worktree else git.rev_parse(req.root, f"refs/heads/{req.branch}")
    making = Making(identity, branch, not in_worktree and gitmerge.signs_commits(req.root))
    with locked(req.lock):
        return races(req, rec, making)
