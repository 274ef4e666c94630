"""End to end: real doit runs of plans executed by the fake agent in tmux."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from conftest import FAKE_AGENT, wait_for

DIAMOND = """
# Diamond

## Context
A diamond of four tasks.

## Tasks

### Task 1: Base
**Depends on:** none

fake: write base.txt base
fake: commit add base
fake: signal done base written

### Task 2: Left
**Depends on:** 1

fake: write left.txt left
fake: commit add left
fake: signal done

### Task 3: Right
**Depends on:** 1

fake: write right.txt right
fake: commit add right
fake: signal done

### Task 4: Top
**Depends on:** 2, 3
**Verify:** test -f base.txt && test -f left.txt && test -f right.txt

fake: write top.txt top
fake: commit add top
fake: signal done
"""


def test_diamond_plan_runs_in_order_and_every_commit_lands_on_main_once(repo):
    repo.write_plan("d", DIAMOND)
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    starts = repo.starts()
    assert sorted(starts) == ["d:1", "d:2", "d:3", "d:4"]
    assert starts[0] == "d:1" and starts[-1] == "d:4"
    log = repo.main_log()
    for msg in ("add base", "add left", "add right", "add top"):
        assert log.count(msg) == 1, log
    assert sum(1 for m in log if m.startswith("hive: merge d:")) == 4
    for f in ("base.txt", "left.txt", "right.txt", "top.txt"):
        assert repo.file_on_main(f) is not None
    assert repo.worktrees() == []
    assert not [b for b in repo.git("branch", "--format=%(refname:short)").split() if b.startswith("hive/")]
    assert (repo.root / "top.txt").exists(), "the user's checkout of main is updated"
    assert repo.git("status", "--porcelain").count("top.txt") == 0


def test_rerun_spawns_nothing_and_deleting_doit_db_reruns_nothing(repo):
    repo.write_plan("d", DIAMOND)
    assert repo.doit().returncode == 0
    head = repo.git("rev-parse", "main")
    r = repo.doit()
    assert r.returncode == 0
    assert r.stdout.count("-- d:") == 4
    for db in repo.root.glob(".doit.db*"):
        db.unlink()
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("-- d:") == 4
    assert len(repo.starts()) == 4
    assert repo.git("rev-parse", "main") == head


def test_editing_one_tasks_text_reopens_only_that_task(repo):
    path = repo.write_plan("d", DIAMOND)
    assert repo.doit().returncode == 0
    path.write_text(
        path.read_text()
        .replace("### Task 3: Right", "### Task 3: Right, improved")
        .replace("write right.txt right", "write right.txt better right")
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.starts().count("d:3") == 2
    assert repo.starts().count("d:1") == 1 and repo.starts().count("d:4") == 1
    assert repo.file_on_main("right.txt") == "better right\n"


def test_doit_list_shows_each_task_with_its_state(repo):
    repo.write_plan("d", DIAMOND)
    r = repo.doit("list")
    assert r.returncode == 0, r.stdout
    assert "d:1" in r.stdout and "Base" in r.stdout and "[planned]" in r.stdout
    repo.doit("d:1")
    r = repo.doit("list")
    line = next(ln for ln in r.stdout.splitlines() if "d:1 " in ln)
    assert "[done]" in line
    status = repo.doit("list", "--status").stdout
    assert next(ln for ln in status.splitlines() if "d:1 " in ln).startswith("U")
    assert next(ln for ln in status.splitlines() if "d:2 " in ln).startswith("R")
    assert not list(repo.root.glob(".hive/state/d/2.json")), "doit list never changes state"


def test_draft_plan_is_listed_but_never_runs(repo):
    repo.write_plan("d", DIAMOND, status="draft")
    r = repo.doit("list")
    assert "draft" in r.stdout
    r = repo.doit()
    assert r.returncode == 0
    assert repo.starts() == []
    r = repo.doit("d:1")
    assert r.returncode != 0
    assert "plan is draft" in r.stdout + r.stderr
    assert repo.starts() == []


def test_blocked_and_too_big_outcomes_keep_their_reason(repo):
    repo.write_plan(
        "o",
        """
    ### Task b: Needs a human
    fake: write wip.txt half done
    fake: signal blocked need the API key

    ### Task t: Way too big
    fake: signal too-big split into parser and printer
    """,
    )
    r = repo.doit("-c")
    assert r.returncode == 1, "with -c a held task exits 1; the plan's group task must not make it 2"
    b, t = repo.state("o", "b"), repo.state("o", "t")
    assert b["state"] == "blocked" and "need the API key" in b["reason"]
    assert Path(b["worktree"]).exists(), "a blocked task keeps its worktree"
    assert (Path(b["worktree"]) / "wip.txt").exists()
    assert t["state"] == "too_big" and "split into parser" in t["reason"]
    assert not Path(t["worktree"]).exists(), "a clean too_big worktree is removed"
    assert "need the API key" in r.stderr + r.stdout
    # a re-run leaves them alone and says how to retry
    r = repo.doit("o:b")
    assert r.returncode == 1
    assert "hive retry o:b" in r.stdout + r.stderr
    assert repo.starts() == ["o:b", "o:t"]


def test_crash_gets_a_new_attempt_with_continuation_context(repo):
    repo.configure(grace="1s")
    repo.write_plan(
        "c",
        """
    ### Task 1: Flaky
    fake: dump-context
    fake@1: write part1.txt one
    fake@1: commit first half
    fake@1: note did part 1, part 2 next
    fake@1: print about to crash
    fake@1: sleep 1.5
    fake@1: crash 7
    fake@2: write part2.txt two
    fake@2: commit second half
    fake@2: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.starts() == ["c:1", "c:1"]
    ctx = (repo.root / ".hive" / "fake" / "context-c_1-a2.md").read_text()
    assert "attempt 2" in ctx and "crashed" in ctx
    assert "first half" in ctx, "the previous attempt's commits are listed"
    assert "did part 1, part 2 next" in ctx
    assert "about to crash" in ctx
    log = repo.main_log()
    assert log.count("first half") == 1 and log.count("second half") == 1


