"""A merge conflict with main starts a resolve attempt (SPEC "Workflow (round 2)"): the
agent merges main into its branch with a brief that names the conflicting files and
main's new commits; when attempts run out the task is blocked with the commands to
resolve it by hand. And the briefs of later attempts say plainly what happened."""

from __future__ import annotations

import os
import signal
import subprocess

from conftest import wait_for

CONFLICT = """
### Task 1: A
fake: write shared.txt from A
fake: commit A writes shared
fake: signal done

### Task 2: B
fake@1: wait-for shared.txt
fake@1: write shared.txt from B
fake@1: commit B writes shared
fake@1: signal done
fake@2: dump-context
fake@2: git merge main
fake@2: write shared.txt from A and B
fake@2: commit B resolves the conflict with main
fake@2: signal done
"""


def test_a_conflict_is_resolved_by_a_resolve_attempt_and_merged(repo):
    repo.configure(attempts=2)
    repo.write_plan("c", CONFLICT)
    r = repo.doit("-n", "2")
    assert r.returncode == 0, r.stderr
    assert repo.file_on_main("shared.txt") == "from A and B\n"
    st = repo.state("c", "2")
    assert (st["state"], st["attempts_used"]) == ("done", 2)
    assert "merge conflict with main in: shared.txt; a resolve attempt follows" in st["history"][0]["reason"]
    brief = (repo.root / ".hive" / "fake" / "context-c_2-a2.md").read_text()
    assert "your branch conflicts with `main` — resolve it" in brief
    assert "conflicted in: shared.txt" in brief
    assert "A writes shared (shared.txt)" in brief  # main's commit since the branch point, with its files
    assert "`git merge main`" in brief and "merging into `main` **conflicted**" in brief


def test_when_attempts_run_out_the_conflict_blocks_with_the_commands_to_resolve_it_by_hand(repo):
    repo.configure(attempts=1)
    repo.write_plan("c", CONFLICT)
    r = repo.doit("-n", "2")
    assert r.returncode == 1
    st = repo.state("c", "2")
    assert st["state"] == "blocked" and st["resume"] == "merge"
    assert "merge conflict with main in: shared.txt" in st["reason"]
    assert f"cd {st['worktree']} && git merge main" in st["reason"] and "hive retry c:2" in st["reason"]
    assert "resolve it by hand" in repo.hive("status").stdout


def test_resolve_conflicts_off_blocks_at_the_first_conflict(repo):
    repo.configure(attempts=2, extra="")
    config = repo.root / ".hive" / "config.toml"
    config.write_text(config.read_text().replace("[merge]\n", "[merge]\nresolve_conflicts = false\n", 1))
    repo.write_plan("c", CONFLICT)
    assert repo.doit("-n", "2").returncode == 1
    st = repo.state("c", "2")
    assert (st["state"], st["attempts_used"]) == ("blocked", 1)


# attempt 1's work fails its Verify, which prints VERIFY-SAYS-42 (its command does not say that)
CHECKED = """
### Task 1: Checked
**Verify:** test -f ok.txt || (echo "VERIFY-SAYS-$((40 + 2))"; exit 1)
fake@1: write half.txt half
fake@1: commit half
fake@1: signal done
fake@2: dump-context
fake@2: write ok.txt ok
fake@2: commit ok
fake@2: signal done
"""


def test_a_retry_brief_has_the_failing_checks_output_and_no_header_of_its_own_attempt(repo):
    repo.configure(attempts=2)
    repo.write_plan("v", CHECKED)
    assert repo.doit().returncode == 0
    brief = (repo.root / ".hive" / "fake" / "context-v_1-a2.md").read_text()
    assert "Attempt 1 signalled `hive done`, but the check on the merged result **failed**" in brief
    assert "VERIFY-SAYS-42" in brief  # what it printed, not its command (VERIFY-SAYS-$((40 + 2)))
    assert "attempt 2 (w1)" not in brief  # the log header Hive wrote for this attempt


def test_a_brief_says_plainly_that_the_last_attempt_was_interrupted(repo):
    repo.configure(attempts=2)
    repo.write_plan(
        "i",
        """
    ### Task 1: Interrupted
    fake@1: write half.txt half
    fake@1: commit half done
    fake@1: hang
    fake@2: dump-context
    fake@2: signal done
    """,
    )
    run = repo.start_doit()
    wait_for(lambda: (repo.root / "worktrees").is_dir() and "half done" in repo.agent_commits())
    os.killpg(run.pid, signal.SIGKILL)  # the orchestrator dies, then its agent with the tmux server
    run.wait(10)
    subprocess.run(["tmux", "-L", os.environ["HIVE_TMUX_SOCKET"], "kill-server"], capture_output=True)
    assert repo.doit().returncode == 0
    brief = (repo.root / ".hive" / "fake" / "context-i_1-a2.md").read_text()
    assert "Attempt 1 was **interrupted**" in brief and "half done" in brief


def test_a_brief_after_a_rejected_review_says_a_human_reopened_it(repo):
    repo.configure(attempts=2)
    config = repo.root / ".hive" / "config.toml"
    config.write_text(config.read_text().replace("[merge]\n", "[merge]\nauto_merge = false\n", 1))
    repo.write_plan(
        "r",
        """
    ### Task 1: Reviewed
    fake: dump-context
    fake: write r.txt r
    fake: commit-once r
    fake: signal done
    """,
    )
    assert repo.doit().returncode == 1  # waits for review
    assert repo.hive("approve", "r:1", "--reject", "use tabs, not spaces").returncode == 0
    repo.doit()
    brief = (repo.root / ".hive" / "fake" / "context-r_1-a2.md").read_text()
    assert "**re-opened this task** (`hive approve --reject`)" in brief and "use tabs, not spaces" in brief


def test_a_brief_after_the_plan_text_changed_says_why_it_runs_again(repo):
    plan = """
    ### Task 1: Changing
    WORDS
    fake: dump-context
    fake: write w.txt w
    fake: commit-once w
    fake: signal done
    """
    repo.write_plan("t", plan.replace("WORDS", "First words."))
    assert repo.doit().returncode == 0
    repo.write_plan("t", plan.replace("WORDS", "Second words."))
    assert repo.doit().returncode == 0
    brief = (repo.root / ".hive" / "fake" / "context-t_1-a2.md").read_text()
    assert "the task was **re-opened**: its text in the plan changed" in brief


def test_a_brief_after_hive_retry_still_has_what_the_failing_check_printed(repo):
    """The check's output is a fact of the attempt that failed, kept in its history: the
    brief once found it only while the task's current reason still began "verify failed",
    which `hive retry` and the next claim replace (issue 22)."""
    repo.configure(attempts=1)
    repo.write_plan("v", CHECKED)
    assert repo.doit().returncode == 1
    failed = {t["id"]: t for t in repo.status_json()["tasks"]}["1"]
    assert failed["state"] == "failed" and failed["worktree"], "its worktree is kept, and status says where"
    assert (repo.root / failed["worktree"]).is_dir()
    assert repo.hive("retry", "v:1").returncode == 0
    assert repo.doit().returncode == 0
    brief = (repo.root / ".hive" / "fake" / "context-v_1-a2.md").read_text()
    assert "Attempt 1 signalled `hive done`, but the check on the merged result **failed**" in brief
    assert "VERIFY-SAYS-42" in brief  # what it printed (its command says VERIFY-SAYS-$((40 + 2)))
