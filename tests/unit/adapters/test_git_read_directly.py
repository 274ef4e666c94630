"""What hive.adapters.git reads from files instead of asking git (a branch's commit, a linked
worktree's folders, its lock) must be exactly what git says, and git must be asked whenever the
files do not say it plainly (packed refs, other names, a folder that is no worktree)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hive.adapters import git
from hive.errors import CommandError


def run(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


def test_a_branchs_commit_is_what_git_says_loose_or_packed(git_repo: Path, monkeypatch: pytest.MonkeyPatch):
    run(git_repo, "branch", "hive/p-1-a1")
    main = run(git_repo, "rev-parse", "main").strip()
    asked: list[tuple[str, ...]] = []
    real = git.git
    monkeypatch.setattr(git, "git", lambda cwd, *args, **kw: asked.append(args) or real(cwd, *args, **kw))
    assert git.rev_parse(git_repo, "refs/heads/main") == git.try_rev_parse(git_repo, "refs/heads/hive/p-1-a1") == main
    assert asked == [], "a loose ref is read, not asked"
    run(git_repo, "pack-refs", "--all")  # now only packed-refs holds them
    assert not (git_repo / ".git" / "refs" / "heads" / "main").exists()
    assert git.rev_parse(git_repo, "refs/heads/main") == main and len(asked) == 1
    for other in ("HEAD", "main", "refs/heads/main~0", "refs/heads/../heads/main", "refs/tags/v1"):
        said = real(git_repo, "rev-parse", "--verify", "--quiet", f"{other}^{{commit}}", check=False)
        assert git.try_rev_parse(git_repo, other) == said.stdout.strip()
    assert (
        git.try_rev_parse(git_repo, "refs/heads/none") == ""
        and git.try_rev_parse(git_repo / "nowhere", "refs/heads/main") == ""
    )


def test_a_symbolic_or_damaged_ref_file_is_left_to_git(git_repo: Path):
    main = run(git_repo, "rev-parse", "main").strip()
    run(git_repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    assert git.rev_parse(git_repo, "refs/heads/alias") == main
    (git_repo / ".git" / "refs" / "heads" / "torn").write_text(main[:20])
    assert git.try_rev_parse(git_repo, "refs/heads/torn") == ""


def test_a_linked_worktrees_folders_are_what_git_says(git_repo: Path, tmp_path: Path):
    wt = tmp_path / "wt"
    run(git_repo, "worktree", "add", "-q", "-b", "hive/p-1-a1", str(wt))
    top, gitdir = run(wt, "rev-parse", "--show-toplevel", "--absolute-git-dir").splitlines()
    assert git.worktree_dirs(wt) == (Path(top), Path(gitdir))
    assert git.worktree_dirs(git_repo) == (git_repo.resolve(), (git_repo / ".git").resolve()), "the main one: git says"
    (wt / ".git").write_text("gitdir: /nowhere\n")  # a folder that names no worktree's: git says none
    assert git.worktree_dirs(wt) is None
    (wt / ".git").unlink()
    assert git.worktree_dirs(wt) is None


def test_a_worktree_is_locked_and_unlocked_as_git_does_it(git_repo: Path, tmp_path: Path):
    wt = tmp_path / "wt"
    run(git_repo, "worktree", "add", "-q", "-b", "hive/p-1-a1", str(wt))
    git.worktree_lock(git_repo, wt, "hive: moving")
    assert f"worktree {wt.resolve()}\n" in (listed := run(git_repo, "worktree", "list", "--porcelain"))
    assert "locked hive: moving" in listed
    with pytest.raises(CommandError, match="locked already"):
        git.worktree_lock(git_repo, wt, "again")
    git.worktree_unlock(git_repo, wt)
    assert "\nlocked" not in run(git_repo, "worktree", "list", "--porcelain")
    git.worktree_unlock(git_repo, wt)  # unlocked already: nothing to do
    dirs = git.worktree_dirs(wt)
    assert dirs is not None and not [p for p in dirs[1].iterdir() if p.name.endswith(".tmp")]


def test_a_worktrees_head_and_merge_are_what_git_says(git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    wt = tmp_path / "wt"
    run(git_repo, "worktree", "add", "-q", "-b", "hive/p-1-a1", str(wt))
    asked: list[tuple[str, ...]] = []
    real = git.git
    monkeypatch.setattr(git, "git", lambda cwd, *args, **kw: asked.append(args) or real(cwd, *args, **kw))

    def said() -> tuple[str, bool]:
        out = real(wt, "rev-parse", "--symbolic-full-name", "HEAD", "--git-path", "MERGE_HEAD").stdout.split("\n")
        return out[0], (wt / out[1]).exists()

    assert git.head_and_merge(wt) == said() == ("refs/heads/hive/p-1-a1", False)
    (wt / "b.txt").write_text("b\n")
    run(wt, "add", "b.txt")
    run(wt, "commit", "-qm", "b")
    run(git_repo, "commit", "-q", "--allow-empty", "-m", "on main")
    run(wt, "merge", "--no-commit", "--no-ff", "main")  # a merge under way: MERGE_HEAD in its folder
    assert git.head_and_merge(wt) == said() == ("refs/heads/hive/p-1-a1", True)
    run(wt, "merge", "--abort")
    run(wt, "checkout", "-q", "--detach")
    assert git.head_and_merge(wt) == said() == ("HEAD", False)
    assert asked == [], "read from the files, not asked"

    run(wt, "checkout", "-q", "hive/p-1-a1")
    run(git_repo, "pack-refs", "--all")  # the branch only packed: git is asked
    assert git.head_and_merge(wt) == said() and len(asked) == 1
    run(wt, "checkout", "-q", "--orphan", "unborn")  # no such branch yet: git says so
    with pytest.raises(CommandError):
        git.head_and_merge(wt)
    assert git.head_and_merge(git_repo) == ("refs/heads/main", False), "the main checkout: asked of git"
