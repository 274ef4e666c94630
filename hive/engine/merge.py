"""Merging a finished task into main, one merge at a time across all workers.

The merge commit is built on top of main's current tip — in git's object store
alone when nothing has to run on the merged files (git 2.38's `merge-tree`: no
checkout, and a few git commands fewer while every other merge waits), else in the
task's worktree, verified there — and only then published: by a fast-forward of the
user's checkout (git refuses rather than overwrite their uncommitted or untracked
work) or, when main is not checked out, by a compare-and-swap of the ref.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from hive.adapters import git, gitmerge
from hive.crashsafe import crash_point, uninterruptible
from hive.output import tail
from hive.sandbox.policy import UNCONFINED, Confined
from hive.store.files import locked

MAX_RACES = 5


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


class MergeStatus(StrEnum):
    MERGED = "merged"  # main moved to the merged tree (or already held the branch)
    CONFLICT = "conflict"  # the branch and main conflict: nothing changed
    REFUSED = "refused"  # git or the deletion guard refused it: nothing changed; the reason says why
    CHECK_FAILED = "check_failed"  # Verify / test_command failed on the merged result: nothing changed


@dataclass(frozen=True)
class MergeResult:
    status: MergeStatus
    commit: str = ""
    files: tuple[str, ...] = ()
    reason: str = ""
    output_tail: str = ""


@dataclass(frozen=True)
class Recorders:
    intent: Callable[[str], object]  # just before main moves: the commit it moves to
    merged: Callable[[MergeResult], object]  # just after
    forget: Callable[[], object]  # main certainly did not move
    # the merge queue's turn came (the lock is ours): the merge is built and checked from now on
    checking: Callable[[], object] = lambda: None


def merge(req: MergeRequest, rec: Recorders) -> MergeResult:
    """Merge the task branch into main. `rec.intent(commit)` is called just before
    main moves and `rec.merged(result)` just after, with Ctrl-C held off between
    them; a kill -9 in between leaves the intent, which the next run resolves."""
    main_ref = f"refs/heads/{req.main_branch}"
    # asked before the lock: every merge waits while one is held
    identity = git.committer(req.root)
    in_worktree = bool(req.checks) or not gitmerge.merges_without_worktree()
    # the branch does not move while its task is merged: resolved before the lock too
    branch = "" if in_worktree else git.rev_parse(req.root, f"refs/heads/{req.branch}")
    # `git merge` signs as the user configured; `commit-tree` only when told
    sign = not in_worktree and gitmerge.signs_commits(req.root)
    with locked(req.lock):
        rec.checking()
        for _ in range(MAX_RACES):
            result = _attempt(req, main_ref, rec, identity, branch, sign)
            if result is not None:
                return result
        return MergeResult(
            MergeStatus.REFUSED,
            reason=f"{req.main_branch} kept moving during {MAX_RACES} merge attempts; "
            f"run `hive retry` when it is quiet",
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
        return MergeResult(
            MergeStatus.REFUSED,
            reason=f"the merge would delete files the task did not delete: "
            f"{', '.join(lost[:10])}; merge by hand or `hive retry`",
        )
    for label, command in req.checks:
        check = req.sandbox.run(command, wt, req.env, req.check_timeout)
        if check.code != 0:
            back_to_branch()
            return MergeResult(
                MergeStatus.CHECK_FAILED,
                reason=f"{label} failed (exit {check.code}): {command}",
                output_tail=tail(check.output, 30),
            )
    files = tuple(path for _, path in changes)
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
