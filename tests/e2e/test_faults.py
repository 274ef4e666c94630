"""kill -9 in the middle of git steps, and what it leaves behind: half-made worktrees,
stale lock files, a worktree deleted under a running agent. The next `doit` must
repair what it finds, never work in the user's checkout, and land every task once."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ONE_THEN_TWO, Repo, assert_finished_exactly_once


def crash(repo: Repo, point: str) -> None:
    r = repo.doit(env={"HIVE_FAULT": point})
    assert r.returncode == -signal.SIGKILL, r.stderr


def dirty_the_users_checkout(repo: Repo) -> dict[str, str]:
    """Uncommitted work of the user's own, which Hive must never touch."""
    (repo.root / "README.md").write_text("# project\nmy uncommitted edit\n")
    (repo.root / "mine.txt").write_text("my untracked notes\n")
    return {"README.md": "# project\nmy uncommitted edit\n", "mine.txt": "my untracked notes\n"}


def assert_users_checkout_untouched(repo: Repo, files: dict[str, str]) -> None:
    assert repo.git("symbolic-ref", "HEAD") == "refs/heads/main"
    for name, text in files.items():
        assert (repo.root / name).read_text() == text, f"the user's {name} changed"
    assert repo.git("status", "--porcelain", "--", "mine.txt") == "?? mine.txt", "the untracked file was committed"
    assert repo.file_on_main("README.md") == "# project\n", "the user's uncommitted edit was committed"
    assert repo.git("log", "--all", "--format=%H", "--", "mine.txt") == ""
    assert not [m for m in repo.main_log() if m.startswith("hive: unfinished work")]


def half_made_worktree(repo: Repo, path: Path, branch: str, start: str) -> None:
    """What `kill -9` during `git worktree add` leaves, made by real git killed at the
    same moment: its checkout (`git reset --hard`, run as a child) kills the
    `worktree add` instead. Left: locked "initializing", a `.git` file, no index, no files."""
    exec_path = repo.root.parent / "killing-exec-path"
    exec_path.mkdir(exist_ok=True)
    real = subprocess.run(["git", "--exec-path"], capture_output=True, text=True).stdout.strip()
    wrapper = exec_path / "git"
    wrapper.write_text(f'#!/bin/sh\nif [ "$1" = reset ]; then kill -9 $PPID; exit 1; fi\nexec "{real}/git" "$@"\n')
    wrapper.chmod(0o755)
    r = subprocess.run(
        ["git", "-C", str(repo.root), "worktree", "add", "-b", branch, str(path), start],
        capture_output=True,
        env={**os.environ, "GIT_EXEC_PATH": str(exec_path)},
    )
    assert r.returncode == -signal.SIGKILL, r.stderr
    admin = Path(repo.git("-C", str(path), "rev-parse", "--absolute-git-dir"))
    assert (admin / "locked").read_text().strip() == "initializing" and not (admin / "index").exists()
    assert "D  README.md" in repo.git("-C", str(path), "status", "--porcelain"), "it looks like every file deleted"


@pytest.mark.parametrize("leftover", ["unchecked-out", "empty-directory"])
def test_kill9_during_worktree_add_never_touches_the_users_checkout_or_deletes_the_project(repo, leftover):
    repo.write_plan("f", ONE_THEN_TWO)
    crash(repo, "after-claim")  # state names the worktree; `worktree add` is next
    st = repo.state("f", "1")
    wt = Path(st["worktree"])
    half_made_worktree(repo, wt, st["branch"], "main")
    if leftover == "empty-directory":  # killed before git wrote the worktree's .git file
        (wt / ".git").unlink()
    mine = dirty_the_users_checkout(repo)
    for args in (["cleanup"], ["cleanup", "--force"]):
        r = repo.hive(*args)
        assert r.returncode == 0 and "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert_users_checkout_untouched(repo, mine)
    assert repo.git("log", "main", "--diff-filter=D", "--name-only", "--format=") == "", "a merge deleted files"
    assert repo.file_on_main("w.txt") == "w\n" and repo.file_on_main("n.txt") == "n\n"
    assert_finished_exactly_once(repo, {"f:1": "the work", "f:2": "next work"})
    assert not wt.exists()


