"""The `hive` command and doit's handling of bad input, as a user runs them."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import wait_for

BAD_PLAN = """
### Task 1: One
**Depends on:** 2, 9

### Task 2: Two
**Depends on:** 1

### Task ../x: Escape the repo
### Task 3:
**Type:** wizard

### Task 4: Script without code
**Type:** script
"""


def test_bad_plan_stops_doit_list_and_doit_with_every_error_and_no_traceback(repo):
    repo.write_plan("bad", BAD_PLAN)
    for args in (("list",), ()):
        r = repo.doit(*args)
        assert r.returncode == 3
        out = r.stdout + r.stderr
        assert "Traceback" not in out
        for expected in (
            "plans/bad.md:10: invalid task ID '../x'",
            "plans/bad.md:11: task 3 has no title",
            "plans/bad.md:12: task 3: unknown Type 'wizard'",
            "plans/bad.md:5: task 1 depends on unknown task '9'",
            "plans/bad.md:8: dependency cycle: 1 → 2 → 1",
            "plans/bad.md:14: script task 4 has no fenced code block",
        ):
            assert expected in out, out
    assert repo.starts() == []
    assert not (repo.root / ".hive" / "state").exists()


def test_bad_config_key_is_named_and_nothing_starts(repo):
    (repo.root / ".hive" / "config.toml").write_text("[execution]\ntask_timout = '5m'\n")
    repo.write_plan("p", "### Task 1: x\nfake: signal done\n")
    r = repo.doit()
    assert r.returncode == 3
    assert "unknown key execution.task_timout" in r.stderr and "Traceback" not in r.stderr


def test_invalid_draft_plan_only_warns(repo):
    repo.write_plan("bad", BAD_PLAN, status="draft")
    repo.write_plan("good", "### Task 1: Fine\nfake: signal done\n")
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert "warning" in r.stdout and "plans/bad.md" in r.stdout
    assert repo.starts() == ["good:1"]


def test_plan_named_like_a_doit_command_is_rejected(repo):
    repo.write_plan("list", "### Task 1: x\nfake: signal done\n")
    r = repo.doit("list")
    assert r.returncode == 3
    assert "is a doit command" in r.stderr


def test_approve_plan_validates_and_changes_only_the_status_line(repo):
    text = "---\nplan: feat\nstatus: draft   \nagent: fake\n---\n# Feature\r\n\n### Task 1: Do it\nfake: signal done\n"
    path = repo.root / "plans" / "feat.md"
    path.write_bytes(text.encode())
    r = repo.hive("approve", "plans/feat.md")
    assert r.returncode == 0, r.stderr
    assert path.read_bytes() == text.replace("status: draft   ", "status: approved").encode()
    assert "approved (1 task)" in r.stdout


def test_approve_plan_without_front_matter_adds_it(repo):
    path = repo.root / "plans" / "bare.md"
    path.write_text("### Task 1: Do it\nfake: signal done\n")
    assert repo.hive("approve", "plans/bare.md").returncode == 0
    assert path.read_text() == "---\nstatus: approved\n---\n### Task 1: Do it\nfake: signal done\n"


def test_approve_bad_plan_lists_every_error_and_changes_nothing(repo):
    path = repo.write_plan("bad", BAD_PLAN, status="draft")
    before = path.read_text()
    r = repo.hive("approve", "plans/bad.md")
    assert r.returncode == 3
    assert r.stderr.count("hive: error:") >= 6
    assert path.read_text() == before


NEAR_MISS_PLAN = """
# Feature

