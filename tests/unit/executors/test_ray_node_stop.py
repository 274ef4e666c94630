"""A node's stop of an attempt whose worktree is deleted under it (found by `python -m tests.soak --ray`):
it says so, and the actor's call does not fail. No Ray needed: an Attempt on a real git cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import git

from hive.adapters import worktrees
from hive.executors.ray import node as node_side
from hive.executors.ray.node import Attempt
from hive.executors.ray.shipping import Spec


class FakeTmux:
    def agent(self, ref: object) -> FakeTmux:
        return self

    def stop(self, patience: float, finished: bool, report: object) -> str:
        return ""


class FakeNode:
    def __init__(self, home: Path) -> None:
        self.home, self.cache, self.ip, self.tmux = home, home / "repo", "127.0.0.9", FakeTmux()


@pytest.fixture
def attempt(git_repo: Path, tmp_path: Path) -> Attempt:
    spec = Spec(
        name="hive-w1-p-1-abc-a1", key="p:1", attempt=1, branch="hive/p-1-a1", start=git(git_repo, "rev-parse", "HEAD"),
        argv=[], env={}, unset=(), root="/ctl", worktree="/ctl/wt", brief="AGENTS.md",
    )  # fmt: skip
    home = tmp_path / "node"
    home.mkdir()
    shutil.copytree(git_repo, home / "repo")
    a = Attempt(FakeNode(home), spec)  # type: ignore[arg-type]
    git(home / "repo", "worktree", "add", "-q", "-b", spec.branch, str(a.worktree))
    return a


def test_a_worktree_deleted_while_the_node_stops_its_attempt_is_said_not_raised(
    attempt: Attempt, monkeypatch: pytest.MonkeyPatch
) -> None:
    (attempt.worktree / "left.txt").write_text("uncommitted\n")
    real = worktrees.health

    def deleted_just_after_the_look(path: Path) -> str:
        seen = real(path)
        shutil.rmtree(path)  # the soak's `rm -rf` landing between the look and the first git command
        monkeypatch.setattr(node_side.worktrees, "health", real)
        return seen

    monkeypatch.setattr(node_side.worktrees, "health", deleted_just_after_the_look)
    left, said = attempt.stop(patience=0.1, finished=True)
    assert left == ""
    assert said == ["what it left uncommitted on 127.0.0.9 was not committed: its worktree there was deleted"]


def test_what_an_agent_left_uncommitted_is_committed_on_its_branch(attempt: Attempt) -> None:
    (attempt.worktree / "left.txt").write_text("uncommitted\n")
    assert attempt.stop(patience=0.1, finished=True) == ("", [])
    assert git(attempt.worktree, "show", "hive/p-1-a1:left.txt") == "uncommitted"