def test_a_half_made_worktree_of_a_done_task_is_cleared_and_its_branch_deleted(repo):
    repo.write_plan("f", ONE_THEN_TWO)
    assert repo.doit().returncode == 0
    extra = repo.root / "worktrees" / "w1-left-behind"
    half_made_worktree(repo, extra, "hive/left-behind", "main")
    st_file = repo.root / ".hive" / "state" / "f" / "1.json"
    import json

    data = json.loads(st_file.read_text())
    data["worktree"], data["branch"] = str(extra), "hive/left-behind"  # as if its own attempt left it
    st_file.write_text(json.dumps(data))
    for args in (["cleanup"], ["cleanup", "--force"]):
        r = repo.hive(*args)
        assert r.returncode == 0 and "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    r = repo.doit()
    assert r.returncode == 0 and "internal error" not in r.stderr, r.stderr
    assert repo.worktrees() == [] and not extra.exists()
    assert "hive/left-behind" not in repo.git("branch", "--format=%(refname:short)")


def test_salvage_refuses_to_commit_a_worktree_where_every_file_is_gone(repo):
    """Defence in depth: even if a broken checkout got past the health check, Hive
    never commits "every file deleted" as an agent's unfinished work."""
    from hive.adapters import worktrees
    from hive.errors import HiveError

    wt = repo.root / "worktrees" / "w1-emptied"
    repo.git("worktree", "add", "-q", "-b", "emptied", str(wt))
    (wt / "README.md").unlink()
    with pytest.raises(HiveError, match="every file of its branch is missing"):
        worktrees.salvage(wt, "hive: unfinished work")
    assert repo.git("-C", str(wt), "log", "--format=%s", "-1") == "initial commit"


def test_git_never_walks_up_from_a_worktree_into_the_users_checkout(repo):
    from hive.adapters import git
    from hive.errors import CommandError

    empty = repo.root / "worktrees" / "w1-empty"
    empty.mkdir(parents=True)
    assert git.worktree_dirs(empty) is None
    with pytest.raises(CommandError, match="not a git repository"):
        git.status(empty)


def test_stale_index_lock_left_by_a_killed_merge_is_removed_and_the_merge_redone(repo):
    repo.write_plan("f", ONE_THEN_TWO)
    crash(repo, "in-merge")
    wt = Path(repo.state("f", "1")["worktree"])
    admin = Path(repo.git("-C", str(wt), "rev-parse", "--absolute-git-dir"))
    lock = admin / "index.lock"
    lock.write_text("")  # what git leaves when it is killed holding the index
    old = time.time() - 30
    os.utime(lock, (old, old))
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert "index.lock" not in r.stderr and "internal error" not in r.stderr
    assert_finished_exactly_once(repo, {"f:1": "the work", "f:2": "next work"})


def test_a_lock_held_by_a_live_process_is_never_removed(repo):
    from hive.adapters import git

    lock = repo.root / ".git" / "index.lock"
    lock.write_text("")
    old = time.time() - 30
    os.utime(lock, (old, old))
    with open(lock) as held:  # a live git keeps its lock file open while it works
        assert not git.remove_stale_lock(repo.root, f"fatal: Unable to create '{lock}': File exists.")
        assert lock.exists()
        assert held.readable()
    assert git.remove_stale_lock(repo.root, f"fatal: Unable to create '{lock}': File exists.")
    assert not lock.exists()