def test_agent_that_never_starts_fails_within_the_grace_period(repo):
    repo.configure(grace="2s", attempts=1)
    repo.write_plan(
        "s",
        """
    ### Task 1: Silent
    fake: silent
    """,
    )
    r = repo.doit(timeout=60)
    assert r.returncode == 1
    st = repo.state("s", "1")
    assert st["state"] == "failed" and "agent_spawn_failed" in st["reason"]


def test_an_agent_command_that_is_not_found_fails_once_with_its_own_output(repo):
    # (a profile whose binary is missing at start is refused before anything runs: test_doctor.py)
    extra = '\n[agents.ghost]\ncommand = ["bash", "-c", "no-such-agent-binary", "ghost", "{prompt}"]\n'
    repo.configure(grace="5s", attempts=2, extra=extra)
    repo.write_plan(
        "g",
        """
    ### Task 1: Ghost
    **Agent:** ghost
    Anything.
    """,
    )
    r = repo.doit(timeout=60)
    assert r.returncode == 1
    st = repo.state("g", "1")
    assert st["state"] == "failed" and st["reason"].startswith("command not found (exit 127: ")
    assert "no-such-agent-binary" in st["reason"] and "no-such-agent-binary" in st["output_tail"]
    assert (st["attempt"], st["permanent"]) == (1, True)  # a permanent failure is not retried
    assert "trying again" not in r.stderr


def test_timeout_fails_the_task(repo):
    repo.configure(attempts=1)
    repo.write_plan(
        "t",
        """
    ### Task 1: Forever
    **Timeout:** 2s
    fake: hang
    """,
    )
    r = repo.doit(timeout=60)
    assert r.returncode == 1
    assert "timeout" in repo.state("t", "1")["reason"]


