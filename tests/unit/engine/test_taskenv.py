"""hive/engine/taskenv.py: the task's variables, the same for every command run for it, and
`[worktrees] teardown` run in a real git worktree just before Hive removes it — once, only
when it goes, its failure a warning that never keeps the checkout."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hive.adapters import worktrees
from hive.engine import taskenv
from hive.settings.config import Config
from hive.store import names

TEARDOWN = 'echo "$HIVE_TASK|$HIVE_ATTEMPT|$HIVE_PORT|$HIVE_PORTS|$COMPOSE_PROJECT_NAME|$HIVE_WORKTREE|$PWD" >> {log}'


def test_a_workers_block_is_ten_ports_and_blocks_never_overlap():
    assert list(taskenv.ports(1)) == list(range(41010, 41020))
    assert all(set(taskenv.ports(n)).isdisjoint(taskenv.ports(n + 1)) for n in range(1, 64))


def test_the_variables_name_the_task_its_ports_and_its_compose_project(tmp_path: Path):
    env = taskenv.variables("auth", "2.1", tmp_path, 2)
    assert env == {
        "HIVE_TASK": "auth:2.1",
        "HIVE_ROOT": str(tmp_path),
        "HIVE_PORT": "41020",
        "HIVE_PORTS": "41020 41021 41022 41023 41024 41025 41026 41027 41028 41029",
        "COMPOSE_PROJECT_NAME": names.compose_project("auth", "2.1"),
    }


def _checkout(repo: Path, worker: int = 3, attempt: int = 2, task: tuple[str, str] = ("p", "1")) -> Path:
    wt = repo.parent / "worktrees" / names.worktree_dir(names.worker_id(worker), *task, attempt)
    worktrees.create(repo, wt, names.branch(*task, attempt), "main")
    return wt


def _teardown(repo: Path, command: str, **config: object) -> tuple[taskenv.Teardown, list[str]]:
    said: list[str] = []
    # unsandboxed unless a test asks (the log it writes lies outside the checkout)
    config = {"sandbox_mode": "off", **config}
    cfg = dataclasses.replace(Config(), worktree_teardown=command, **config)  # type: ignore[arg-type]
    down = taskenv.teardown(cfg, repo, "p", "1", said.append)
    assert down is not None
    return down, said


def test_no_teardown_is_made_when_none_is_configured(git_repo: Path):
    assert taskenv.teardown(Config(), git_repo, "p", "1", print) is None


def test_it_runs_once_in_the_checkout_with_the_tasks_variables_before_it_is_removed(git_repo: Path):
    log = git_repo.parent / "teardowns.log"
    wt = _checkout(git_repo)
    down, said = _teardown(git_repo, TEARDOWN.format(log=log) + " && test -f README.md")
    assert worktrees.remove_if_clean(git_repo, wt, down) == ""
    env = taskenv.variables("p", "1", git_repo, 3)
    ports, project = env["HIVE_PORTS"], env["COMPOSE_PROJECT_NAME"]
    assert log.read_text() == f"p:1|2|41030|{ports}|{project}|{wt}|{wt}\n"
    assert said == [] and not wt.exists()


def test_a_failing_teardown_is_a_warning_and_the_checkout_goes_all_the_same(git_repo: Path):
    wt = _checkout(git_repo)
    down, said = _teardown(git_repo, "echo 'service db: no such container' >&2; exit 7")
    assert worktrees.remove_if_clean(git_repo, wt, down) == ""
    assert not wt.exists()
    assert said == [f"p:1: warning: [worktrees] teardown failed (exit 7) in {wt}; removing it all the same:\n"
                    "service db: no such container"]  # fmt: skip


def test_a_teardown_that_hangs_is_stopped_at_its_timeout(git_repo: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(taskenv, "TEARDOWN_TIMEOUT", 0.2)
    wt = _checkout(git_repo)
    down, said = _teardown(git_repo, "sleep 30")
    assert worktrees.remove_if_clean(git_repo, wt, down) == ""
    assert not wt.exists()
    assert len(said) == 1 and said[0].startswith("p:1: warning: [worktrees] teardown failed (exit 124)"), said
    assert "timed out after 0.2s" in said[0]


def test_a_checkout_hive_keeps_is_not_torn_down(git_repo: Path):
    log = git_repo.parent / "teardowns.log"
    wt = _checkout(git_repo)
    (wt / "work.txt").write_text("not committed\n")
    down, said = _teardown(git_repo, TEARDOWN.format(log=log))
    assert worktrees.remove_if_clean(git_repo, wt, down).startswith(f"kept {wt}")
    assert not log.exists() and said == []


def test_a_checkout_not_made_for_the_task_is_removed_without_its_teardown(git_repo: Path):
    log = git_repo.parent / "teardowns.log"
    wt = _checkout(git_repo, task=("p", "2"))  # whose ports would it have stopped?
    down, said = _teardown(git_repo, TEARDOWN.format(log=log))
    assert worktrees.remove_any(git_repo, wt, down) == ""
    assert not log.exists() and not wt.exists()
    assert said == [f"p:1: warning: [worktrees] teardown not run in {wt}: Hive did not make it for p:1"]


def test_in_a_sandboxed_run_it_writes_only_its_checkout_and_sandbox_writable(git_repo: Path, isolated: Path):
    allowed = isolated / "services"
    allowed.mkdir()
    wt = _checkout(git_repo)
    command = (
        f"touch stopped.txt {allowed}/stopped.txt && "
        f"if touch {git_repo}/escaped.txt; then exit 1; fi; echo 'the repository is read-only here' >&2; exit 5"
    )
    down, said = _teardown(git_repo, command, sandbox_mode="on", sandbox_writable=(str(allowed),))
    down(wt)
    assert (wt / "stopped.txt").exists() and (allowed / "stopped.txt").exists()
    assert not (git_repo / "escaped.txt").exists()
    assert len(said) == 1 and "(exit 5)" in said[0] and "the repository is read-only here" in said[0], said
