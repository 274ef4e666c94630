"""hive/executors/ray/shipping.py and executor.adopt: the branch travels as git bundles holding
only what the other side lacks, and the controller's mirror worktree follows the node's commits.
Real git repositories; no Ray needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git

from hive.adapters.git import UNPACK_LIMIT
from hive.executors.ray.cluster import project_id
from hive.executors.ray.link import adopt
from hive.executors.ray.shipping import create_bundle, known_commits, take_bundle


def commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def controller(git_repo: Path) -> Path:
    for i in range(20):  # some history, so a full bundle is visibly larger than an incremental one
        commit(git_repo, f"f{i}.txt", f"{i}\n" * 200)
    git(git_repo, "branch", "task-a1")
    return git_repo


def empty_repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q")
    return path


def test_a_node_gets_the_whole_branch_once_then_only_what_it_lacks(controller: Path, tmp_path: Path):
    node = empty_repo(tmp_path / "node")
    spool = tmp_path / "spool"
    full = create_bundle(controller, "refs/heads/task-a1", known_commits(controller, []), spool)
    take_bundle(node, full)
    git(node, "update-ref", "refs/hive/seen/a1", git(controller, "rev-parse", "task-a1"))
    assert git(node, "fsck", "--connectivity-only", "--no-dangling") == ""
    # the next attempt's branch: one more commit on main; the node says what it has
    tip = commit(controller, "more.txt", "more\n")
    git(controller, "branch", "task-a2")
    seen = [git(node, "rev-parse", "refs/hive/seen/a1"), "0" * 40]  # a commit the controller lacks is ignored
    known = known_commits(controller, seen)
    assert known == seen[:1]
    small = create_bundle(controller, "refs/heads/task-a2", known, spool)
    assert 0 < len(small) < len(full) / 4
    take_bundle(node, small)
    assert git(node, "cat-file", "-t", tip) == "commit"
    # nothing new: no bundle at all
    assert create_bundle(controller, "refs/heads/task-a2", [tip], spool) == b""
    assert list(spool.iterdir()) == []  # temp files never stay behind


def test_the_controllers_mirror_worktree_follows_the_nodes_commits(controller: Path, tmp_path: Path):
    wt = tmp_path / "wt"
    git(controller, "worktree", "add", "-q", str(wt), "task-a1")
    (wt / "AGENTS.md").write_text("the brief, which git does not track\n")
    # the node's work, arriving as a bundle
    node = tmp_path / "node"
    git(tmp_path, "clone", "-q", "--branch", "task-a1", str(controller), str(node))
    tip = commit(node, "work.txt", "agent's work\n")
    spool = tmp_path / "spool"
    data = create_bundle(node, "refs/heads/task-a1", [git(controller, "rev-parse", "task-a1")], spool)
    take_bundle(controller, data)
    adopt(controller, "task-a1", str(wt), tip)
    assert git(controller, "rev-parse", "task-a1") == tip
    assert (wt / "work.txt").read_text() == "agent's work\n"
    assert (wt / "AGENTS.md").exists()  # Hive's own files stay
    # without its worktree (deleted, or never made) the branch alone moves
    tip2 = commit(node, "more.txt", "more\n")
    data = create_bundle(node, "refs/heads/task-a1", [tip], spool)
    take_bundle(controller, data)
    git(controller, "worktree", "remove", "--force", str(wt))
    adopt(controller, "task-a1", str(wt), tip2)
    assert git(controller, "rev-parse", "task-a1") == tip2


def packs(repo: Path) -> int:
    return len(list((repo / ".git" / "objects" / "pack").glob("*.pack")))


def test_a_few_commits_arrive_as_loose_objects_many_as_one_pack_and_no_ref_moves(controller: Path, tmp_path: Path):
    node = tmp_path / "node"
    git(tmp_path, "clone", "-q", "--branch", "task-a1", str(controller), str(node))
    spool, refs = tmp_path / "spool", git(controller, "for-each-ref")
    before = packs(controller)
    (node / "f1.txt").write_text("1\n" * 199 + "changed\n")
    git(node, "commit", "-q", "-am", "edit f1")
    tip = git(node, "rev-parse", "HEAD")
    take_bundle(controller, create_bundle(node, "refs/heads/task-a1", [git(controller, "rev-parse", "task-a1")], spool))
    assert packs(controller) == before and git(controller, "cat-file", "-t", tip) == "commit"  # loose: no pack each
    for i in range(UNPACK_LIMIT):  # a large piece of work
        (node / f"n{i}.txt").write_text(f"new {i}\n")
    git(node, "add", ".")
    git(node, "commit", "-q", "-m", "many files")
    big = git(node, "rev-parse", "HEAD")
    take_bundle(controller, create_bundle(node, "refs/heads/task-a1", [tip], spool))
    assert packs(controller) == before + 1 and git(controller, "cat-file", "-t", f"{big}:n99.txt") == "blob"
    assert git(controller, "for-each-ref") == refs  # objects only: the caller moves the branch
    git(controller, "update-ref", "refs/heads/task-a1", big)
    assert git(controller, "fsck", "--connectivity-only", "--no-dangling") == ""


def test_a_project_is_named_the_same_way_on_every_node_and_safely(tmp_path: Path):
    odd = tmp_path / "my repo; rm -rf"
    odd.mkdir()
    name = project_id(odd)
    assert name == project_id(odd) and name.startswith("my-repo--rm--rf-")
    assert project_id(tmp_path / "other") != name
    assert all(c.isalnum() or c in "-_." for c in name)
