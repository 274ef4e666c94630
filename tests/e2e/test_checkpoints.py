"""Humans in the loop: checkpoint tasks, hard-stop gates and the execution report."""

from __future__ import annotations

VERIFY_PLAN = """
### Task 1: Build the page
fake: write page.html <h1>hi</h1>
fake: commit build the page
fake: signal done page built

### Task 2: Check the page
**Type:** checkpoint:human-verify
**Depends on:** 1
Open page.html and check the heading.

### Task 3: Style the page
**Depends on:** 2
fake: dump-context
fake: write style.css h1{}
fake: commit style
fake: signal done
"""


def test_human_verify_checkpoint_stops_reports_and_resumes_after_approval(repo):
    repo.write_plan("p", VERIFY_PLAN)
    r = repo.doit()
    assert r.returncode == 1
    for expected in (
        "CHECKPOINT REACHED: p:2",
        "**Type:** human-verify",
        "**Progress:** 1/3",
        repo.state("p", "1")["merge_commit"][:10],
        "page.html",
        "Open page.html and check the heading.",
        "hive approve p:2",
        'hive approve p:2 --reject "what is wrong"',
        "### Current task\n\n**Task p:2:** Check the page\n**Status:** awaiting verification\n"
        "**Blocked by:** your check of what p:1 built",
    ):
        assert expected in r.stdout, expected
    saved = (repo.root / ".hive" / "checkpoints" / "p" / "2.md").read_text()
    assert "CHECKPOINT REACHED: p:2" in saved
    assert repo.state("p", "2")["state"] == "awaiting_human"
    assert repo.starts() == ["p:1"]
    again = repo.doit()
    assert again.returncode == 1 and "CHECKPOINT REACHED: p:2" in again.stdout, "an unanswered checkpoint is re-shown"
    a = repo.hive("approve", "p:2")
    assert a.returncode == 0, a.stderr
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert repo.starts() == ["p:1", "p:3"]
    ctx = (repo.root / ".hive" / "fake" / "context-p_3-a1.md").read_text()
    assert "Decisions so far" in ctx and "p:2 (Check the page): approved" in ctx


