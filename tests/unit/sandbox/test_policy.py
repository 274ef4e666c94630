"""hive/sandbox/policy.py and bwrap.py: what an attempt's sandbox is made of, and when a run
refuses to start without one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hive.sandbox import bwrap, policy
from hive.settings.config import Config
from hive.store.paths import Paths


@pytest.fixture
def attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> policy.Attempt:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x\n")
    (home / ".mycli").mkdir()
    monkeypatch.setenv("HOME", str(home))
    root = tmp_path / "repo"
    wt = root / "worktrees" / "w1-p-1-a1"
    wt.mkdir(parents=True)
    private = root / ".hive" / "gitdirs" / "p-1-a1"
    private.mkdir(parents=True)
    gitfile = private.with_name("p-1-a1.gitfile")
    gitfile.write_text(f"gitdir: {private}\n")
    argv, state = ("python3", "agent.py"), ("~/.mycli", "~/.absent")
    return policy.Attempt(Paths(root), "p", "1", 1, wt, argv, state, gitfile, private)


def test_it_writes_its_own_things_and_hides_the_credentials(attempt: policy.Attempt):
    view = policy.view(Config(), attempt)
    p, home = attempt.paths, Path.home()
    assert set(view.writable) == {
        attempt.worktree,
        p.signal_dir("p", "1", 1),
        p.questions_dir("p", "1"),
        p.discovered_dir("p"),
        p.notes_file("p", "1"),
        attempt.private_gitdir,
        home / ".mycli",
    }, "a state path that does not exist is not made up"
    assert all(path.exists() for path in view.writable), "bubblewrap binds only what exists"
    assert view.files == ((attempt.gitfile, attempt.worktree / ".git"),)
    assert {home / ".ssh", home / ".netrc"} <= set(view.hidden)
    assert p.root in view.readable and home in view.readable, "under /tmp: bound back read-only"
    assert not any(a != b and a.is_relative_to(b) for a in view.readable for b in view.readable)


def test_writable_and_hide_come_from_the_config(attempt: policy.Attempt):
    (Path.home() / "cache").mkdir()
    config = dataclasses.replace(Config(), sandbox_writable=("~/cache",), sandbox_hide=("~/.mycli",))
    view = policy.view(config, attempt)
    assert Path.home() / "cache" in view.writable
    assert view.hidden == (Path.home() / ".mycli",)


def test_checks_and_teardown_write_their_checkout_and_the_configs_writable(attempt: policy.Attempt):
    (Path.home() / "cache").mkdir()
    config = dataclasses.replace(Config(), sandbox_writable=("~/cache", "~/absent"), sandbox_hide=("~/.mycli",))
    view = policy.check_view(config, attempt.paths.root, attempt.worktree)
    assert view.writable == (attempt.worktree, Path.home() / "cache")
    assert view.hidden == (Path.home() / ".mycli",)


def test_checks_run_in_the_sandbox_only_when_the_run_is_sandboxed(
    attempt: policy.Attempt, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(bwrap, "unavailable", lambda: "")
    on, root, wt = dataclasses.replace(Config(), sandbox_mode="on"), attempt.paths.root, attempt.worktree
    assert policy.check_sandbox(on, root, wt, remote=False)[-1] == "--"
    assert policy.check_sandbox(on, root, wt, remote=True) == ()
    assert policy.check_sandbox(Config(), root, wt, remote=False) == ()


def test_the_command_line_binds_in_order_and_hides_last(attempt: policy.Attempt):
    argv = bwrap.command(policy.view(Config(), attempt), ["python3", "agent.py"])
    assert argv[:10] == ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    end = ["--setenv", "TMPDIR", "/tmp", "--unshare-pid", "--die-with-parent", "--", "python3", "agent.py"]
    assert argv[-8:] == end
    first_rw = argv.index("--bind")
    assert all(i < first_rw for i, a in enumerate(argv) if a == "--ro-bind" and argv[i + 1] != "/dev/null"
               and argv[i + 1] not in (str(attempt.gitfile), "/"))  # fmt: skip
    ssh = argv.index(str(Path.home() / ".ssh"))
    assert argv[ssh - 1] == "--tmpfs" and ssh > first_rw
    netrc = argv.index(str(Path.home() / ".netrc"))
    assert argv[netrc - 2 : netrc] == ["--ro-bind", "/dev/null"]


def test_a_run_refuses_or_warns_without_bubblewrap(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(bwrap, "unavailable", lambda: "bubblewrap is not installed")
    on = dataclasses.replace(Config(), sandbox_mode="on")
    auto = dataclasses.replace(Config(), sandbox_mode="auto")
    assert policy.preflight(on, remote=False) == (
        ['[sandbox] mode = "on", but bubblewrap is not installed; agents would run with all your rights'],
        [],
    )
    assert policy.preflight(auto, remote=False)[1] == [
        'warning: agents run without a sandbox: bubblewrap is not installed ([sandbox] mode = "auto")'
    ]
    assert policy.preflight(Config(), remote=False) == ([], [])
    assert not policy.sandboxed(on, remote=False)


def test_the_ray_executor_is_not_sandboxed_yet(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(bwrap, "unavailable", lambda: "")
    on = dataclasses.replace(Config(), sandbox_mode="on")
    assert "the Ray executor does not sandbox its agents yet" in policy.preflight(on, remote=True)[0][0]
    assert policy.sandboxed(on, remote=False) and not policy.sandboxed(on, remote=True)


def test_bubblewrap_works_on_this_machine():
    assert bwrap.unavailable() == "", "CI installs bubblewrap (.ci/run)"
