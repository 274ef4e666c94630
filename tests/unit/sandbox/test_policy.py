"""hive/sandbox/policy.py and bwrap.py: what an attempt's sandbox is made of, and when a run
refuses to start without one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hive.agent_clis.base import Reach
from hive.sandbox import bwrap, network, policy
from hive.settings.config import Config
from hive.store.paths import Paths

STATE = ("~/.mycli", "~/.absent")  # its CLI's state paths


def view_of(config: Config, attempt: policy.Attempt, state: tuple[str, ...] = STATE) -> bwrap.View:
    return policy.layout(policy.agent_rules(config, state, Reach(), {}), policy.attempt_box(attempt))[0]


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
    return policy.Attempt(Paths(root), "p", "1", 1, wt, ("python3", "agent.py"), gitfile, private)


def test_it_writes_its_own_things_and_hides_the_credentials(attempt: policy.Attempt):
    view = view_of(Config(), attempt)
    p, home = attempt.paths, Path.home()
    assert set(view.writable) == {
        attempt.worktree,
        p.signal_dir("p", "1", 1),
        p.questions_dir("p", "1"),
        p.notes_file("p", "1"),
        attempt.private_gitdir,
        home / ".mycli",
    }, "a state path that does not exist is not made up"
    assert all(path.exists() for path in view.writable), "bubblewrap binds only what exists"
    assert view.moved == ((p.found_dir("p", "1", 1), p.discovered_dir("p")),), "its discoveries: its own folder"
    assert view.files[0] == (attempt.gitfile, attempt.worktree / ".git")
    assert view.files[1][1] == network.INSIDE_DIR and not view.network, "allowlist: only its proxy"
    assert {home / ".ssh", home / ".netrc"} <= set(view.hidden)
    assert p.root in view.readable and home in view.readable, "under /tmp: bound back read-only"
    assert not any(a != b and a.is_relative_to(b) for a in view.readable for b in view.readable)


def test_writable_and_hide_come_from_the_config(attempt: policy.Attempt):
    (Path.home() / "cache").mkdir()
    config = dataclasses.replace(Config(), sandbox_writable=("~/cache",), sandbox_hide=("~/.mycli",))
    view = view_of(config, attempt)
    assert Path.home() / "cache" in view.writable
    assert view.hidden == (Path.home() / ".mycli",)


def test_checks_and_teardown_write_their_checkout_and_the_configs_writable(attempt: policy.Attempt):
    (Path.home() / "cache").mkdir()
    (Path.home() / "docker.sock").touch()
    config = dataclasses.replace(
        Config(), sandbox_writable=("~/cache", "~/absent", "~/docker.sock"), sandbox_hide=("~/.mycli", "~/docker.sock")
    )
    box = policy.Box(attempt.paths.root, ("bash",), (attempt.worktree,), "check", attempt.paths.hive / "refused")
    view = policy.layout(policy.rules(config), box)[0]
    assert view.writable == (attempt.worktree, Path.home() / "cache", Path.home() / "docker.sock")
    assert view.hidden == (Path.home() / ".mycli",), "what `writable` names is not hidden"


def test_checks_run_in_the_sandbox_only_when_the_run_is_sandboxed(
    attempt: policy.Attempt, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(bwrap, "unavailable", lambda: "")
    on, paths, wt = dataclasses.replace(Config(), sandbox_mode="on"), attempt.paths, attempt.worktree
    assert policy.check(on, paths, ("p", "1"), wt).prefix[-1] == "--"
    off = dataclasses.replace(Config(), sandbox_mode="off")
    assert policy.check(off, paths, ("p", "1"), wt) == policy.UNCONFINED
    monkeypatch.setattr(bwrap, "unavailable", lambda: "bubblewrap is not installed")
    assert policy.check(on, paths, ("p", "1"), wt) == policy.UNCONFINED, "preflight refused the run already"


def test_the_command_line_binds_in_order_and_hides_last(attempt: policy.Attempt):
    open_ = dataclasses.replace(Config(), sandbox_network="open")
    argv = bwrap.command(view_of(open_, attempt), ["python3", "agent.py"])
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


def test_an_agent_with_an_allowlist_reaches_its_clis_hosts_and_keeps_its_clis_variables(
    attempt: policy.Attempt, monkeypatch: pytest.MonkeyPatch
):
    for name in ("GITHUB_TOKEN", "AWS_PROFILE", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "DB_PASSWORD",
                 "ANTHROPIC_API_KEY", "MY_DEPLOY_KEY", "SSH_AUTH_SOCK", "JAVA_HOME", "NPM_TOKEN"):  # fmt: skip
        monkeypatch.setenv(name, "x")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9999")
    config = dataclasses.replace(Config(), sandbox_allow=("pypi.org",), sandbox_pass_env=("NPM_*",))
    reach = Reach(hosts=("api.anthropic.com",), env=("ANTHROPIC_*",))
    env = {"HIVE_TASK": "p:1", "DEPLOY_TOKEN": "from [agents.x] env"}
    c = policy.agent(policy.agent_rules(config, STATE, reach, env), attempt)
    assert c.beside[-4] == "beside", "an agent's proxy starts beside it"
    hosts = c.beside[-2].split(",")  # proxy.py beside SOCKET ALLOW REFUSED
    assert hosts == ["pypi.org", "api.anthropic.com", "127.0.0.1"]
    assert c.env["HTTPS_PROXY"] == c.env["HTTP_PROXY"] == f"http://127.0.0.1:{network.RELAY_PORT}"
    assert c.env["NO_PROXY"] == ""
    assert "--unshare-net" in c.prefix
    withheld = set(c.unset)
    assert {"GITHUB_TOKEN", "AWS_PROFILE", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "DB_PASSWORD",
            "MY_DEPLOY_KEY", "SSH_AUTH_SOCK"} <= withheld  # fmt: skip
    assert not {"ANTHROPIC_API_KEY", "JAVA_HOME", "NPM_TOKEN", "DEPLOY_TOKEN", "HIVE_TASK"} & withheld


def test_a_check_reaches_only_the_allowlist_and_gets_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9999")
    config = dataclasses.replace(Config(), sandbox_allow=("pypi.org",))
    c = policy.check(config, Paths(tmp_path), ("p", "1"), tmp_path)
    assert c.outside[-2:] == ("pypi.org", str(Paths(tmp_path).refused_file("p", "1"))), "its proxy is beside it"
    assert c.prefix[0] == "bwrap"
    assert "ANTHROPIC_API_KEY" in c.unset
    none = policy.check(dataclasses.replace(config, sandbox_network="none"), Paths(tmp_path), ("p", "1"), tmp_path)
    assert none.prefix[0] == "bwrap" and "--unshare-net" in none.prefix and not none.env and not none.outside
    open_ = policy.check(dataclasses.replace(config, sandbox_network="open"), Paths(tmp_path), ("p", "1"), tmp_path)
    assert "--unshare-net" not in open_.prefix


def test_a_run_refuses_or_warns_without_bubblewrap(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(bwrap, "unavailable", lambda: "bubblewrap is not installed")
    on = dataclasses.replace(Config(), sandbox_mode="on")
    auto = dataclasses.replace(Config(), sandbox_mode="auto")
    assert policy.preflight(on) == (
        ['[sandbox] mode = "on", but bubblewrap is not installed; agents would run with all your rights'],
        [],
    )
    assert policy.preflight(auto)[1] == [
        'warning: agents run without a sandbox: bubblewrap is not installed ([sandbox] mode = "auto")'
    ]
    assert policy.preflight(
        dataclasses.replace(Config(), sandbox_mode="off"),
    ) == ([], [])
    assert policy.preflight(
        Config(),
    ) == policy.preflight(auto), "auto by default"
    assert not policy.sandboxed(on)


def test_bubblewrap_works_on_this_machine():
    assert bwrap.unavailable() == "", "CI installs bubblewrap (.ci/run)"