def test_verify_failure_fails_the_task_with_output_and_main_is_untouched(repo):
    repo.configure(attempts=1)
    head = repo.git("rev-parse", "main")
    repo.write_plan(
        "v",
        """
    ### Task 1: Broken
    **Verify:** echo checking the thing; test -f missing.txt

    fake: write a.txt a
    fake: commit add a
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 1
    st = repo.state("v", "1")
    assert st["state"] == "failed"
    assert st["reason"] == "Verify failed (exit 1): echo checking the thing; test -f missing.txt"
    assert "checking the thing" in st["output_tail"]
    assert repo.git("rev-parse", "main") == head
    shown = {t["id"]: t for t in repo.status_json()["tasks"]}["1"]
    assert shown["reason"] == st["reason"] and "checking the thing" in shown["output_tail"]
    assert "checking the thing" in repo.hive("status").stdout


def test_merge_conflict_blocks_with_files_listed_and_keeps_the_worktree(repo):
    repo.configure(attempts=1)  # no attempt left for a resolve attempt (test_resolve_and_briefs.py)
    repo.write_plan(
        "m",
        """
    ### Task 1: Edit readme
    fake: wait-for .hive/fake/go
    fake: write README.md from the agent
    fake: commit agent edit
    fake: signal done
    """,
    )

    def user_commits_while_the_agent_works():
        wait_for(lambda: repo.starts("m:1"), what="the agent to start")
        (repo.root / "README.md").write_text("from the user\n")
        repo.git("commit", "-q", "-am", "user edit")
        (repo.root / ".hive" / "fake" / "go").write_text("")

    t = threading.Thread(target=user_commits_while_the_agent_works)
    t.start()
    r = repo.doit()
    t.join()
    assert r.returncode == 1
    st = repo.state("m", "1")
    assert st["state"] == "blocked" and "README.md" in st["reason"] and "conflict" in st["reason"]
    assert "git merge main" in st["reason"] and "hive retry m:1" in st["reason"]
    assert Path(st["worktree"]).exists()
    assert "agent edit" in repo.git("log", "--format=%s", st["branch"])
    assert repo.git("log", "-1", "--format=%s", "main") == "user edit"
    assert (repo.root / "README.md").read_text() == "from the user\n"


def test_hostile_titles_never_reach_a_shell(repo, tmp_path):
    marker = tmp_path / "pwned"
    repo.write_plan(
        "h",
        f"""
    ### Task 1: $(touch {marker}) `touch {marker}` "quoted" 'single'; rm -rf /
    **Acceptance:** $(touch {marker})
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert not marker.exists()
    assert repo.state("h", "1")["state"] == "done"


def test_tracked_claude_md_is_byte_identical_after_a_run(repo):
    original = b"# Project rules\r\nUse tabs.\n\xe2\x9c\x93\n"
    (repo.root / "CLAUDE.md").write_bytes(original)
    repo.git("add", "CLAUDE.md")
    repo.git("commit", "-q", "-m", "project instructions")
    repo.configure(extra=f'\n[agents.fakeclaude]\ncommand = {fake_command()}\ncontext_file = "CLAUDE.md"\n')
    repo.write_plan(
        "c",
        """
    ### Task 1: Work with a tracked CLAUDE.md
    **Agent:** fakeclaude
    fake: dump-context
    fake: write code.txt code
    fake: commit add code
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert _show_bytes(repo, "CLAUDE.md") == original
    assert (repo.root / "CLAUDE.md").read_bytes() == original
    ctx = (repo.root / ".hive" / "fake" / "context-c_1-a1.md").read_text()
    assert "Use tabs." in ctx and "Your task: c:1" in ctx
    assert repo.file_on_main("code.txt") is not None


def test_context_file_is_never_committed_even_by_git_add_all(repo):
    repo.write_plan(
        "x",
        """
    ### Task 1: Add everything
    fake: write f.txt f
    fake: commit everything
    fake: signal done
    """,
    )
    assert repo.doit().returncode == 0
    assert repo.file_on_main("AGENTS.md") is None
    assert repo.file_on_main("f.txt") is not None


def test_users_uncommitted_and_untracked_work_survives_a_merge(repo):
    (repo.root / "notes.txt").write_text("tracked\n")
    repo.git("add", "notes.txt")
    repo.git("commit", "-q", "-m", "notes")
    (repo.root / "notes.txt").write_text("tracked, with my uncommitted edit\n")
    (repo.root / "scratch.txt").write_text("my untracked work\n")
    repo.write_plan(
        "u",
        """
    ### Task 1: Agent work
    fake: write feature.txt feature
    fake: commit feature
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert (repo.root / "notes.txt").read_text() == "tracked, with my uncommitted edit\n"
    assert (repo.root / "scratch.txt").read_text() == "my untracked work\n"
    assert (repo.root / "feature.txt").exists()


def test_merge_that_would_overwrite_users_untracked_file_blocks_and_keeps_both(repo):
    (repo.root / "feature.txt").write_text("the user's own draft\n")
    repo.write_plan(
        "u",
        """
    ### Task 1: Agent work
    fake: write feature.txt from the agent
    fake: commit feature
    fake: signal done
    """,
    )
    head = repo.git("rev-parse", "main")
    r = repo.doit()
    assert r.returncode == 1
    st = repo.state("u", "1")
    assert st["state"] == "blocked" and "feature.txt" in st["reason"]
    assert (repo.root / "feature.txt").read_text() == "the user's own draft\n"
    assert repo.git("rev-parse", "main") == head
    # once the user moves their file away, retry redoes only the merge
    (repo.root / "feature.txt").rename(repo.root / "mine.txt")
    assert repo.hive("retry", "u:1").returncode == 0
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.starts() == ["u:1"]
    assert (repo.root / "feature.txt").read_text() == "from the agent\n"


def fake_command() -> str:
    return json.dumps([sys.executable, str(FAKE_AGENT), "{context_file}"])


def _show_bytes(repo, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo.root), "show", f"main:{path}"], capture_output=True).stdout


def test_an_agent_silent_past_stuck_threshold_is_flagged_but_not_killed(repo):
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text().replace("[execution]\n", '[execution]\nstuck_threshold = "1s"\n'))
    repo.write_plan(
        "q",
        """
    ### Task 1: Thinks quietly
    fake: sleep 2
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert "no output for" in r.stdout and "hive attach q:1" in r.stdout
    assert any(e["event"].startswith("stuck") for e in repo.events())
