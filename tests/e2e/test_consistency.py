"""What the user sees agrees everywhere: `hive status` and `doit` never disagree
about a task, counters make sense, exit codes follow the SPEC, and small commands
fail cleanly (broken pipes, hostile environment values, foreign tmux sessions)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from conftest import wait_for

WAITING = """
### Task a: Waits
fake: write a.txt a
fake: commit work a
fake: wait-for .hive/fake/go
fake: signal done
"""


def test_a_done_signal_sent_after_ctrl_c_shows_as_signalled_not_stuck(repo):
    repo.configure()
    repo.write_plan("s", WAITING)
    run = repo.start_doit()
    wait_for(lambda: repo.starts() == ["s:a"], what="the agent to start")
    os.killpg(run.pid, signal.SIGINT)
    assert run.wait(timeout=30) == 130
    repo.go()
    wait_for(lambda: list((repo.root / ".hive" / "signals").glob("*/signal.json")), what="the done signal")
    task = repo.status_json()["tasks"][0]
    assert task["state"] == "in_progress" and not task["stuck"]
    assert "signalled `done`" in task["reason"] and "next `doit`" in task["reason"]
    assert "STUCK" not in repo.hive("status").stdout and "interrupted" not in task["reason"]
    r = repo.doit()
    assert r.returncode == 0 and "signalled `done` while no run watched" in r.stdout, r.stdout


def test_an_edited_blocked_task_is_reopened_by_status_and_by_doit_alike(repo):
    plan = repo.write_plan(
        "e",
        """
    ### Task 1: Needs a human
    fake@1: signal blocked which database?
    fake@2: write db.txt postgres
    fake@2: commit choose postgres
    fake@2: signal done
    """,
    )
    assert repo.doit().returncode == 1
    assert repo.status_json()["tasks"][0]["state"] == "blocked"
    plan.write_text(plan.read_text().replace("Needs a human", "Use postgres"))
    assert repo.status_json()["tasks"][0]["state"] == "planned"
    listed = subprocess.run([sys.executable, "-m", "doit", "list"], cwd=repo.root, capture_output=True, text=True)
    assert "planned (changed since blocked)" in listed.stdout
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert "re-opened because its text in the plan changed" in r.stdout
    assert repo.file_on_main("db.txt") == "postgres\n"


def test_attempt_counts_after_retry_never_exceed_max_attempts(repo):
    repo.configure(grace="2s")
    repo.write_plan(
        "c",
        """
    ### Task 1: Flaky
    fake@1: crash 3
    fake@2: crash 3
    fake@3: crash 3
    fake@4: signal done
    """,
    )
    assert repo.doit().returncode == 1
    assert repo.hive("retry", "c:1").returncode == 0
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    said = r.stdout
    assert "(1 of 2 attempts used)" in said
    assert " of 2 attempts used" in said and "3 of 2" not in said and "4 of 2" not in said


def test_under_continue_a_failed_task_and_its_dependents_exit_1_not_2(repo):
    repo.configure(attempts=1)
    repo.write_plan(
        "c",
        """
    ### Task a: Fails
    fake: signal blocked no way

    ### Task b: After a
    **Depends on:** a
    fake: signal done

    ### Task c: Independent
    fake: write c.txt c
    fake: commit work c
    fake: signal done
    """,
    )
    r = repo.doit("-c")
    assert r.returncode == 1, r.stdout + r.stderr
    assert repo.state("c", "c")["state"] == "done", "independent work goes on under -c"
    assert repo.state("c", "b")["state"] == "planned"


def test_status_json_into_a_closed_pipe_is_not_an_error(repo):
    body = "\n".join(f"### Task {i}: T{i}\nfake: signal done\n" for i in range(200))
    repo.write_plan("p", body)
    r = subprocess.run(
        [
            "bash",
            "-c",
            f'{sys.executable} -m hive status --json | head -c 10; echo; echo "hive exit ${{PIPESTATUS[0]}}"',
        ],
        cwd=repo.root,
        capture_output=True,
        text=True,
    )
    assert "hive exit 0" in r.stdout
    assert "internal error" not in r.stderr and "BrokenPipeError" not in r.stderr and "Traceback" not in r.stderr


def test_hive_discover_with_a_hostile_task_name_writes_nothing_outside_hive(repo):
    before = sorted(p.name for p in repo.root.parent.iterdir())
    r = repo.hive(
        "discover", "escape", env={"HIVE_TASK": "../../x:1", "HIVE_ATTEMPT": "1", "HIVE_ROOT": str(repo.root)}
    )
    assert r.returncode == 3 and "not a Hive task name" in r.stderr, r.stderr
    assert sorted(p.name for p in repo.root.parent.iterdir()) == before
    assert not (repo.root / ".hive" / "discovered").exists()


def test_a_bad_name_for_a_hive_path_is_a_user_error(repo):
    import pytest

    from hive.errors import HiveError
    from hive.store.paths import Paths

    with pytest.raises(HiveError):
        Paths(repo.root).discovered_dir("../../x")


def test_cleanup_leaves_hive_plan_sessions_alone(repo):
    from hive.adapters import tmux

    for session, stem in (("hive-plan-add-oauth", "p"), ("hive-w1-x-1-abcdef-a1", "t")):
        files = [repo.root.parent / f"{stem}.{suffix}" for suffix in ("log", "exit", "env")]
        tmux.new_session(session, repo.root, tmux.Program(["sleep", "60"], dict(os.environ), files[2]), *files[:2])
    r = repo.hive("cleanup")
    assert r.returncode == 0, r.stdout
    assert "hive-plan-add-oauth" in tmux.sessions()
    assert "hive-w1-x-1-abcdef-a1" not in tmux.sessions(), "a task session no task uses is closed"


def test_plan_cache_stamp_covers_every_module_and_survives_a_moved_file(tmp_path):
    from hive.plan.cache import code_stamp

    here = tmp_path / "pkg"
    (here / "sub").mkdir(parents=True)
    for name in ("names.py", "plan.py", "sub/graph.py"):
        (here / name).write_text("")
    stamp = code_stamp(here, "1.0")
    assert "names.py:" in stamp and "sub/graph.py:" in stamp
    (here / "names.py").unlink()
    assert "names.py:" not in code_stamp(here, "1.0")
