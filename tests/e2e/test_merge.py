"""Merging and worktree set-up: review before merge, setup commands, copied secrets,
and the guard against merges that delete files."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import git

from hive.engine.merge import MergeRequest
from hive.engine.merge import unexpected_deletions as _unexpected_deletions


def test_auto_merge_off_waits_for_review_then_approve_merges(repo):
    repo.configure(extra="")
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text().replace("[merge]\n", "[merge]\nauto_merge = false\n"))
    repo.write_plan(
        "r",
        """
    ### Task 1: Reviewed work
    fake: write r.txt reviewed
    fake: commit reviewed work
    fake: signal done
    """,
    )
    head = repo.git("rev-parse", "main")
    r = repo.doit()
    assert r.returncode == 1
    st = repo.state("r", "1")
    assert st["state"] == "awaiting_human" and st["branch"] in st["reason"]
    assert repo.git("rev-parse", "main") == head
    assert "reviewed work" in repo.git("log", "--format=%s", st["branch"])
    a = repo.hive("approve", "r:1")
    assert a.returncode == 0, a.stderr
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.file_on_main("r.txt") == "reviewed\n"
    assert repo.starts() == ["r:1"], "approving merges the reviewed branch; the agent does not run again"


def test_setup_command_and_copied_files_are_available_but_never_committed(repo):
    (repo.root / ".env").write_text("SECRET=1\n")
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text() + '\n[worktrees]\ncopy = [".env"]\nsetup = "echo built > build.cache"\n')
    repo.write_plan(
        "s",
        """
    ### Task 1: Use the environment
    **Verify:** grep -q SECRET=1 .env && test -f build.cache
    fake: write out.txt done
    fake: commit everything including untracked
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.file_on_main("out.txt") == "done\n"
    assert repo.file_on_main(".env") is None
    assert repo.file_on_main("build.cache") is None


def test_agent_environment_has_hive_variables_and_no_nested_session_markers(repo):
    repo.write_plan(
        "p",
        """
    ### Task 1: Serve
    fake: print port is $HIVE_PORT
    fake: env HIVE_PORT
    fake: env HIVE_TASK
    fake: env CLAUDECODE
    fake: signal done
    """,
    )
    r = repo.doit(env={"CLAUDECODE": "1"})
    assert r.returncode == 0, r.stderr
    log = (repo.root / ".hive" / "logs" / "p" / "1.log").read_text()
    assert "port is $HIVE_PORT" in log, "plan text is printed literally, never expanded by a shell"
    assert "HIVE_PORT=41010" in log and "HIVE_TASK=p:1" in log
    assert "CLAUDECODE=<unset>" in log


def test_merge_that_deletes_a_file_the_task_did_not_delete_is_detected(isolated):
    root = isolated / "g"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for name in ("keep.txt", "precious.txt"):
        (root / name).write_text(name)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "task")
    (root / "new.txt").write_text("new")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "task work")
    git(root, "checkout", "-q", "main")
    main = git(root, "rev-parse", "main")
    # a "merge" whose tree lost precious.txt, as a broken merge driver could produce
    git(root, "checkout", "-q", "--detach", "task")
    git(root, "rm", "-q", "precious.txt")
    tree = git(root, "write-tree")
    bad = git(root, "commit-tree", tree, "-p", main, "-p", "task", "-m", "bad merge")
    req = MergeRequest(
        root=root,
        lock=isolated / "lock",
        main_branch="main",
        worktree=root,
        branch="task",
        message="",
        checks=(),
        check_timeout=10,
        env={},
    )
    assert _unexpected_deletions(req, main, deleted_by(root, main, bad)) == ["precious.txt"]
    good = git(root, "commit-tree", git(root, "rev-parse", "task^{tree}"), "-p", main, "-p", "task", "-m", "ok")
    assert _unexpected_deletions(req, main, deleted_by(root, main, good)) == []


def deleted_by(root, a: str, b: str) -> set[str]:
    return set(git(root, "diff", "--name-only", "--diff-filter=D", a, b).split())


