"""A worktree's ignore file (hive.adapters.worktrees.set_excludes, park): Hive's own files (the
brief, copied secrets) hidden from the agent's commits, the user's global ignores kept; the file is
the worktree's own, in its folder in the repository, named in its config once, so an attempt in a
reused checkout (and parking it) runs no `git config` (issue 44). Real git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hive.adapters import git, worktrees


def sh_git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False).stdout.strip()


def ignored(cwd: Path, *names: str) -> list[str]:
    return sh_git(cwd, "check-ignore", "--no-index", *names).split()


@pytest.fixture
def configs(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every `git config` that names a worktree's ignore file, as it is asked for."""
    asked: list[Path] = []
    real = git.set_worktree_excludes

    def recorded(root: Path | str, worktree: Path, excludes_file: Path) -> None:
        asked.append(excludes_file)
        real(root, worktree, excludes_file)

    monkeypatch.setattr(git, "set_worktree_excludes", recorded)
    return asked


def checkout(root: Path, name: str) -> Path:
    wt = root.parent / name
    sh_git(root, "worktree", "add", "-q", "--detach", str(wt), "main")
    assert (wt / ".git").is_file()
    return wt


def test_a_reused_checkout_names_its_ignore_file_once_and_parks_hiding_nothing_of_hives(
    git_repo: Path, configs: list[Path]
):
    home = Path(os.environ["HOME"])
    (home / ".config" / "git").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "git" / "ignore").write_text("*.swp\n")  # the user's own, global
    wt = checkout(git_repo, "wt-one")
    folder = git.worktree_folder(wt)
    assert folder is not None
    worktrees.set_excludes(git_repo, wt, git_repo.parent / "attempt-1", ["AGENTS.md", ".env"])
    assert configs == [folder / worktrees.EXCLUDES]
    assert ignored(wt, "AGENTS.md", ".env", "x.swp", "kept.txt") == ["AGENTS.md", ".env", "x.swp"]
    assert "/AGENTS.md" in (git_repo.parent / "attempt-1").read_text(), "the attempt's copy (its sandbox's)"

    # the next attempt in the same checkout: its names, and no `git config`
    worktrees.set_excludes(git_repo, wt, git_repo.parent / "attempt-2", ["NOTES.md"])
    assert configs == [folder / worktrees.EXCLUDES]
    assert ignored(wt, "AGENTS.md", "NOTES.md", "x.swp") == ["NOTES.md", "x.swp"]

    # parked: what Hive's names hid is cleaned away, what the user ignores stays
    for name in ("NOTES.md", "x.swp"):
        (wt / name).write_text("left\n")
    spare = git_repo.parent / "w1-spare"
    assert worktrees.park(git_repo, wt, spare) == ""
    assert not (spare / "NOTES.md").exists() and (spare / "x.swp").exists()
    assert ignored(spare, "NOTES.md", "AGENTS.md", "x.swp") == ["x.swp"]
    assert configs == [folder / worktrees.EXCLUDES], "parking asks no `git config` either"


def test_a_config_not_read_plainly_is_set_by_git_each_time(tmp_path: Path, git_repo: Path, configs: list[Path]):
    """A path git writes quoted (a `#` in it) is not read back here: git names it at each
    attempt, as before, and the files are hidden all the same."""
    wt = checkout(git_repo, "wt-two")
    folder = git.worktree_folder(wt)
    assert folder is not None
    weird = tmp_path / "C#Sharp" / "excludes"
    git.set_worktree_excludes(git_repo, wt, weird)
    assert git.worktree_excludes(folder) is None  # quoted by git: "not plainly so"
    configs.clear()
    worktrees.set_excludes(git_repo, wt, tmp_path / "attempt-1", ["AGENTS.md"])
    worktrees.set_excludes(git_repo, wt, tmp_path / "attempt-2", ["AGENTS.md"])
    assert configs == [folder / worktrees.EXCLUDES], "named once it reads plainly"
    assert git.worktree_excludes(folder) == folder / worktrees.EXCLUDES
    assert ignored(wt, "AGENTS.md") == ["AGENTS.md"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[core]\n\texcludesFile = /a/b\n", "/a/b"),
        ("[core]\n\texcludesfile=/a/b\n", "/a/b"),
        ('[core]\n\texcludesFile = "/a/#b"\n', None),
        ("[other]\n\texcludesFile = /a/b\n", None),
        ("[core]\n\texcludesFileX = /a/b\n", None),
        ("[core]\n\texcludesFile = /a/b ; comment\n", None),
        ("", None),
    ],
)
def test_the_worktrees_ignore_file_is_read_from_its_config_only_when_plain(
    git_repo: Path, text: str, expected: str | None
):
    wt = checkout(git_repo, "wt-three")
    folder = git.worktree_folder(wt)
    assert folder is not None
    (folder / "config.worktree").write_text(text)
    assert git.worktree_excludes(folder) == (Path(expected) if expected else None)