def test_kill9_before_a_branch_delete_with_a_stale_ref_lock_finishes_the_cleanup(repo):
    repo.write_plan("f", ONE_THEN_TWO)
    crash(repo, "before-branch-delete")
    st = repo.state("f", "1")
    assert st["state"] == "done"
    ref_lock = repo.root / ".git" / "refs" / "heads" / f"{st['branch']}.lock"
    ref_lock.parent.mkdir(parents=True, exist_ok=True)
    ref_lock.write_text("")
    old = time.time() - 30
    os.utime(ref_lock, (old, old))
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert "internal error" not in r.stderr
    assert_finished_exactly_once(repo, {"f:1": "the work", "f:2": "next work"})


def test_worktree_deleted_while_its_agent_runs_is_merged_from_its_branch(repo):
    repo.write_plan(
        "d",
        """
    ### Task 1: Work
    fake: write w.txt w
    fake: commit the work
    fake: wait-for .hive/fake/go
    fake: signal done

    ### Task 2: Next
    **Depends on:** 1
    fake: signal done
    """,
    )
    run = repo.start_doit()
    from conftest import wait_for

    wait_for(lambda: "the work" in repo.agent_commits(), what="the agent's commit")
    wt = Path(repo.state("d", "1")["worktree"])
    subprocess.run(["rm", "-rf", str(wt)], check=True)
    repo.go()
    assert run.wait() == 0, run.output()
    assert "internal error" not in run.output() and "Traceback" not in run.output()
    assert_finished_exactly_once(repo, {"d:1": "the work"})
    assert repo.file_on_main("w.txt") == "w\n"


def test_a_git_failure_in_a_task_is_a_clear_task_failure_and_the_next_run_recovers(repo, tmp_path):
    failing = tmp_path / "failing-git"
    failing.mkdir()
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True).stdout.strip()
    (failing / "git").write_text(
        '#!/bin/sh\ncase " $* " in\n'
        # the merge's first step: in git's object store (git >= 2.38), else in the worktree
        '  *" merge-tree "*|*" checkout -q --detach "*) echo "fatal: simulated disk error" >&2; exit 128;;\nesac\n'
        f'exec "{real}" "$@"\n'
    )
    (failing / "git").chmod(0o755)
    repo.write_plan("e", ONE_THEN_TWO)
    r = repo.doit(env={"PATH": f"{failing}:{os.environ['PATH']}"})
    assert r.returncode == 1, r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    shown = r.stdout + r.stderr  # doit prints a task's failure message on stdout
    assert ("merge-tree" in shown or "checkout -q --detach" in shown) and "simulated disk error" in shown
    st = repo.state("e", "1")
    assert st["state"] == "failed" and "simulated disk error" in st["reason"]
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.starts() == ["e:1", "e:2"], "the agent had finished: only the merge was redone"
    assert_finished_exactly_once(repo, {"e:1": "the work", "e:2": "next work"})


def test_kill9_while_the_users_checkout_is_fast_forwarded_leaves_nothing_in_the_way(repo):
    repo.write_plan("f", ONE_THEN_TWO)
    crash(repo, "before-publish")
    mine = dirty_the_users_checkout(repo)
    # what a `git merge --ff-only` killed half-way leaves: the new file written, not recorded
    (repo.root / "w.txt").write_text("w\n")
    lock = repo.root / ".git" / "ORIG_HEAD.lock"
    lock.write_text("")
    old = time.time() - 30
    os.utime(lock, (old, old))
    r = repo.doit()
    log = repo.root / ".hive" / "hive.log"
    assert r.returncode == 0, r.stderr + (log.read_text() if log.exists() else "")
    assert_users_checkout_untouched(repo, mine)
    assert_finished_exactly_once(repo, {"f:1": "the work", "f:2": "next work"})
    assert repo.git("status", "--porcelain", "--", "w.txt") == ""


