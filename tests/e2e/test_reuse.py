"""A worker starts its next task in the checkout of the task it finished (`[worktrees] reuse`,
issue 25): git rewrites only what differs, the project's ignored files stay, Hive's own files do
not, and a move of a checkout cut short anywhere is finished or cleared, never worked in half."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from conftest import ONE_THEN_TWO, Repo, assert_finished_exactly_once, git

from hive.adapters import worktrees
from hive.store.paths import Paths

# Task 1 leaves an ignored cache and Hive copies `.env` in; task 2 (on the same worker, next)
# reports whether it finds the cache.
PLAN = """
### Task 1: Build
fake: write .gitignore cache/
fake: write cache/warm.txt compiled
fake: write one.txt one
fake: commit part one
fake: signal done

### Task 2: Next
**Depends on:** 1
fake: try-read cache/warm.txt
fake: write two.txt two
fake: commit part two
fake: signal done
"""


def log_of(repo: Repo, task: str) -> str:
    return Paths(repo.root).log_file("r", task).read_text(errors="replace")


def run_plan(repo: Repo, reuse: bool) -> str:
    """PLAN run with `[worktrees] reuse` so set and `.env` copied in: what task 2 found of the cache."""
    (repo.root / ".env").write_text("SECRET=1\n")
    repo.configure(extra=f'\n[worktrees]\nreuse = {str(reuse).lower()}\ncopy = [".env"]\n')
    repo.write_plan("r", PLAN)
    r = repo.doit()
    assert r.returncode == 0, r.stdout + r.stderr
    assert_finished_exactly_once(repo, {"r:1": "part one", "r:2": "part two"})
    return next(line for line in log_of(repo, "2").splitlines() if "try-read cache/warm.txt" in line)


def test_the_next_task_of_a_worker_starts_in_its_last_checkout_with_the_ignored_files_kept(repo: Repo):
    assert run_plan(repo, reuse=True).endswith(": ok"), "the ignored cache of task 1 is kept"
    one, two = repo.state("r", "1")["worktree"], repo.state("r", "2")["worktree"]
    assert one != two and not Path(one).exists()
    # one checkout went from task 1 to task 2 and back: git's record of it is the one task 1 made
    spare = repo.spares()
    assert [Path(p).name for p in spare] == ["w1-spare"], spare
    admin = git(Path(spare[0]), "rev-parse", "--absolute-git-dir")
    assert Path(admin).name == Path(one).name, admin
    # what it keeps: main's files and the project's ignored ones; not Hive's (the brief, the copy)
    kept = Path(spare[0])
    assert (kept / "cache" / "warm.txt").read_text() == "compiled\n"
    assert not (kept / "AGENTS.md").exists() and not (kept / ".env").exists()
    assert git(kept, "rev-parse", "HEAD") == repo.git("rev-parse", "main^2")  # task 2's work, detached
    # parked, it hides none of Hive's files any more: its own ignore file, which its config names
    # from its first attempt on (no `git config` at each attempt), holds only the user's global ones
    named = git(kept, "config", "--worktree", "--get", "core.excludesFile", check=False)
    assert named == str(Path(admin) / worktrees.EXCLUDES), named
    assert "AGENTS.md" not in Path(named).read_text() and ".env" not in Path(named).read_text()
    for name in ("AGENTS.md", ".env"):
        assert git(kept, "check-ignore", "--no-index", name, check=False) == "", name


def test_reuse_false_gives_each_attempt_a_fresh_checkout(repo: Repo):
    assert "denied" in run_plan(repo, reuse=False)
    assert repo.spares() == []


def test_hive_cleanup_removes_the_spare_checkouts(repo: Repo):
    repo.write_plan("f", ONE_THEN_TWO)
    assert repo.doit().returncode == 0
    assert len(repo.spares()) == 1
    r = repo.hive("cleanup")
    assert r.returncode == 0 and "a worker's spare checkout" in r.stdout, r.stdout
    assert repo.spares() == [] and repo.worktrees() == []


@pytest.mark.parametrize("point", ["in-park", "in-reuse"])
def test_kill9_while_a_checkout_moves_finishes_the_move_and_lands_the_work_once(repo: Repo, point: str):
    """in-park: task 1's checkout moved to the spare's place, still locked; in-reuse: the spare
    moved to task 2's place, switched to its branch, still locked."""
    repo.write_plan("f", ONE_THEN_TWO)
    crashed = repo.doit(env={"HIVE_FAULT": point})
    assert crashed.returncode == -signal.SIGKILL
    locked = [w for w in repo.git("worktree", "list", "--porcelain").split("\n\n") if "locked hive: moving" in w]
    assert len(locked) == 1, "the checkout is found mid-move"
    r = repo.doit()
    assert r.returncode == 0, r.stdout + r.stderr
    assert_finished_exactly_once(repo, {"f:1": "the work", "f:2": "next work"})
    assert "locked" not in repo.git("worktree", "list", "--porcelain")
    assert repo.starts().count("f:1") == 1


