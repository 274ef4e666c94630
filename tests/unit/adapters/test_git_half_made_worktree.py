"""adapters/git.git: a command that fails because another attempt's worktree is half-made beside
it (seen under `doit -n 16`: "failed to read .git/worktrees/<id>/commondir") runs again; any
other failure is reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from hive.adapters import git, proc
from hive.errors import CommandError

HALF_MADE = "fatal: failed to read .git/worktrees/w4-p-t04-279361-a1/commondir: Success"


def scripted(monkeypatch: pytest.MonkeyPatch, answers: list[proc.Result]) -> list[list[str]]:
    calls: list[list[str]] = []

    def run(argv: list[str], *args: object, **kwargs: object) -> proc.Result:
        calls.append(argv)
        return answers.pop(0)

    monkeypatch.setattr(proc, "run", run)
    return calls


def test_a_command_that_met_a_half_made_worktree_runs_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    calls = scripted(
        monkeypatch,
        [
            proc.Result(128, "", HALF_MADE),
            proc.Result(128, "", "fatal: bad object worktrees/w2-p-t52-bafc6e-a1/HEAD"),
            proc.Result(0, "ok", ""),
        ],
    )
    assert git.git(tmp_path, "fetch", "x.bundle").stdout == "ok"
    assert len(calls) == 3 and all(c[-2:] == ["fetch", "x.bundle"] for c in calls)


def test_other_failures_are_not_retried(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    calls = scripted(monkeypatch, [proc.Result(128, "", "fatal: not a git repository")])
    with pytest.raises(CommandError, match="not a git repository"):
        git.git(tmp_path, "status")
    assert len(calls) == 1


def test_a_worktree_that_stays_half_made_fails_after_the_patience(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(git, "HALF_MADE_PATIENCE", 0.2)
    calls = scripted(monkeypatch, [proc.Result(128, "", HALF_MADE)] * 100)
    with pytest.raises(CommandError, match="commondir"):
        git.git(tmp_path, "worktree", "add", "-B", "b", "p", "main")
    assert 2 <= len(calls) < 100


def test_a_worktree_add_whose_folder_a_prune_beside_it_removed_runs_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """git's own race: `worktree add` makes .git/worktrees/<id>/, and a `worktree prune` run
    by another attempt deletes it (no gitdir file yet) before the "locked" file is written in
    it. git then exits, removing what it made, so the same command can simply run again."""
    pruned = (
        "Preparing worktree (new branch 'hive/wide-t46-149d01-a1')\n"
        "fatal: could not open '.git/worktrees/w10-wide-t46-149d01-a1/locked' for writing: No such file or directory"
    )
    calls = scripted(monkeypatch, [proc.Result(128, "", pruned), proc.Result(0, "", "")])
    git.git(tmp_path, "worktree", "add", "-B", "b", "p", "main")
    assert len(calls) == 2
