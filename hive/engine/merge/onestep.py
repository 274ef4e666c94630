"""The merge as one step under the merge lock: built on main, vetted, checked and reviewed, then
published — tried again while main moves under it. What a task without checks does when nothing is
queued, and every task with a git older than 2.38 (built and checked in its worktree)."""

from __future__ import annotations

from hive.adapters import git, gitmerge
from hive.engine.merge import build, checks
from hive.engine.merge.publish import land
from hive.engine.merge.types import Again, Making, MergeRequest, MergeResult, MergeStatus, Move, Recorders, ReviewAsk

MAX_RACES = 5


def races(req: MergeRequest, rec: Recorders, making: Making) -> MergeResult:
    """The merge as one step, the lock held: tried again while main moves under it."""
    rec.checking()
    for _ in range(MAX_RACES):
        result = attempt(req, rec, making)
        if not isinstance(result, Again):
            return result
    return MergeResult(
        MergeStatus.REFUSED,
        reason=f"{req.main_branch} kept moving during {MAX_RACES} merge attempts; run `hive retry` when it is quiet",
    )


def attempt(req: MergeRequest, rec: Recorders, making: Making) -> MergeResult | Again:
    """One try; AGAIN when main moved under it. `making.branch`: the branch's commit to merge in
    git's object store, "" to merge in the worktree."""
    wt, branch = req.worktree, making.branch
    # main, and the user's checkout, in one git command: each one here is one more every other merge waits for
    tips = gitmerge.tips(req.root, req.main_ref)
    main_sha = tips.main if tips else git.rev_parse(req.root, req.main_ref)
    if branch:
        built = build.build(req, main_sha, branch, making.identity, making.sign)
    else:
        built = build.build_in(wt, req, main_sha, making.identity)
    if isinstance(built, MergeResult):
        return built
    merged = built.commit

    def back_to_branch() -> None:
        if not branch:
            git.checkout(wt, req.branch)

    changes = git.changes(req.root, main_sha, merged)
    lost = build.unexpected_deletions(req, main_sha, {path for status, path in changes if status == "D"})
    if lost:
        back_to_branch()
        return build.deleting(lost)
    ran = checks.run_checks(req, req.checks)
    if ran.failed is not None:
        back_to_branch()
        return checks.failed(ran.failed)
    if req.review is not None:  # a git before 2.38: under the lock, as its checks are
        tip = branch or git.rev_parse(req.root, f"refs/heads/{req.branch}")
        refused = checks.review(req, rec, ReviewAsk(str(wt), merged, main_sha, tip, ran.passed))
        if refused is not None:
            back_to_branch()
            return refused
    files = tuple(path for _, path in changes)
    held = build.held(req, main_sha, merged, files) if changes else ""
    if held:
        back_to_branch()
        return MergeResult(MergeStatus.HELD, commit=merged, files=files, reason=held)
    if merged == main_sha or (not changes and git.is_ancestor(req.root, f"refs/heads/{req.branch}", main_sha)):
        result = MergeResult(MergeStatus.MERGED, commit=main_sha, files=(), reason="no changes to merge")
        rec.merged(result)
        return result
    landed = land(
        req,
        rec,
        merged,
        Move(main_sha, merged, tips),
        lambda: MergeResult(MergeStatus.MERGED, commit=merged, files=files),
    )
    if isinstance(landed, MergeResult) and landed.status == MergeStatus.REFUSED:
        back_to_branch()
    return landed
