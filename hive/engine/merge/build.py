"""Building a task's merge commit and vetting it: made in git's object store (`merge-tree`, no
checkout) or, with a git older than 2.38, in the task's worktree; refused if it would delete files
the task did not delete; held for a human if it touches what a task may not change on its own
(engine/hold.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hive.adapters import git, gitmerge
from hive.crashsafe import crash_point
from hive.engine import hold
from hive.engine.merge.types import MergeRequest, MergeResult, MergeStatus
from hive.output import tail


@dataclass(frozen=True)
class Built:
    """A merge commit, made."""

    commit: str


def build(req: MergeRequest, main_sha: str, branch: str, identity: tuple[str, ...], sign: bool) -> Built | MergeResult:
    """The merge commit, made in git's object store only; or why there is none."""
    crash_point("in-merge")
    tree, conflicts = gitmerge.merge_tree(req.root, main_sha, branch)
    if conflicts:
        return conflict(req, conflicts)
    made = gitmerge.commit_tree(req.root, tree, (main_sha, branch), req.message, identity, sign)
    if made.code != 0:  # e.g. signing failed: as `git merge` would, say so and leave main alone
        return MergeResult(MergeStatus.REFUSED, reason=f"git could not make the merge commit: {tail(made.output, 5)}")
    return Built(made.stdout.strip())


def build_in(wt: Path, req: MergeRequest, main_sha: str, identity: tuple[str, ...]) -> Built | MergeResult:
    """The merge commit, made in the task's worktree (left checked out there for the
    checks); or why there is none (the worktree back on the task's branch)."""
    git.checkout(wt, main_sha, detach=True)
    crash_point("in-merge")
    res = gitmerge.merge_no_ff(wt, req.branch, req.message, identity)
    if res.code == 0:
        return Built(git.head(wt))
    conflicts = gitmerge.conflicted_files(wt)
    gitmerge.merge_abort(wt)
    git.checkout(wt, req.branch)
    if conflicts:
        return conflict(req, conflicts)
    return MergeResult(MergeStatus.REFUSED, reason=f"git refused the merge: {tail(res.output, 5)}")


def conflict(req: MergeRequest, files: list[str]) -> MergeResult:
    return MergeResult(
        MergeStatus.CONFLICT,
        files=tuple(files),
        reason=f"merge conflict with {req.main_branch} in: {', '.join(files)}",
    )


def unexpected_deletions(req: MergeRequest, main_sha: str, deleted: set[str]) -> list[str]:
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


def deleting(lost: list[str]) -> MergeResult:
    return MergeResult(
        MergeStatus.REFUSED,
        reason=f"the merge would delete files the task did not delete: {', '.join(lost[:10])}; "
        f"merge by hand or `hive retry`",
    )


def held(req: MergeRequest, base: str, merged: str, files: tuple[str, ...]) -> str:
    """Why this merge of the task (`merged`, on `base`; its `files`) waits for a human ("": it
    does not): Hive's own files among them, or a file over the size limit among its objects."""
    protected = hold.touched(req.hold.protected, files)
    if hold.PYPROJECT in files and hold.guards_doit(req.hold.protected) and hold.PYPROJECT not in protected:
        before, after = (git.show_file(req.root, rev, hold.PYPROJECT) for rev in (base, merged))
        if hold.doit_table(before) != hold.doit_table(after):
            protected.append(hold.DOIT_TABLE)
    limit = req.hold.max_bytes
    big = git.big_files(req.root, merged, base, limit) if limit is not None else []
    return hold.reason(protected, big, req.hold.max_mb)


def back_to_branch(req: MergeRequest) -> None:
    """The task's worktree back on its branch, whatever its checks left in its files."""
    git.checkout(req.worktree, req.branch, force=True)