## Task 1: Level two
#### Task 2: Level four
### Task3: No space
### task 4: Lower case
"""
NEAR_MISSES = {
    6: "write '### Task 1: Level two'",
    7: "write '### Task 2: Level four'",
    8: "write '### Task 3: No space'",
    9: "write '### Task 4: Lower case'",
}


def test_near_miss_task_headings_stop_hive_approve_and_doit_list_naming_the_expected_form(repo):
    path = repo.write_plan("near", NEAR_MISS_PLAN, status="draft")
    before = path.read_text()
    r = repo.hive("approve", "plans/near.md")
    assert r.returncode == 3 and "approved" not in r.stdout
    for line, fix in NEAR_MISSES.items():
        assert f"plans/near.md:{line}:" in r.stderr and fix in r.stderr, r.stderr
    assert path.read_text() == before
    draft = repo.doit("list")
    assert draft.returncode == 0 and all(f"plans/near.md:{line}:" in draft.stdout for line in NEAR_MISSES)
    repo.write_plan("near", NEAR_MISS_PLAN)  # approved by hand
    approved = repo.doit("list")
    assert approved.returncode == 3
    assert all(
        f"plans/near.md:{line}:" in approved.stderr and fix in approved.stderr for line, fix in NEAR_MISSES.items()
    )


def test_a_plan_without_tasks_is_not_approved(repo):
    path = repo.write_plan("empty", "# Notes\n\nNothing to do yet.\n", status="draft")
    r = repo.hive("approve", "plans/empty.md")
    assert r.returncode == 3
    assert "plans/empty.md:1: the plan has no tasks" in r.stderr and "### Task <ID>: <title>" in r.stderr
    assert "status: draft" in path.read_text()


def test_a_field_below_the_description_is_a_warning_in_hive_approve_and_doit_list(repo):
    repo.write_plan(
        "late",
        "### Task 1: One\nBuild it.\n**Depends on:** 2\nfake: signal done\n\n### Task 2: Two\nfake: signal done\n",
        status="draft",
    )
    warning = "warning: plans/late.md:6: '**Depends on:** 2' is below the description"
    r = repo.hive("approve", "plans/late.md")
    assert r.returncode == 0, r.stdout
    assert warning in r.stdout and "fields go right under the heading" in r.stdout
    assert "approved (2 tasks)" in r.stdout
    listing = repo.doit("list")
    assert listing.returncode == 0 and warning in listing.stdout


def test_status_json_has_a_stable_shape(repo):
    repo.write_plan(
        "s",
        """
    ### Task 1: First
    fake: write a.txt a
    fake: commit a
    fake: signal done

    ### Task 2: Second
    **Depends on:** 1
    fake: note schema written, migrating next
    fake: note connecting to the database
    fake: signal blocked cannot reach the database
    """,
    )
    repo.doit()
    data = repo.status_json()
    assert data["counts"]["done"] == 1 and data["counts"]["blocked"] == 1
    by_id = {t["id"]: t for t in data["tasks"]}
    for key in ("plan", "id", "title", "state", "reason", "attempt", "worktree", "session", "commit"):
        assert key in by_id["1"]
    assert by_id["1"]["state"] == "done" and len(by_id["1"]["commit"]) == 40
    assert by_id["2"]["state"] == "blocked" and "database" in by_id["2"]["reason"]
    assert [n["text"] for n in by_id["2"]["notes"]] == ["schema written, migrating next", "connecting to the database"]
    assert by_id["1"]["notes"] == []
    text = repo.hive("status").stdout
    assert "1/2 done" in text and "cannot reach the database" in text
    assert "note: connecting to the database (attempt 1)" in text and "migrating next" not in text  # the last one
    report = (repo.root / ".hive" / "report.md").read_text()
    assert "- s:2 (attempt 1): schema written, migrating next\n- s:2 (attempt 1): connecting to the database" in report


def test_retry_reopens_a_blocked_task_which_then_runs_again(repo):
    repo.write_plan(
        "r",
        """
    ### Task 1: Needs a decision
    fake@1: signal blocked which database?
    fake@2: write db.txt postgres
    fake@2: commit choose postgres
    fake@2: signal done
    """,
    )
    assert repo.doit().returncode == 1
    r = repo.hive("retry", "r:1")
    assert r.returncode == 0 and "blocked → planned" in r.stdout
    assert repo.doit().returncode == 0
    assert repo.file_on_main("db.txt") == "postgres\n"
    assert repo.hive("retry", "r:1").returncode == 3, "a done task needs --force"
    assert repo.hive("retry", "r:1", "--force").returncode == 0


def test_signal_commands_refuse_to_run_outside_an_agent_session(repo):
    r = repo.hive("done")
    assert r.returncode == 3
    assert "HIVE_TASK" in r.stderr and "Traceback" not in r.stderr


def test_logs_shows_the_agents_output(repo):
    repo.write_plan(
        "l",
        """
    ### Task 1: Talk
    fake: print hello from the agent
    fake: signal done
    """,
    )
    assert repo.doit().returncode == 0
    r = repo.hive("logs", "l:1")
    assert r.returncode == 0 and "hello from the agent" in r.stdout
    assert repo.hive("logs", "../etc:passwd").returncode == 3


def test_logs_of_a_plan_or_task_that_does_not_exist_say_so_instead_of_not_started(repo):
    repo.write_plan("l", "### Task 1: One\nfake: signal done\n\n### Task 2: Two\nfake: signal done\n")
    (repo.root / "plans" / "m.md").write_text("### Task 1: Draft\n")
    no_plan = repo.hive("logs", "nosuch:1")
    assert no_plan.returncode == 3
    assert "no plan named 'nosuch'; plans: l, m" in no_plan.stderr and "not started" not in no_plan.stderr
    no_task = repo.hive("logs", "l:9")
    assert no_task.returncode == 3 and "plan l has no task '9'; its tasks: 1, 2" in no_task.stderr
    not_yet = repo.hive("logs", "l:2")
    assert not_yet.returncode == 0 and "no log for l:2 yet: it has not started" in not_yet.stdout
    env = {"HIVE_TASK": "l:1", "HIVE_ATTEMPT": "1", "HIVE_ROOT": str(repo.root)}
    assert repo.hive("discover", "Add caching", env=env).returncode == 0
    found = repo.hive("logs", "l:D1")
    assert found.returncode == 3 and "l:D1 is discovered work waiting for review" in found.stderr


def test_logs_show_what_the_terminal_showed_without_escape_codes_and_follow_ends_with_the_task(repo):
    repo.write_plan(
        "l",
        """
    ### Task 1: Talk
    fake: print-colour red words
    fake: signal done
    """,
    )
    assert repo.doit().returncode == 0
    shown = repo.hive("logs", "l:1").stdout
    assert "red words" in shown and "done thinking" in shown
    assert "\x1b" not in shown and "\r" not in shown and "thinking\n" not in shown.replace("done thinking", "")
    assert "\x1b[31m" in repo.hive("logs", "l:1", "--raw").stdout
    r = repo.hive("logs", "-f", "l:1", timeout=10)  # the task is over: -f does not wait forever
    assert r.returncode == 0 and "red words" in r.stdout


def test_hive_on_the_agents_path_is_this_hive_even_from_a_venv(repo):
    repo.write_plan(
        "p",
        """
    ### Task 1: Find hive
    fake: signal done
    """,
    )
    assert repo.doit().returncode == 0
    shim = repo.root / ".hive" / "bin" / "hive"
    assert sys.executable in shim.read_text()
    r = subprocess.run([str(shim), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "approve" in r.stdout


def test_events_log_records_every_state_change(repo):
    repo.write_plan("e", "### Task 1: x\nfake: signal done\n")
    assert repo.doit().returncode == 0
    events = [json.loads(line) for line in (repo.root / ".hive" / "events.jsonl").read_text().splitlines()]
    assert [(e["from"], e["to"]) for e in events if e["from"] != e["to"]] == [
        ("planned", "in_progress"),
        ("in_progress", "done"),
    ]


def test_status_shows_a_running_agent_with_its_worker_session_and_worktree(repo):
    repo.write_plan(
        "w",
        """
    ### Task 1: Long job
    fake: print started
    fake: wait-for .hive/fake/go
    fake: signal done
    """,
    )
    run = subprocess.Popen(
        [sys.executable, "-m", "doit"], cwd=repo.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        task = wait_for(
            lambda: next(
                (t for t in repo.status_json()["tasks"] if t["state"] == "in_progress" and t["agent_alive"]), None
            ),
            what="the task to be running",
        )
        assert task["worker"] == "w1" and task["session"].startswith("hive-w1-w-1-")
        assert task["runner_pid"] == run.pid
        assert (repo.root / task["worktree"]).is_dir() or Path(task["worktree"]).is_dir()
        text = repo.hive("status").stdout
        assert "worker w1" in text and "hive attach w:1" in text
    finally:
        (repo.root / ".hive" / "fake" / "go").write_text("")
        _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert repo.status_json()["counts"]["done"] == 1


def test_demo_runs_the_example_plan_end_to_end(isolated):
    target = isolated / "demo"
    r = subprocess.run(
        [sys.executable, "-m", "hive", "demo", "--dir", str(target), "-n", "2"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4/4 done" in r.stdout and "all tasks merged" in r.stdout
    log = subprocess.run(
        ["git", "-C", str(target), "log", "--format=%s", "main"], capture_output=True, text=True
    ).stdout
    assert log.count("hive: merge example:") == 4
    out = subprocess.run([sys.executable, "-m", "greet", "Ada"], cwd=target, capture_output=True, text=True)
    assert out.stdout == "Hello, Ada!\nGoodbye, Ada.\n"
    sockets = list(isolated.glob("tmux-*/hive-demo-*"))
    assert sockets, "the demo ran its agents on a tmux server of its own"
    for socket in sockets:
        alive = subprocess.run(["tmux", "-S", str(socket), "list-sessions"], capture_output=True)
        assert alive.returncode != 0, "the demo's tmux server is gone"


def test_the_example_plan_in_this_repository_is_a_valid_draft():
    from hive.plan.graph import load_plan
    from hive.settings.config import Config

    here = Path(__file__).resolve().parents[2]
    plan, _, problems = load_plan(here / "plans" / "example.md", Config())
    assert problems == [] and plan.status == "draft" and len(plan.tasks) == 4


def test_hive_version_is_the_installed_package_version(isolated):
    r = subprocess.run([sys.executable, "-m", "hive", "--version"], capture_output=True, text=True, cwd=isolated)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == f"hive-agents {importlib.metadata.version('hive-agents')}"


def test_from_a_subdirectory_hive_says_to_run_doit_k_which_runs_the_plan(repo):
    """Plain `doit` cannot find dodo.py below the root (doit reads its settings only from
    the current directory, so Hive cannot change that): `doit -k` or DOIT_SEEK_FILE can."""
    repo.write_plan("p", "### Task 1: x\nfake: write a.txt a\nfake: commit a\nfake: signal done\n", status="draft")
    sub = repo.root / "src" / "deep"
    sub.mkdir(parents=True)

    def doit(*args: str, **env: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "doit", *args]
        return subprocess.run(argv, cwd=sub, capture_output=True, text=True, env={**os.environ, **env})

    approve = subprocess.run(
        [sys.executable, "-m", "hive", "approve", "../../plans/p.md"], cwd=sub, capture_output=True, text=True
    )
    assert approve.returncode == 0, approve.stderr
    assert "you are in a subdirectory: run `doit -k`" in approve.stdout and "DOIT_SEEK_FILE=1" in approve.stdout
    assert "Could not find dodo file" in doit("list").stderr
    assert "p:1" in doit("list", DOIT_SEEK_FILE="1").stdout
    r = doit("-k")
    assert r.returncode == 0, r.stdout
    assert repo.file_on_main("a.txt") == "a\n"
    at_root = repo.hive("approve", "plans/p.md")
    assert at_root.returncode == 0 and "subdirectory" not in at_root.stdout
