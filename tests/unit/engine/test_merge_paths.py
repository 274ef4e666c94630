"""engine.merge both ways: in git's object store (`merge-tree`, git >= 2.38) and, when a
check must run on the merged files or git is older, in the task's worktree. Same
outcomes either way; the in-store merge never touches the worktree."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git

from hive.adapters import gitmerge
from hive.engine import merge as merging
from hive.engine.merge import MergeRequest, MergeResult, MergeStatus, Recorders


@pytest.fixture(params=["object store", "worktree (git < 2.38)"])
def in_store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    store = request.param == "object store"
    if not store:
        monkeypatch.setattr(gitmerge, "merges_without_worktree", lambda: False)
    return store


def task(root: Path, name: str, files: dict[str, str | None]) -> Path:
    """Branch `name` off main in its own worktree, with one commit writing (or deleting: None) `files`."""
    wt = root.parent / f"wt-{name}"
    git(root, "worktree", "add", "-q", "-b", name, str(wt), "main")
    for path, text in files.items():
        if text is None:
            git(wt, "rm", "-q", path)
        else:
            (wt / path).write_text(text)
            git(wt, "add", path)
    git(wt, "commit", "-q", "-m", f"{name}'s work")
    return wt


def run_merge(root: Path, wt: Path, branch: str, checks: tuple[tuple[str, str], ...] = ()) -> tuple[MergeResult, list]:
    seen: list = []
    req = MergeRequest(
        root=root,
        lock=root.parent / "merge.lock",
        main_branch="main",
        worktree=wt,
        branch=branch,
        message=f"hive: merge {branch}",
        checks=checks,
        check_timeout=30,
        env={},
    )
    rec = Recorders(
        intent=lambda c: seen.append(("intent", c)),
        merged=lambda r: seen.append(("merged", r.commit)),
        forget=lambda: seen.append(("forget",)),
        checking=lambda: seen.append(("checking",)),
    )
    return merging.merge(req, rec), seen


def test_a_clean_merge_is_a_merge_commit_of_main_and_the_branch(git_repo: Path, in_store: bool) -> None:
    wt = task(git_repo, "a", {"a.txt": "a\n"})
    task_tip = git(wt, "rev-parse", "HEAD")
    (git_repo / "m.txt").write_text("m\n")  # main moved on since the branch was made
    git(git_repo, "add", "m.txt")
    git(git_repo, "commit", "-q", "-m", "main's own")
    old_main = git(git_repo, "rev-parse", "main")
    result, seen = run_merge(git_repo, wt, "a")
    assert result.status == "merged" and result.files == ("a.txt",)
    assert git(git_repo, "rev-parse", "main") == result.commit
    assert git(git_repo, "log", "-1", "--format=%P%n%s", "main").splitlines() == [
        f"{old_main} {task_tip}",
        "hive: merge a",
    ]
    assert (git_repo / "a.txt").read_text() == "a\n", "the user's checkout of main was fast-forwarded"
    # its turn in the merge queue came first (the timeline's queue ends there), then main moved
    assert seen == [("checking",), ("intent", result.commit), ("merged", result.commit)]
    assert git(wt, "rev-parse", "HEAD") == (task_tip if in_store else result.commit)


def test_a_conflict_names_the_files_and_leaves_the_worktree_on_its_branch(git_repo: Path, in_store: bool) -> None:
    wt = task(git_repo, "a", {"README.md": "the task's\n"})
    (git_repo / "README.md").write_text("the user's\n")
    git(git_repo, "commit", "-q", "-am", "main's own")
    old_main = git(git_repo, "rev-parse", "main")
    result, seen = run_merge(git_repo, wt, "a")
    assert result.status == MergeStatus.CONFLICT and result.files == ("README.md",)
    assert git(git_repo, "rev-parse", "main") == old_main and seen == [("checking",)]
    assert git(wt, "symbolic-ref", "HEAD") == "refs/heads/a"
    assert git(wt, "status", "--porcelain") == ""


def test_a_branch_already_in_main_has_nothing_to_merge(git_repo: Path, in_store: bool) -> None:
    wt = task(git_repo, "a", {"a.txt": "a\n"})
    git(git_repo, "merge", "-q", "--ff-only", "a")
    before = git(git_repo, "rev-parse", "main")
    result, _ = run_merge(git_repo, wt, "a")
    assert result == MergeResult("merged", commit=before, files=(), reason="no changes to merge")
    assert git(git_repo, "rev-parse", "main") == before


def test_a_merge_that_would_delete_files_the_task_kept_is_refused(git_repo: Path, in_store: bool) -> None:
    """A branch that committed "every file deleted" (an interrupted checkout) never lands."""
    wt = task(git_repo, "a", {"README.md": None})
    before = git(git_repo, "rev-parse", "main")
    result, _ = run_merge(git_repo, wt, "a")
    assert result.status == MergeStatus.REFUSED and "README.md" in result.reason
    assert git(git_repo, "rev-parse", "main") == before


def test_a_check_runs_on_the_merged_files_and_a_failing_one_stops_the_merge(git_repo: Path) -> None:
    wt = task(git_repo, "a", {"a.txt": "a\n"})
    (git_repo / "m.txt").write_text("m\n")
    git(git_repo, "add", "m.txt")
    git(git_repo, "commit", "-q", "-m", "main's own")
    before = git(git_repo, "rev-parse", "main")
    result, _ = run_merge(git_repo, wt, "a", (("Verify", "test -f m.txt && test -f a.txt && false"),))
    assert result.status == MergeStatus.CHECK_FAILED and git(git_repo, "rev-parse", "main") == before
    assert git(wt, "symbolic-ref", "HEAD") == "refs/heads/a"
    result, _ = run_merge(git_repo, wt, "a", (("Verify", "test -f m.txt && test -f a.txt"),))
    assert result.status == "merged" and git(git_repo, "rev-parse", "main") == result.commit


def test_this_git_merges_in_its_object_store() -> None:
    """CI's git (Debian's 2.39) takes the in-store path; an older one falls back to the worktree."""
    assert gitmerge.merges_without_worktree()


@pytest.mark.parametrize("where", ["nowhere", "in another worktree"])
def test_main_checked_out_elsewhere_or_nowhere_still_moves(git_repo: Path, in_store: bool, where: str) -> None:
    """The user's checkout is on a branch of their own: it is never touched; main moves by
    a compare-and-swap of its ref, or by a fast-forward of the worktree that has it."""
    wt = task(git_repo, "a", {"a.txt": "a\n"})
    git(git_repo, "checkout", "-q", "-b", "mine")
    holder = git_repo.parent / "main-here"
    if where == "in another worktree":
        git(git_repo, "worktree", "add", "-q", str(holder), "main")
    result, _ = run_merge(git_repo, wt, "a")
    assert result.status == "merged" and git(git_repo, "rev-parse", "main") == result.commit
    assert git(git_repo, "symbolic-ref", "HEAD") == "refs/heads/mine" and not (git_repo / "a.txt").exists()
    if where == "in another worktree":
        assert (holder / "a.txt").read_text() == "a\n" and git(holder, "status", "--porcelain") == ""


def _signer(tmp_path: Path, works: bool) -> Path:
    """A stand-in for gpg as git calls it (`--status-fd=2 -bsau KEY`): a fixed signature, or a refusal."""
    prog = tmp_path / "fake-gpg"
    body = (
        'cat >/dev/null; echo "[GNUPG:] SIG_CREATED D 1 8 00 0 X" >&2\n'
        "printf -- '-----BEGIN PGP SIGNATURE-----\\nfake\\n-----END PGP SIGNATURE-----\\n'\n"
        if works
        else 'cat >/dev/null; echo "gpg: signing failed: No pinentry" >&2; exit 2\n'
    )
    prog.write_text("#!/bin/sh\n" + body)
    prog.chmod(0o755)
    return prog


def test_a_user_who_signs_commits_gets_signed_merge_commits(git_repo: Path, tmp_path: Path, in_store: bool) -> None:
    git(git_repo, "config", "gpg.program", str(_signer(tmp_path, works=True)))
    git(git_repo, "config", "user.signingKey", "ABC")
    wt = task(git_repo, "a", {"a.txt": "a\n"})
    git(git_repo, "config", "commit.gpgSign", "true")
    result, _ = run_merge(git_repo, wt, "a")
    assert result.status == "merged"
    assert "-----BEGIN PGP SIGNATURE-----" in git(git_repo, "cat-file", "commit", result.commit)


def test_a_merge_commit_that_cannot_be_signed_leaves_main_alone(git_repo: Path, tmp_path: Path, in_store: bool) -> None:
    git(git_repo, "config", "gpg.program", str(_signer(tmp_path, works=False)))
    wt = task(git_repo, "a", {"a.txt": "a\n"})
    git(git_repo, "config", "commit.gpgSign", "true")
    old_main = git(git_repo, "rev-parse", "main")
    result, seen = run_merge(git_repo, wt, "a")
    assert result.status == MergeStatus.REFUSED and "gpg failed to sign" in result.reason, result.reason
    assert git(git_repo, "rev-parse", "main") == old_main and seen == [("checking",)]
    assert git(wt, "rev-parse", "--abbrev-ref", "HEAD") == "a", "the worktree is back on the task's branch"