def test_a_move_cut_between_the_rename_and_gits_record_is_repaired_not_pruned(repo: Repo):
    """git's own move renames the folder and then records where it went; the lock Hive takes
    first keeps a prune from forgetting it meanwhile, and `clear_if_broken` finishes the move."""
    wt, moved = repo.root / "worktrees" / "a", repo.root / "worktrees" / "b"
    repo.git("worktree", "add", "-q", "--detach", str(wt), "main")
    repo.git("worktree", "lock", "--reason", worktrees.MOVING_LOCK, str(wt))
    wt.rename(moved)  # what git's move does first
    repo.git("worktree", "prune")
    assert worktrees.health(moved) == worktrees.MOVING
    assert worktrees.clear_if_broken(repo.root, moved) is None
    assert worktrees.health(moved) == worktrees.OK
    listed = repo.git("worktree", "list", "--porcelain")
    assert f"worktree {moved}" in listed and "locked" not in listed and "prunable" not in listed


def test_a_spare_whose_park_was_cut_short_is_finished_by_the_next_run_though_no_task_takes_it(repo: Repo):
    repo.write_plan("f", "### Task 1: Work\nfake: write w.txt w\nfake: commit the work\nfake: signal done\n")
    crashed = repo.doit(env={"HIVE_FAULT": "in-park"})
    assert crashed.returncode == -signal.SIGKILL
    assert "locked hive: moving" in repo.git("worktree", "list", "--porcelain")
    r = repo.doit()  # nothing to run: its start finishes the move
    assert r.returncode == 0, r.stderr
    assert_finished_exactly_once(repo, {"f:1": "the work"})  # no checkout left locked (Repo.spares)
    assert len(repo.spares()) == 1


def test_a_spare_left_on_a_branch_by_a_reuse_cut_short_is_detached_at_the_next_runs_start(repo: Repo):
    """Killed between switching the spare to task 2's branch and moving it (soak seed 10063):
    its worker may not run again, and a branch checked out there could never be deleted."""
    repo.write_plan("f", ONE_THEN_TWO)
    crashed = repo.doit(env={"HIVE_FAULT": "in-switch"})
    assert crashed.returncode == -signal.SIGKILL
    spare = repo.root / "worktrees" / "w1-spare"
    on = git(spare, "symbolic-ref", "-q", "HEAD", check=False)
    assert on.startswith("refs/heads/hive/f-2"), on
    r = repo.doit("f:1")  # nothing to run: the run's start settles the spare
    assert r.returncode == 0, r.stderr
    assert git(spare, "symbolic-ref", "-q", "HEAD", check=False) == ""
    assert repo.doit().returncode == 0
    assert_finished_exactly_once(repo, {"f:1": "the work", "f:2": "next work"})  # no branch left
