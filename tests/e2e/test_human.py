"""Discovered work, interactive planning, cleanup, and what a human sees while a run goes."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading

import pytest
from conftest import read_pty, wait_for


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
    assert r.returncode == 0, r.stdout
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


def test_a_retry_that_discovers_the_same_work_again_files_it_once(repo):
    repo.write_plan(
        "w",
        """
    ### Task 1: Build the login
    fake: discover "Add rate limiting" "login can be brute-forced"
    fake@1: crash 1
    fake@2: discover "add  RATE limiting" "said again in other words"
    fake@2: signal done
    """,
    )
    assert repo.doit().returncode == 0
    assert repo.starts() == ["w:1", "w:1"], "two attempts"
    found = repo.status_json()["discovered"]
    assert [(d["key"], d["details"]) for d in found] == [("w:D1", "login can be brute-forced")]
    env = {"HIVE_TASK": "w:1", "HIVE_ATTEMPT": "3", "HIVE_ROOT": str(repo.root)}
    again = repo.hive("discover", "Add rate limiting", env=env)
    assert again.returncode == 0 and "w:D1 already records this" in again.stdout
    assert repo.hive("approve", "w:D1", "--reject", "later").returncode == 0
    answered = repo.hive("discover", "Add rate limiting", env=env)
    assert "w:D1 already records this" in answered.stdout, "an answered item is not filed again either"
    assert repo.status_json()["discovered"] == []
    other = repo.hive("discover", "Add logging", env=env)
    assert "recorded w:D2" in other.stdout


def test_discovered_work_can_be_discarded(repo):
    repo.write_plan("w", "### Task 1: x\nfake: signal done\n")
    env = {"HIVE_TASK": "w:1", "HIVE_ATTEMPT": "1", "HIVE_ROOT": str(repo.root)}
    assert repo.hive("discover", "Rewrite everything in Rust", env=env).returncode == 0
    r = repo.hive("approve", "w:D1", "--reject", "out of scope")
    assert r.returncode == 0 and "discarded" in r.stdout
    assert repo.status_json()["discovered"] == []
    assert "D1" not in (repo.root / "plans" / "w.md").read_text()
    assert repo.hive("discover", "Another idea", env=env).stdout.count("w:D2") == 1, "numbers are never reused"


def test_hive_plan_runs_the_planning_agent_and_validates_its_draft(repo):
    repo.use_fake_planner()
    r = repo.hive("plan", "Add OAuth login")
    assert r.returncode == 0, r.stderr
    plan = repo.root / "plans" / "add-oauth-login.md"
    assert plan.exists() and "status: draft" in plan.read_text()
    assert "a valid draft with 2 tasks" in r.stdout and "hive approve plans/add-oauth-login.md" in r.stdout
    brief = (repo.root / ".hive" / "planning" / "add-oauth-login.md").read_text()
    assert "### Task 1:" in brief and "status: draft" in brief, "the brief teaches the plan format"
    assert repo.doit().returncode == 0 and repo.starts() == [], "a draft never runs"


def test_hive_plan_fails_on_an_invalid_plan_and_keeps_plans_draft(repo):
    repo.use_fake_planner()
    r = repo.hive("plan", "broken and approved thing")
    assert r.returncode == 3, r.stdout
    assert "hive: error: plans/broken-and-approved-thing.md:" in r.stderr
    assert "depends on unknown task '99'" in r.stderr and "is not a valid plan" in r.stderr
    assert "set it back to draft" in r.stderr
    assert "status: draft" in (repo.root / "plans" / "broken-and-approved-thing.md").read_text()


@pytest.mark.parametrize(
    "goal, how",
    [("crash", "exited with status 2"), ("silent", "exited with status 0")],
    ids=["planner-dies", "planner-writes-nothing"],
)
def test_hive_plan_fails_with_the_reason_when_the_planner_ends_without_a_plan(repo, goal, how):
    repo.use_fake_planner()
    r = repo.hive("plan", goal)
    assert r.returncode == 3, r.stdout
    assert f"hive: error: the planning agent {how} without writing plans/{goal}.md" in r.stderr
    said = "the model is unreachable" if goal == "crash" else "nothing to plan"
    assert f"| fake planner: {said}" in r.stderr, "its last words are shown"
    assert f"its whole output: .hive/logs/planning/{goal}.log" in r.stderr
    assert not (repo.root / "plans" / f"{goal}.md").exists()
    assert tmux_sessions() == [], "nothing is left in tmux"


def tmux_sessions() -> list[str]:
    r = subprocess.run(
        ["tmux", "-L", os.environ["HIVE_TMUX_SOCKET"], "list-sessions", "-F", "#{session_name}"],
        capture_output=True,
        text=True,
    )
    return r.stdout.split()


def _plan_on_a_terminal(repo, goal: str, answer: bytes | None) -> tuple[int, str]:
    """`hive plan` with its terminal on a pty, as a user runs it; `answer` is typed
    once the planner asks. Returns its exit status and what the terminal showed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "hive", "plan", goal],
        cwd=repo.root,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "TERM": "xterm"},
        start_new_session=True,
    )
    os.close(slave)
    shown: list[bytes] = []
    reader = threading.Thread(target=lambda: shown.append(read_pty(master)), daemon=True)
    reader.start()
    try:
        if answer is not None:
            screen = ["tmux", "-L", os.environ["HIVE_TMUX_SOCKET"], "capture-pane", "-p", "-t", f"=hive-plan-{goal}:"]
            wait_for(
                lambda: "shall I write it?" in subprocess.run(screen, capture_output=True, text=True).stdout,
                what="the planner's question",
            )
            os.write(master, answer)
        code = proc.wait(timeout=30)  # before the fix: attached to a dead pane until someone pressed C-b d
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
        os.close(master)
    return code, b"".join(shown).decode(errors="replace")


def test_hive_plan_on_a_terminal_comes_back_by_itself_when_the_planner_exits(repo):
    repo.use_fake_planner()
    code, shown = _plan_on_a_terminal(repo, "ask", b"yes\r")
    assert code == 0, shown
    assert "C-b d leaves it running" in shown
    # tmux draws it too, in the session's status line: a line printed just before it takes the
    # terminal over can be flushed away (tcflush TCOFLUSH; the fresh-machine flake of issue 44)
    assert shown.count("C-b d leaves it running") >= 2, shown
    assert "a valid draft with 2 tasks" in shown
    assert (repo.root / "plans" / "ask.md").exists()
    assert tmux_sessions() == []


def test_hive_plan_on_a_terminal_fails_with_the_reason_when_the_planner_dies(repo):
    repo.use_fake_planner()
    code, shown = _plan_on_a_terminal(repo, "crash", None)
    assert code == 3, shown
    assert "the planning agent exited with status 2 without writing plans/crash.md" in shown
    assert tmux_sessions() == []


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
        [sys.executable, "-m", "doit"], cwd=repo.root, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    out = read_pty(master).decode(errors="replace")
    proc.wait(timeout=60)
    os.close(master)
    assert proc.returncode == 0
    assert "[0/2] running: p:1 " in out and "[1/2] running: p:2 " in out
    quiet = repo.doit("p:1")
    assert "running:" not in quiet.stdout + quiet.stderr