def test_task_that_deletes_a_file_merges_normally(repo):
    (repo.root / "old.txt").write_text("old\n")
    repo.git("add", "old.txt")
    repo.git("commit", "-q", "-m", "old file")
    repo.write_plan(
        "d",
        """
    ### Task 1: Remove the old file
    fake: delete old.txt
    fake: commit remove old
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.file_on_main("old.txt") is None
    assert not (repo.root / "old.txt").exists()


def test_attach_to_a_task_without_a_running_agent_explains(repo):
    repo.write_plan("a", "### Task 1: x\nfake: signal done\n")
    r = repo.hive("attach", "a:1")
    assert r.returncode == 3 and "no running agent" in r.stderr


def test_main_checked_out_elsewhere_still_gets_the_merge(repo):
    """When the user's checkout is on another branch, main moves by compare-and-swap
    and their checkout is untouched."""
    repo.git("checkout", "-q", "-b", "mywork")
    (repo.root / "mine.txt").write_text("mine\n")
    repo.write_plan(
        "o",
        """
    ### Task 1: Work
    fake: write w.txt w
    fake: commit work
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.file_on_main("w.txt") == "w\n"
    assert not (repo.root / "w.txt").exists()
    assert repo.git("rev-parse", "--abbrev-ref", "HEAD") == "mywork"
    assert (repo.root / "mine.txt").read_text() == "mine\n"
    assert subprocess.run(["git", "-C", str(repo.root), "diff", "--quiet"]).returncode == 0
    assert Path(repo.root / "README.md").exists()


def test_require_tests_runs_test_command_on_the_merged_result(repo):
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(
        cfg.read_text().replace(
            "[merge]\n", '[merge]\nrequire_tests = true\ntest_command = "test -f base.txt && test -f extra.txt"\n'
        )
    )
    (repo.root / "base.txt").write_text("base\n")
    repo.git("add", "base.txt")
    repo.git("commit", "-q", "-m", "base")
    repo.write_plan(
        "t",
        """
    ### Task 1: Without the extra file
    fake@1: write other.txt x
    fake@1: commit other
    fake@1: signal done
    fake@2: write extra.txt x
    fake@2: commit extra
    fake@2: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    st = repo.state("t", "1")
    assert [h["outcome"] for h in st["history"]] == ["check_failed", "done"]
    assert "test_command failed" in st["history"][0]["reason"]


def test_missing_main_branch_is_a_clear_error(repo):
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text().replace('main_branch = "main"', 'main_branch = "trunk"'))
    repo.write_plan("x", "### Task 1: x\nfake: signal done\n")
    r = repo.doit()
    assert r.returncode == 1
    assert "'trunk' does not exist" in r.stdout + r.stderr
    assert repo.starts() == []


def test_a_merge_that_would_empty_the_project_is_refused(repo):
    """Even a branch that committed "every file deleted" (as an interrupted checkout
    looks) never reaches main: the deletion guard stops it."""
    repo.write_plan(
        "x",
        """
    ### Task 1: Empties everything
    fake: delete README.md
    fake: commit remove everything
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 1
    st = repo.state("x", "1")
    assert st["state"] == "blocked" and "would delete files the task did not delete: README.md" in st["reason"]
    assert repo.file_on_main("README.md") == "# project\n"


def test_an_approval_is_for_the_branch_it_approved_not_for_the_attempt_after_it(repo, tmp_path: Path):
    """Approved work whose Verify fails goes back to the agent; what that next attempt does
    waits for a review of its own (the approval once stuck to the run's task for good)."""
    repo.configure(writable=(str(tmp_path),))  # its Verify leaves a mark there, sandboxed or not
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text().replace("[merge]\n", "[merge]\nauto_merge = false\n"))
    failed_once = tmp_path / "failed-once"
    repo.write_plan(
        "r",
        f"""
    ### Task 1: Reviewed work
    **Verify:** test -f {failed_once} || {{ touch {failed_once}; exit 1; }}
    fake: append r.txt one more attempt
    fake: commit reviewed work
    fake: signal done
    """,
    )
    head = repo.git("rev-parse", "main")
    assert repo.doit().returncode == 1
    assert repo.hive("approve", "r:1").returncode == 0
    r = repo.doit()
    assert r.returncode == 1, r.stderr
    assert failed_once.exists(), "the approved branch was merged and verified"
    st = repo.state("r", "1")
    assert (st["state"], st["resume"], st["attempt"]) == ("awaiting_human", "review", 2), st["reason"]
    assert repo.git("rev-parse", "main") == head, "attempt 2's work was merged without a review"
    assert repo.starts() == ["r:1", "r:1"]


# A script starts each attempt afresh from main: its first attempt's commits are left on that
# attempt's branch, superseded (the fake agent's attempts build on each other instead)
SUPERSEDED = """
### Task 1: Work twice
**Type:** script
```sh
if [ ! -e "$HIVE_ROOT/.hive/fake/tried" ]; then
  touch "$HIVE_ROOT/.hive/fake/tried"
  echo "first try" > first.txt && git add first.txt && git commit -qm "first try"
  exit 1
fi
echo "second try" > second.txt && git add second.txt && git commit -qm "second try"
```
"""


def test_a_superseded_attempts_branch_is_told_once_and_hive_cleanup_deletes_it(repo):
    """Issue 43: every `doit` warned of the branch of a done task's failed attempt, and
    `hive cleanup --force` kept it."""
    repo.write_plan("s", SUPERSEDED)
    (repo.root / ".hive" / "fake").mkdir(exist_ok=True)
    first = repo.doit()
    assert first.returncode == 0, first.stdout + first.stderr
    assert repo.state("s", "1")["state"] == "done"
    [branch] = [b for b in repo.git("branch", "--format=%(refname:short)").split() if b.startswith("hive/")]
    assert branch.endswith("-a1") and "first try" in repo.git("log", "--format=%s", branch)
    told = [line for line in first.stdout.splitlines() if "superseded attempts" in line]
    assert told == [
        f"hive: s:1: kept the branches of its superseded attempts, whose commits are not in main: {branch} — "
        "`hive cleanup` deletes them"
    ], first.stdout
    again = repo.doit()
    assert again.returncode == 0 and branch not in again.stdout + again.stderr, again.stdout
    tip = repo.git("rev-parse", branch)
    cleaned = repo.hive("cleanup")
    assert cleaned.returncode == 0, cleaned.stderr
    assert (
        f"hive: s:1: deleted branch {branch} of a superseded attempt (`git branch {branch} {tip[:12]}` brings it back)"
        in cleaned.stdout.splitlines()
    ), cleaned.stdout
    assert repo.git("branch", "--list", branch) == ""
    assert repo.file_on_main("second.txt") == "second try\n" and repo.file_on_main("first.txt") is None