def test_decision_checkpoint_needs_one_of_its_options_and_later_agents_see_the_choice(repo):
    repo.write_plan(
        "d",
        """
    ### Task 1: Pick a database
    **Type:** checkpoint:decision
    **Options:** Postgres, SQLite
    Which database does the shop keep its orders in?

    - **Postgres:** scales to many writers; needs a server to run
    - **SQLite:** one file, nothing to run; one writer at a time

    ### Task 2: Use it
    **Depends on:** 1
    fake: dump-context
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 1
    assert "**Options:** Postgres | SQLite" in r.stdout and "hive approve d:1 --choice SQLite" in r.stdout
    assert "**Blocked by:** your choice between Postgres, SQLite" in r.stdout
    assert "- **SQLite:** one file, nothing to run; one writer at a time" in r.stdout
    bad = repo.hive("approve", "d:1", "--choice", "Mongo")
    assert bad.returncode == 3 and "'Mongo' is not one of its options" in bad.stderr
    assert "--choice Postgres" in bad.stderr
    assert repo.hive("approve", "d:1").returncode == 3
    ok = repo.hive("approve", "d:1", "--choice", "sqlite")
    assert ok.returncode == 0 and "choice: SQLite" in ok.stdout
    assert repo.doit().returncode == 0
    ctx = (repo.root / ".hive" / "fake" / "context-d_2-a1.md").read_text()
    assert "d:1 (Pick a database): choice: SQLite" in ctx


def test_human_action_checkpoint_is_answered_with_done(repo):
    repo.write_plan(
        "h",
        """
    ### Task 1: Click the link in the verification email
    **Type:** checkpoint:human-action
    Open the email from the provider and click "verify".

    ### Task 2: Continue
    **Depends on:** 1
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 1 and "**What you need to do:**" in r.stdout and "hive approve h:1 --done" in r.stdout
    refused = repo.hive("approve", "h:1")
    assert refused.returncode == 3 and "--done" in refused.stderr
    assert repo.hive("approve", "h:1", "--done").returncode == 0
    assert repo.doit().returncode == 0
    assert repo.starts() == ["h:2"]


def test_a_manual_step_with_a_verify_is_done_only_when_its_check_passes(repo):
    """Seed 001's "I'll verify after": `--done` runs the checkpoint's Verify in the repository."""
    repo.write_plan(
        "h",
        """
    ### Task 1: Put the API key in place
    **Type:** checkpoint:human-action
    **Verify:** test -f .secrets/api-key || { echo "no .secrets/api-key yet"; exit 2; }
    Save the key from the provider's dashboard as .secrets/api-key.

    ### Task 2: Continue
    **Depends on:** 1
    fake: signal done
    """,
    )
    assert repo.doit().returncode == 1
    r = repo.hive("approve", "h:1", "--done")
    assert r.returncode == 3 and "its Verify failed (exit 2)" in r.stderr and "no .secrets/api-key yet" in r.stderr
    assert "h:1 stays awaiting you" in r.stderr
    st = repo.state("h", "1")
    assert st["state"] == "awaiting_human" and "no .secrets/api-key yet" in st["output_tail"]
    (repo.root / ".secrets").mkdir()
    (repo.root / ".secrets" / "api-key").write_text("k\n")
    assert repo.hive("approve", "h:1", "--done").returncode == 0
    assert repo.doit().returncode == 0
    assert repo.starts() == ["h:2"]


def test_reject_reopens_the_task_before_the_checkpoint_with_the_feedback(repo):
    repo.write_plan(
        "p",
        VERIFY_PLAN.replace(
            "fake: write page.html <h1>hi</h1>",
            "fake: dump-context\nfake@1: write page.html <h1>hi</h1>\nfake@2: write page.html <h1>hello</h1>",
        ),
    )
    assert repo.doit().returncode == 1
    r = repo.hive("approve", "p:2", "--reject", "the heading must say hello")
    assert r.returncode == 0, r.stderr
    assert repo.state("p", "1")["state"] == "planned"
    r = repo.doit()
    assert r.returncode == 1, "after the re-run of task 1 the checkpoint stops the run again"
    assert repo.starts() == ["p:1", "p:1"]
    ctx = (repo.root / ".hive" / "fake" / "context-p_1-a2.md").read_text()
    assert "the heading must say hello" in ctx and "**re-opened this task** (`hive approve --reject`)" in ctx
    assert repo.state("p", "2")["state"] == "awaiting_human"
    assert repo.hive("approve", "p:2").returncode == 0
    assert repo.doit().returncode == 0
    assert repo.file_on_main("page.html") == "<h1>hello</h1>\n"


def test_reject_needs_task_when_the_checkpoint_has_several_dependencies(repo):
    repo.write_plan(
        "m",
        """
    ### Task a: A
    fake: signal done

    ### Task b: B
    fake: signal done

    ### Task c: Check both
    **Type:** checkpoint:human-verify
    **Depends on:** a, b
    """,
    )
    repo.doit()
    r = repo.hive("approve", "m:c", "--reject", "wrong")
    assert r.returncode == 3 and "--task" in r.stderr
    assert repo.hive("approve", "m:c", "--reject", "wrong", "--task", "b").returncode == 0
    assert repo.state("m", "b")["state"] == "planned" and repo.state("m", "a")["state"] == "done"


def test_other_branches_go_on_with_continue_while_a_checkpoint_waits(repo):
    repo.write_plan("p", VERIFY_PLAN + "\n### Task 4: Unrelated\nfake: signal done\n")
    r = repo.doit("-c")
    assert r.returncode != 0
    assert sorted(repo.starts()) == ["p:1", "p:4"]
    assert repo.state("p", "3")["state"] == "planned"


def test_checkpoint_marker_makes_a_gate_that_stops_until_approved(repo):
    repo.write_plan(
        "g",
        """
    ### Task 1: Schema
    <!-- checkpoint -->
    fake: signal done

    ### Task 2: Uses the schema
    **Depends on:** 1
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 1
    assert "CHECKPOINT REACHED: g:_gate-1" in r.stdout and "hive approve g:_gate-1" in r.stdout
    assert repo.starts() == ["g:1"]
    listing = repo.doit("list").stdout
    assert "g:_gate-1" in listing
    assert repo.hive("approve", "g:_gate-1").returncode == 0
    assert repo.doit().returncode == 0
    assert repo.starts() == ["g:1", "g:2"]


def test_first_batch_gate_stops_after_the_tasks_without_dependencies(repo):
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text() + "\n[gates]\nfirst_batch = true\n")
    repo.write_plan(
        "f",
        """
    ### Task a: Root A
    fake: signal done

    ### Task b: Root B
    fake: signal done

    ### Task c: Needs A
    **Depends on:** a
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 1 and "f:_gate-first-batch" in r.stdout
    assert sorted(repo.starts()) == ["f:a", "f:b"]
    assert repo.hive("approve", "f:_gate-first-batch").returncode == 0
    assert repo.doit().returncode == 0
    assert repo.starts()[-1] == "f:c"


def test_hub_gate_fires_after_a_task_with_many_dependents_only(repo):
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text() + "\n[gates]\nhub_threshold = 2\n")
    repo.write_plan(
        "h",
        """
    ### Task core: Core
    fake: signal done

    ### Task x: Uses core
    **Depends on:** core
    fake: signal done

    ### Task y: Also uses core
    **Depends on:** core
    fake: signal done

    ### Task z: Uses x only
    **Depends on:** x
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 1
    assert "h:_gate-core" in r.stdout and "2 tasks depend on it" in r.stdout
    assert "_gate-x" not in repo.doit("list").stdout
    assert repo.hive("approve", "h:_gate-core").returncode == 0
    assert repo.doit().returncode == 0


def test_a_gate_after_tests_waits_for_the_matching_impl(repo):
    repo.write_plan(
        "t",
        """
    ### Task 1-tests: Write the tests
    <!-- checkpoint -->
    fake: signal done

    ### Task 1-impl: Make them pass
    **Depends on:** 1-tests
    fake: signal done

    ### Task 2: Build on it
    **Depends on:** 1-impl
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 1
    assert repo.starts() == ["t:1-tests", "t:1-impl"], "the pair is not split by the gate"
    assert "t:_gate-1-tests" in r.stdout
    assert repo.hive("approve", "t:_gate-1-tests").returncode == 0
    assert repo.doit().returncode == 0


def test_execution_report_counts_match_the_run(repo):
    repo.configure(attempts=1)
    repo.write_plan(
        "r",
        """
    ### Task 1: Works
    fake: write a.txt a
    fake: commit a
    fake: signal done all good

    ### Task 2: Breaks
    fake: print something went wrong
    fake: sleep 3
    fake: crash 2

    ### Task 3: Check
    **Type:** checkpoint:human-verify
    **Depends on:** 1
    """,
    )
    repo.configure(grace="2s", attempts=1)
    r = repo.doit("-c")
    assert r.returncode != 0
    report = (repo.root / ".hive" / "report.md").read_text()
    assert "**Status:** awaiting_human" in report
    assert "**Tasks:** 3 — 1 done, 1 failed, 1 awaiting_human" in report
    row1 = next(line for line in report.splitlines() if line.startswith("| r:1 "))
    assert repo.state("r", "1")["merge_commit"][:10] in row1 and "all good" in row1 and "1: a.txt" in row1
    row2 = next(line for line in report.splitlines() if line.startswith("| r:2 "))
    assert "crashed" in row2 and "something went wrong" in row2
    assert repo.hive("approve", "r:3").returncode == 0
    assert repo.hive("retry", "r:2").returncode == 0


def test_checkpoint_report_and_status_count_progress_the_same_way(repo):
    """Both count the tasks written in the plan; a gate is a stop, not a task (the report
    said 1/3 where status said 2/4 when status counted the gate)."""
    repo.write_plan(
        "c",
        """
    ### Task 1: Build the page
    <!-- checkpoint -->
    fake: signal done

    ### Task 2: Check the page
    **Type:** checkpoint:human-verify
    **Depends on:** 1

    ### Task 3: Style the page
    **Depends on:** 2
    fake: signal done
    """,
    )
    repo.write_plan("other", "### Task 1: Unrelated\nfake: signal done\n", status="draft")
    assert repo.doit().returncode == 1
    assert repo.hive("approve", "c:_gate-1").returncode == 0
    r = repo.doit()
    assert r.returncode == 1 and "CHECKPOINT REACHED: c:2" in r.stdout
    assert "**Progress:** 1/3 tasks complete" in r.stdout
    status = repo.hive("status").stdout
    assert "] 1/3 done  1 awaiting_human  1 skipped" in status.splitlines()[0], status
    assert repo.status_json()["progress"] == {"done": 1, "total": 3}
