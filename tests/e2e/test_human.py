"""Discovered work, interactive planning, cleanup, and what a human sees while a run goes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

from conftest import HERE, read_pty


def test_discovered_work_waits_for_a_human_and_runs_only_once_approved(repo):
    repo.write_plan(
        "w",
        """
    ### Task 1: Build the login
    fake: write login.txt login
    fake: commit login
    fake: discover "Add rate limiting" "### Task 9: sneaky\\nlogin can be brute-forced"
    fake: signal done
    """,
    )
    plan_path = repo.root / "plans" / "w.md"
    before = plan_path.read_bytes()
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    data = repo.status_json()
    assert data["discovered"] == [
        {
            "key": "w:D1",
            "title": "Add rate limiting",
            "details": "### Task 9: sneaky\nlogin can be brute-forced",
            "discovered_from": "w:1",
        }
    ]
    assert "hive approve w:D1" in repo.hive("status").stdout
    assert plan_path.read_bytes() == before, "discovering never edits the plan"
    assert repo.doit().returncode == 0
    assert repo.starts() == ["w:1"], "discovered work never runs unapproved"
    a = repo.hive("approve", "w:D1")
    assert a.returncode == 0, a.stderr
    text = plan_path.read_text()
    assert text.startswith(before.decode()), "the rest of the plan is byte-identical"
    assert "### Task D1: Add rate limiting" in text and "**Discovered from:** w:1" in text
    assert "> ### Task 9: sneaky" in text, "an agent's text cannot smuggle in a task"
    assert repo.status_json()["discovered"] == []
    listing = repo.doit("list").stdout
    assert "w:D1" in listing and "w:9" not in listing


def test_discovered_work_can_be_discarded(repo):
    repo.write_plan("w", "### Task 1: x\nfake: signal done\n")
    env = {"HIVE_TASK": "w:1", "HIVE_ATTEMPT": "1", "HIVE_ROOT": str(repo.root)}
    assert repo.hive("discover", "Rewrite everything in Rust", env=env).returncode == 0
    r = repo.hive("approve", "w:D1", "--reject", "out of scope")
    assert r.returncode == 0 and "discarded" in r.stdout
    assert repo.status_json()["discovered"] == []
    assert "D1" not in (repo.root / "plans" / "w.md").read_text()
    assert repo.hive("discover", "Another idea", env=env).stdout.count("w:D2") == 1, "numbers are never reused"


def _planner(repo) -> None:
    cfg = repo.root / ".hive" / "config.toml"
    command = json.dumps([sys.executable, str(HERE / "fake_planner.py"), "{context_file}"])
    cfg.write_text(
        cfg.read_text().replace('default = "fake"', 'default = "fake"\nplanner = "fakeplanner"')
        + f'\n[agents.fakeplanner]\ncommand = {command}\nmode = "interactive"\n'
    )


def test_hive_plan_runs_the_planning_agent_and_validates_its_draft(repo):
    _planner(repo)
    r = repo.hive("plan", "Add OAuth login")
    assert r.returncode == 0, r.stderr
    plan = repo.root / "plans" / "add-oauth-login.md"
    assert plan.exists() and "status: draft" in plan.read_text()
    assert "a valid draft with 2 tasks" in r.stdout and "hive approve plans/add-oauth-login.md" in r.stdout
    brief = (repo.root / ".hive" / "planning" / "add-oauth-login.md").read_text()
    assert "### Task 1:" in brief and "status: draft" in brief, "the brief teaches the plan format"
    assert repo.doit().returncode == 0 and repo.starts() == [], "a draft never runs"


def test_hive_plan_reports_problems_and_keeps_plans_draft(repo):
    _planner(repo)
    r = repo.hive("plan", "broken and approved thing")
    assert r.returncode == 0, r.stderr
    assert "depends on unknown task '99'" in r.stdout
    assert "set it back to draft" in r.stdout
    assert "status: draft" in (repo.root / "plans" / "broken-and-approved-thing.md").read_text()


def test_cleanup_removes_what_finished_tasks_left_but_never_unmerged_work(repo):
    repo.write_plan(
        "c",
        """
    ### Task 1: Too big
    fake: write notes.txt my analysis
    fake: signal too-big split it
    """,
    )
    repo.doit()
    st = repo.state("c", "1")
    assert st["state"] == "too_big" and os.path.exists(st["worktree"]), "dirty too_big worktree is kept"
    r = repo.hive("cleanup")
    assert r.returncode == 0 and "uncommitted" in r.stdout
    assert os.path.exists(st["worktree"])
    r = repo.hive("cleanup", "--force")
    assert r.returncode == 0 and not os.path.exists(st["worktree"])


def test_progress_line_on_a_terminal_and_quiet_otherwise(repo):
    repo.write_plan(
        "p",
        """
    ### Task 1: One
    fake: signal done

    ### Task 2: Two
    fake: signal done
    """,
    )
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "doit"], cwd=repo.root, stdout=subprocess.DEVNULL, stderr=slave, start_new_session=True
    )
    os.close(slave)
    out = read_pty(master).decode(errors="replace")
    proc.wait(timeout=60)
    os.close(master)
    assert proc.returncode == 0
    assert "[0/2] running: p:1" in out and "[1/2] running: p:2" in out
    quiet = repo.doit("p:1")
    assert "running:" not in quiet.stderr
