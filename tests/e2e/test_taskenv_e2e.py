"""Issue 24, the task's environment, through real `doit` runs with the fake agent: every command
run for a task (its agent, its Verify, `[worktrees] teardown`) sees the same ports and Compose
project, and the teardown runs once in its checkout just before Hive removes it — its failure
only a warning."""

from __future__ import annotations

from pathlib import Path

from hive.engine.taskenv import ports
from hive.store import names

# Verify: the checks see what the agent recorded (the same values, from one place)
SAME_AS_THE_AGENT = (
    'test -n "$HIVE_PORT" && grep -qxF "HIVE_PORT=$HIVE_PORT" env.txt && grep -qxF "HIVE_PORTS=$HIVE_PORTS" env.txt'
    ' && grep -qxF "COMPOSE_PROJECT_NAME=$COMPOSE_PROJECT_NAME" env.txt'
)


def with_teardown(repo, marker: Path, fail_for: str = "") -> None:
    """`[worktrees] teardown` appends what it saw to `marker` (outside every checkout, in a folder
    its sandbox may write: `[sandbox] writable`): the task's variables, where it ran and the
    files there; it fails for task `fail_for`."""
    marker.parent.mkdir(exist_ok=True)
    script = marker.parent / "teardown.sh"
    script.write_text(
        'echo "$HIVE_TASK|$HIVE_ATTEMPT|$HIVE_PORT|$HIVE_PORTS|$COMPOSE_PROJECT_NAME|$PWD|$(ls | tr "\\n" " ")"'
        f" >> {marker}\n"
        f'if [ "$HIVE_TASK" = "{fail_for}" ]; then echo "no such service: db" >&2; exit 3; fi\n'
    )
    repo.configure(extra=f'\n[worktrees]\nteardown = "bash {script}"\n', writable=(f"{marker.parent}/",))


def test_a_tasks_agent_checks_and_teardown_share_its_ports_and_compose_project(repo, isolated):
    marker = isolated / "teardowns" / "log"
    with_teardown(repo, marker, fail_for="e:2")
    repo.write_plan(
        "e",
        f"""
    ### Task 1: Record its environment
    **Verify:** {SAME_AS_THE_AGENT}
    fake: write-env env.txt HIVE_PORT HIVE_PORTS COMPOSE_PROJECT_NAME
    fake: commit record the environment
    fake: signal done

    ### Task 2: Its teardown fails, its first attempt's too
    **Depends on:** 1
    fake@1: crash
    fake: write two.txt two
    fake: commit two
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    block, project = " ".join(map(str, ports(1))), names.compose_project("e", "1")
    assert repo.file_on_main("env.txt") == f"HIVE_PORT=41010\nHIVE_PORTS={block}\nCOMPOSE_PROJECT_NAME={project}\n"
    one, two = repo.state("e", "1")["worktree"], repo.state("e", "2")["worktree"]
    crashed = two.replace("-a2", "-a1")
    # once per checkout removed (still there: merged, or retired for the next attempt), with its variables
    assert marker.read_text().splitlines() == [
        f"e:1|1|41010|{block}|{project}|{one}|README.md env.txt ",
        f"e:2|1|41010|{block}|{names.compose_project('e', '2')}|{crashed}|README.md env.txt ",
        f"e:2|2|41010|{block}|{names.compose_project('e', '2')}|{two}|README.md env.txt two.txt ",
    ]
    assert r.stdout.count("e:2: warning: [worktrees] teardown failed (exit 3)") == 2, r.stdout
    assert "no such service: db" in r.stdout
    assert repo.state("e", "2")["state"] == "done", "a failed teardown never fails its task"
    assert not Path(one).exists() and not Path(two).exists() and repo.worktrees() == []


def test_hive_cleanup_tears_down_the_checkout_it_removes_and_only_that(repo, isolated):
    marker = isolated / "teardowns" / "log"
    with_teardown(repo, marker)
    repo.write_plan(
        "b",
        """
    ### Task 1: Too big
    fake: write started.txt half of it
    fake: signal too-big "it is two tasks"
    """,
    )
    r = repo.doit()
    assert repo.state("b", "1")["state"] == "too_big", r.stderr
    wt = Path(repo.state("b", "1")["worktree"])
    assert wt.exists() and not marker.exists(), "a checkout Hive keeps (uncommitted work) is not torn down"
    r = repo.hive("cleanup")
    assert r.returncode == 0 and wt.exists() and not marker.exists(), r.stdout
    r = repo.hive("cleanup", "--force")
    assert r.returncode == 0, r.stderr
    assert not wt.exists()
    block, project = " ".join(map(str, ports(1))), names.compose_project("b", "1")
    assert marker.read_text() == f"b:1|1|41010|{block}|{project}|{wt}|AGENTS.md README.md started.txt \n"
