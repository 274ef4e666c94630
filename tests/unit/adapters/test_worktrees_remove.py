"""adapters/worktrees.remove_if_clean in a real repo: a worktree is removed only when git shows
its work is all committed (its branch keeps it); uncommitted or untracked work keeps it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hive.adapters import worktrees


def _worktree(repo: Path) -> Path:
    wt = repo.parent / "wt"
    worktrees.create(repo, wt, "hive/p-1-a1", "main")
    return wt


def test_a_worktree_with_uncommitted_or_untracked_work_is_kept(git_repo: Path):
    wt = _worktree(git_repo)
    (wt / "README.md").write_text("changed, not committed\n")
    (wt / "new.txt").write_text("never added\n")
    note = worktrees.remove_if_clean(git_repo, wt)
    assert note == f"kept {wt}: 2 uncommitted change(s)"
    assert (wt / "README.md").read_text() == "changed, not committed\n" and (wt / "new.txt").exists()


def test_a_worktree_whose_work_is_committed_is_removed_and_its_branch_keeps_the_work(git_repo: Path):
    wt = _worktree(git_repo)
    (wt / "new.txt").write_text("committed\n")
    for args in (["add", "new.txt"], ["commit", "-qm", "work"]):
        subprocess.run(["git", "-C", str(wt), *args], check=True, capture_output=True)
    assert worktrees.remove_if_clean(git_repo, wt) == ""
    assert not wt.exists()
    shown = subprocess.run(
        ["git", "-C", str(git_repo), "show", "hive/p-1-a1:new.txt"], check=True, capture_output=True, text=True
    )
    assert shown.stdout == "committed\n"