def test_a_users_own_file_in_the_way_of_the_fast_forward_is_never_replaced(repo):
    repo.write_plan("f", ONE_THEN_TWO)
    (repo.root / "w.txt").write_text("the user's own w.txt\n")
    r = repo.doit()
    assert r.returncode == 1
    st = repo.state("f", "1")
    assert st["state"] == "blocked" and "(untracked files in the way: w.txt)" in st["reason"]
    assert "\n" not in st["reason"] and "f:1: blocked — could not update your checkout" in r.stdout
    assert (repo.root / "w.txt").read_text() == "the user's own w.txt\n"


def test_a_checkout_cut_short_in_the_merge_step_is_never_committed(repo):
    """A checkout in the worktree during the merge step (to its merge commit, for its checks)
    killed after it wrote other files and index (main's, here) but before it moved HEAD: HEAD
    is still the task branch, and `git status` shows the agent's files as deleted. That must
    not become a commit that deletes its work. (Task 1's Verify makes Hive check the merge out
    in the worktree, to run it there.)"""
    repo.write_plan("f", ONE_THEN_TWO.replace("### Task 1: Work\n", "### Task 1: Work\n**Verify:** test -f w.txt\n"))
    crash(repo, "checking")
    st = repo.state("f", "1")
    wt = Path(st["worktree"])
    repo.git("-C", str(wt), "symbolic-ref", "HEAD", f"refs/heads/{st['branch']}")
    repo.git("-C", str(wt), "read-tree", "--reset", "-u", "main")  # main's files and index, HEAD not moved
    assert "D  w.txt" in repo.git("-C", str(wt), "status", "--porcelain")
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.file_on_main("w.txt") == "w\n"
    assert repo.git("log", "main", "--diff-filter=D", "--name-only", "--format=") == ""
    assert_finished_exactly_once(repo, {"f:1": "the work", "f:2": "next work"})


def test_a_lock_held_open_is_seen_through_a_symlinked_path(repo, tmp_path):
    from hive.adapters import git

    link = tmp_path / "link-to-repo"
    link.symlink_to(repo.root)
    lock = repo.root / ".git" / "index.lock"
    lock.write_text("")
    old = time.time() - 30
    os.utime(lock, (old, old))
    with open(lock):
        message = f"fatal: Unable to create '{link}/.git/index.lock': File exists."
        assert not git.remove_stale_lock(link, message), "a held lock named through a symlink is still held"
        assert lock.exists()


def test_an_agent_whose_worktree_loses_its_git_file_never_reaches_the_users_checkout(repo):
    """A worktree deleted under its agent is removed file by file: for a moment the agent's
    directory has no `.git`, and its `git add -A` walked up to the user's checkout around
    `worktrees/`, staging every change of theirs (seen in the soak, seed 7052). In the sandbox
    the `.git` of its checkout is a file bound in place, which it cannot delete: this is the
    unsandboxed case."""
    repo.configure(attempts=1, sandbox='mode = "off"')
    repo.write_plan(
        "g",
        """
### Task 1: Loses its .git
fake: write w.txt w
fake: delete .git
fake: git add -A
fake: git commit -q -m stray
fake: signal blocked the worktree broke
""",
    )
    mine = dirty_the_users_checkout(repo)
    before = repo.git("status", "--porcelain")
    r = repo.doit()
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert repo.git("status", "--porcelain") == before, "the agent's git reached the user's checkout"
    assert_users_checkout_untouched(repo, mine)
    assert "stray" not in repo.git("log", "--all", "--format=%s")
    log = repo.hive("logs", "g:1").stdout
    assert "not a git repository" in log, log


def test_an_unreadable_state_file_fails_its_task_with_the_fix_not_a_traceback(repo):
    repo.write_plan("e", ONE_THEN_TWO)
    state = repo.root / ".hive" / "state" / "e" / "1.json"
    state.parent.mkdir(parents=True)
    state.write_text("{half a write")
    r = repo.doit()
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert "unreadable state" in r.stdout + r.stderr and "move the file away to reset this task" in r.stdout + r.stderr
    state.unlink()
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert_finished_exactly_once(repo, {"e:1": "the work", "e:2": "next work"})
