"""kill -9 at the worst moments, orphaned workers, two runs at once, SIGTERM and
`hive stop`: every task's work lands on main exactly once and nothing is left
looking like it runs."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from conftest import ONE_THEN_TWO, assert_finished_exactly_once, wait_for

WAITING_PLAN = """
### Task a: First
fake: wait-for .hive/fake/go
fake: write a.txt a
fake: commit work a
fake: signal done

### Task b: Second
fake: wait-for .hive/fake/go
fake: write b.txt b
fake: commit work b
fake: signal done

### Task c: After both
**Depends on:** a, b
fake: write c.txt c
fake: commit work c
fake: signal done
"""


def kill_group(run) -> None:
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=10)


def test_kill9_while_agents_run_then_rerun_reattaches_without_respawning(repo):
    repo.write_plan("k", WAITING_PLAN)
    run = repo.start_doit("-n", "2")
    wait_for(lambda: len(repo.starts()) == 2, what="both agents to start")
    kill_group(run)
    ghost = repo.status_json()["tasks"]
    assert {t["id"]: t["agent_alive"] for t in ghost if t["state"] == "in_progress"} == {"a": True, "b": True}
    assert all("no run is watching" in t["reason"] for t in ghost if t["state"] == "in_progress")
    rerun = repo.start_doit("-n", "2")
    wait_for(lambda: rerun.output().count("re-attaching to its running agent") == 2, what="the re-attach")
    repo.go()
    assert rerun.wait() == 0, rerun.output()
    assert "its agent keeps running in tmux session" in rerun.output()
    assert sorted(repo.starts()) == ["k:a", "k:b", "k:c"], "no agent was started twice"
    assert_finished_exactly_once(repo, {"k:a": "work a", "k:b": "work b", "k:c": "work c"})


def test_done_signal_sent_while_no_run_watches_is_merged_by_the_next_run(repo):
    repo.write_plan("k", WAITING_PLAN)
    run = repo.start_doit("-n", "2")
    wait_for(lambda: len(repo.starts()) == 2, what="both agents to start")
    kill_group(run)
    repo.go()
    wait_for(lambda: len(list((repo.root / ".hive" / "signals").glob("*/signal.json"))) == 2, what="agents to signal")
    r = repo.doit("-n", "2")
    assert r.returncode == 0, r.stdout
    assert "signalled `done` while no run watched" in r.stdout
    assert sorted(repo.starts()) == ["k:a", "k:b", "k:c"]
    assert_finished_exactly_once(repo, {"k:a": "work a", "k:b": "work b", "k:c": "work c"})


def test_kill9_with_agents_dead_gives_a_new_attempt_that_continues(repo):
    repo.write_plan(
        "k",
        """
    ### Task a: Resumable
    fake: dump-context
    fake@1: write part1.txt one
    fake@1: commit part one
    fake@1: note part one committed
    fake@1: wait-for .hive/fake/never
    fake@2: write part2.txt two
    fake@2: commit part two
    fake@2: signal done
    """,
    )
    run = repo.start_doit()
    notes = repo.root / ".hive" / "notes"
    wait_for(
        lambda: any("part one committed" in f.read_text() for f in notes.glob("*.jsonl")),
        what="the first attempt's note",
    )
    kill_group(run)
    subprocess.run(["tmux", "-L", os.environ["HIVE_TMUX_SOCKET"], "kill-server"], capture_output=True)
    ghost = {t["id"]: t for t in repo.status_json()["tasks"]}["a"]
    assert ghost["state"] == "in_progress" and "interrupted" in ghost["reason"]
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert "interrupted: its agent is gone" in r.stdout
    st = repo.state("k", "a")
    assert [h["outcome"] for h in st["history"]] == ["interrupted", "done"]
    assert st["attempts_used"] == 1, "an interrupted attempt does not count against max_attempts"
    ctx = (repo.root / ".hive" / "fake" / "context-k_a-a2.md").read_text()
    assert "part one" in ctx and "part one committed" in ctx
    assert_finished_exactly_once(repo, {"k:a": "part two"})
    assert repo.main_log().count("part one") == 1


@pytest.mark.parametrize(
    "point",
    [
        "after-claim",
        "after-worktree-add",
        "after-spawn",
        "in-merge",
        "before-publish",
        "after-publish",
        "before-branch-delete",
    ],
)
def test_kill9_at_each_crash_point_lands_the_work_exactly_once(repo, point):
    repo.write_plan("f", ONE_THEN_TWO)
    crashed = repo.doit(env={"HIVE_FAULT": point})
    assert crashed.returncode == -signal.SIGKILL
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert_finished_exactly_once(repo, {"f:1": "the work", "f:2": "next work"})
    merges = [m for m in repo.main_log() if m.startswith("hive: merge f:1")]
    assert len(merges) == 1
    assert repo.state("f", "1")["files"] == ["w.txt"], "the files merged are known even after a crash"
    # after-claim dies before the agent starts; every later point finds it alive or finished
    assert repo.starts().count("f:1") == 1


def test_kill9_of_doit_alone_stops_its_workers_and_the_next_run_reattaches(repo):
    repo.write_plan(
        "o",
        """
    ### Task a: Long
    fake: wait-for .hive/fake/go
    fake: write a.txt a
    fake: commit work a
    fake: signal done

    ### Task b: Later
    **Depends on:** a
    fake: signal done
    """,
    )
    run = repo.start_doit("-n", "2")
    wait_for(lambda: repo.starts() == ["o:a"], what="the agent to start")
    worker_pid = repo.state("o", "a")["pid"]
    assert worker_pid != run.pid, "under -n the task runs in a worker process"
    workers = _children(run.pid)
    assert len(workers) == 2, "one worker runs the task, the other waits for work"
    os.kill(run.pid, signal.SIGKILL)  # only doit dies (the OOM killer's choice, say)
    run.wait(timeout=10)
    wait_for(lambda: not any(_alive(pid) for pid in workers), timeout=15, what="the workers to stop with doit")
    assert "o:a: stopped watching — its agent keeps running in tmux session" in run.output()
    second = repo.start_doit("-n", "2")
    wait_for(lambda: "re-attaching to its running agent" in second.output(), what="the re-attach")
    repo.go()
    assert second.wait() == 0, second.output()
    assert repo.starts() == ["o:a", "o:b"]
    assert_finished_exactly_once(repo, {"o:a": "work a"})


def test_a_run_waits_for_a_task_another_process_is_running(repo):
    from hive.store.files import FileLock
    from hive.store.paths import Paths

    repo.write_plan("w", "### Task a: One\nfake: signal done\n")
    claim = FileLock(Paths(repo.root).claim_lock("w", "a"))
    assert claim.try_acquire()
    run = repo.start_doit()
    wait_for(
        lambda: f"another run (pid {os.getpid()}) is running it; waiting" in run.output(),
        what="the run to wait for the claim",
    )
    assert run.running() and repo.starts() == []
    claim.release()
    assert run.wait() == 0, run.output()
    assert repo.starts() == ["w:a"]


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_two_doit_runs_at_once_never_run_a_task_twice(repo):
    body = "\n".join(
        f"""
    ### Task {i}: Task {i}
    fake: sleep 0.3
    fake: write t{i}.txt {i}
    fake: commit work {i}
    fake: signal done
    """
        for i in range(1, 6)
    )
    repo.write_plan("two", body)
    first, second = repo.start_doit("-n", "2"), repo.start_doit("-n", "2")
    for run in (first, second):
        assert run.wait() == 0, run.output()
    assert sorted(repo.starts()) == [f"two:{i}" for i in range(1, 6)]
    assert_finished_exactly_once(repo, {f"two:{i}": f"work {i}" for i in range(1, 6)})


def test_sigterm_stops_the_run_cleanly_and_leaves_the_agent_for_the_next_run(repo):
    repo.write_plan("t", WAITING_PLAN)
    run = repo.start_doit()
    wait_for(lambda: repo.starts() == ["t:a"], what="the agent to start")
    run.proc.send_signal(signal.SIGTERM)
    assert run.wait(timeout=30) != 0
    assert "keeps running in tmux session" in run.output() and "re-attaches" in run.output()
    st = repo.state("t", "a")
    assert st["state"] == "in_progress"
    repo.go()
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert sorted(repo.starts()) == ["t:a", "t:b", "t:c"]
    assert_finished_exactly_once(repo, {"t:a": "work a", "t:b": "work b", "t:c": "work c"})


def test_hive_stop_stops_the_agent_in_stages_and_blocks_the_task(repo):
    repo.write_plan("s", WAITING_PLAN)
    run = repo.start_doit()
    wait_for(lambda: repo.starts() == ["s:a"], what="the agent to start")
    r = repo.hive("stop", "s:a")
    assert r.returncode == 0, r.stderr
    assert "sending SIGINT" in r.stdout and "agent stopped" in r.stdout
    # the run keeps going ([execution] keep_going): s:b runs, and s:c, which waits for s:a, is skipped
    wait_for(lambda: repo.starts() == ["s:a", "s:b"], what="the run to go on with s:b")
    repo.go()
    assert run.wait(timeout=60) == 1, run.output()
    st = repo.state("s", "a")
    assert st["state"] == "blocked" and "stopped by `hive stop`" in st["reason"]
    assert repo.state("s", "b")["state"] == "done" and repo.state("s", "c")["state"] == "planned"
    assert repo.hive("retry", "s:a").returncode == 0
    assert repo.doit().returncode == 0
    assert repo.starts().count("s:a") == 2 and repo.starts().count("s:b") == 1


def test_reconcile_reports_leftover_worktrees_with_the_command_to_remove_them(repo):
    stray = repo.root / "worktrees" / "w9-stray"
    repo.git("worktree", "add", "-q", "-b", "stray", str(stray))
    repo.write_plan("r", "### Task 1: x\nfake: signal done\n")
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert f"leftover worktree {stray}" in r.stdout and f"git worktree remove {stray}" in r.stdout
    assert stray.exists(), "reconcile reports; it never deletes work it does not know"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_ctrl_c_under_n2_stops_without_hanging_and_the_next_run_finishes(repo):
    repo.write_plan("c", WAITING_PLAN)
    run = repo.start_doit("-n", "2")
    wait_for(lambda: len(repo.starts()) == 2, what="both agents to start")
    os.killpg(run.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
    assert run.wait(timeout=30) != 0
    assert repo.status_json()["counts"]["in_progress"] == 2
    repo.go()
    r = repo.doit("-n", "2")
    assert r.returncode == 0, r.stderr
    assert sorted(repo.starts()) == ["c:a", "c:b", "c:c"]
    assert_finished_exactly_once(repo, {"c:a": "work a", "c:b": "work b", "c:c": "work c"})


def test_an_attempt_stopped_before_its_branch_was_made_leaves_the_next_one_the_work_before_it(repo):
    """Attempt 1 commits and fails; attempt 2 is killed just after its claim, before its branch
    exists; attempt 3 goes on from attempt 1's commits (soak seed 9196: it started from main and
    left attempt 1's branch behind)."""
    repo.configure(attempts=1)
    repo.write_plan(
        "k",
        """
    ### Task a: Resumable
    fake: dump-context
    fake@1: write part1.txt one
    fake@1: commit part one
    fake@1: crash 5
    fake: write part2.txt two
    fake: commit part two
    fake: signal done
    """,
    )
    assert repo.doit().returncode != 0 and repo.state("k", "a")["state"] == "failed"
    repo.configure(attempts=3)
    crashed = repo.doit(env={"HIVE_FAULT": "after-claim"})
    assert crashed.returncode == -signal.SIGKILL and repo.state("k", "a")["attempt"] == 2
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert "part one" in (repo.root / ".hive" / "fake" / "context-k_a-a3.md").read_text()
    assert repo.file_on_main("part1.txt") == "one\n" and repo.main_log().count("part one") == 1
    assert_finished_exactly_once(repo, {"k:a": "part two"})  # no branch of an attempt left
