"""The git commands of a merge into main: built in git's object store (`merge-tree`,
git 2.38) or in the task's worktree, then published by a fast-forward. Kept apart
from adapters/git.py (every other git command Hive runs) as the merge lock's own:
each command here is one more that every other merge waits for."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import NamedTuple

from hive.adapters import proc
from hive.adapters.git import _NO_HOOKS, _env, _locked_retry, _out, git
from hive.errors import CommandError


def merge_no_ff(cwd: Path | str, rev: str, message: str, identity: tuple[str, ...]) -> proc.Result:
    """Merge `rev` into the current HEAD with a merge commit; the result tells success or conflict.
    `identity`: `committer(cwd)`, asked beforehand (not while holding the merge lock)."""
    return _locked_retry(cwd, *_NO_HOOKS, *identity, "merge", "--no-ff", "--no-edit", "-m", message, rev, check=False)


_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@functools.cache
def merges_without_worktree() -> bool:
    """Can this git merge in its object store alone (`merge-tree --write-tree`, git 2.38)?"""
    found = re.search(r"(\d+)\.(\d+)", proc.run(["git", "version"], check=False, env=_env("/")).stdout)
    return found is not None and (int(found[1]), int(found[2])) >= (2, 38)


def merge_tree(root: Path | str, ours: str, theirs: str) -> tuple[str, list[str]]:
    """Merge `theirs` into `ours` without a worktree or index: (tree, conflicted paths)."""
    args = ("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs)
    res = git(root, *args, check=False)
    tree, *paths = res.stdout.split("\0")
    if res.code not in (0, 1) or not _OID.fullmatch(tree):  # a bad revision exits 1 too, with no tree
        raise CommandError(["git", "-C", str(root), *args], res.code, res.output)
    return tree, sorted({p for p in paths if p}) if res.code else []


def commit_tree(
    root: Path | str, tree: str, parents: tuple[str, ...], message: str, identity: tuple[str, ...], sign: bool
) -> proc.Result:
    """A commit of `tree` (no hooks run: this is plumbing), its id on stdout; signed with the
    user's key if `sign`. `identity`: see `committer`."""
    parent_args = (a for p in parents for a in ("-p", p))
    return git(
        root, *identity, "commit-tree", *(("-S",) if sign else ()), tree, *parent_args, "-m", message, check=False
    )


@functools.cache
def signs_commits(root: Path | str) -> bool:
    """Does the user have git sign their commits (`commit.gpgSign`)? Asked once a process, like `committer`."""
    return git(root, "config", "--type=bool", "commit.gpgSign", check=False).stdout.strip() == "true"


class Tips(NamedTuple):
    main: str  # the ref's commit
    head: str  # the HEAD commit of the checkout at the repository's root
    checked_out: str  # the ref that checkout has checked out ("HEAD" if detached)


def tips(root: Path | str, ref: str) -> Tips | None:
    """`ref` and the checkout at `root`, in one git command; None if any of them cannot be read."""
    res = git(root, "rev-parse", f"{ref}^{{commit}}", "HEAD", "--symbolic-full-name", "HEAD", check=False)
    lines = res.stdout.split()
    return Tips(lines[0], lines[1], lines[2]) if res.code == 0 and len(lines) == 3 else None


def ff_merge(cwd: Path | str, rev: str) -> proc.Result:
    """Fast-forward the checked-out branch (index and files too); git refuses rather than
    overwrite local changes or untracked files. No `maintenance --auto` after it: this runs
    under the merge lock, and the agents' own commits let git tidy the repository."""
    args = ("-c", "maintenance.auto=false", "merge", "--ff-only", "--no-edit", rev)
    return _locked_retry(cwd, *_NO_HOOKS, *args, check=False)


def merge_abort(cwd: Path | str) -> None:
    _locked_retry(cwd, "merge", "--abort", check=False)


def conflicted_files(cwd: Path | str) -> list[str]:
    return _out(cwd, "diff", "--name-only", "--diff-filter=U").splitlines()
