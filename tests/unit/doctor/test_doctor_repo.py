"""hive/doctor/repo.py on real git repositories: tools, identity, main branch, checkout."""

from __future__ import annotations

import subprocess

import pytest
from conftest import git

from hive.checks import FAIL, OK, WARN
from hive.doctor.repo import checkout_check, identity_check, main_branch_check, repo_checks, tool_checks


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first")
    return root


def test_git_and_tmux_versions_are_shown():
    git_check, tmux_check = tool_checks("tmux")
    assert git_check.status == OK and git_check.detail.startswith("git version ")
    assert tmux_check.status == OK and tmux_check.detail.startswith("tmux ")


def test_a_missing_tool_fails_with_how_to_install_it(monkeypatch):
    monkeypatch.setattr("hive.doctor.repo.shutil.which", lambda name: None)
    [git_check, tmux_check] = tool_checks("tmux")
    assert git_check.status == FAIL and git_check.detail == "`git` is not on PATH"
    assert "apt-get install -y tmux" in tmux_check.fix


def test_identity_from_the_pinned_environment(root):
    check = identity_check(root)
    assert check.status == OK
    author, committer = "Test Author <author@example.invalid>", "Test Committer <committer@example.invalid>"
    assert check.detail == f"author {author}, committer {committer}"


def test_identity_from_git_config_and_none_at_all(root, monkeypatch):
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("EMAIL", "")
    git(root, "config", "user.useConfigOnly", "true")  # no guessing from the host name
    missing = identity_check(root)
    assert missing.status == FAIL and "git config --global user.name" in missing.fix
    git(root, "config", "user.name", "Repo Person")
    git(root, "config", "user.email", "repo@example.invalid")
    assert identity_check(root).detail == "Repo Person <repo@example.invalid>"


def test_main_branch_must_exist(root):
    assert main_branch_check(root, "main").status == OK
    check = main_branch_check(root, "trunk")
    assert check.status == FAIL and "'trunk' does not exist (branches: main)" in check.detail
    assert "[merge] main_branch" in check.fix


def test_uncommitted_tracked_changes_warn_untracked_files_do_not(root):
    (root / "new.txt").write_text("untracked\n")
    assert checkout_check(root).status == OK
    (root / "a.txt").write_text("changed\n")
    check = checkout_check(root)
    assert check.status == WARN and check.detail == "uncommitted changes to tracked files: a.txt"


def test_a_merge_in_progress_fails(root):
    git(root, "checkout", "-q", "-b", "side")
    (root / "a.txt").write_text("side\n")
    git(root, "commit", "-qam", "side")
    git(root, "checkout", "-q", "main")
    (root / "a.txt").write_text("main\n")
    git(root, "commit", "-qam", "main")
    subprocess.run(["git", "-C", str(root), "merge", "side"], capture_output=True)
    check = checkout_check(root)
    assert check.status == FAIL and check.detail == f"a merge is in progress in {root}"
    assert "git merge --abort" in check.fix


def test_not_a_repository(tmp_path):
    [check] = repo_checks(tmp_path, "main")
    assert check.status == FAIL and "is not a git repository" in check.detail
