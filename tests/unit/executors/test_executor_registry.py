"""hive/executors: the registry keyed by `[executor] kind`, and the tmux executor meeting the protocol."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import pytest

from hive.errors import HiveError
from hive.executors import EXECUTORS, Agent, AgentRef, Executor, executor
from hive.project import load_config


def _methods(protocol: type) -> list[str]:
    return sorted(
        name for name, value in vars(protocol).items() if inspect.isfunction(value) and not name.startswith("_")
    )


PROTOCOL_METHODS, AGENT_METHODS = _methods(Executor), _methods(Agent)


def test_the_protocol_is_narrow_and_each_agent_is_a_handle():
    """Issue 22: everything about one agent goes through the handle `start` returns (or
    `agent(ref)` finds again); the executor itself only starts, finds and lists agents."""
    assert PROTOCOL_METHODS == [
        "agent", "environment", "locate", "names", "on_hosts", "shutdown", "start", "tidy", "worktree_base"
    ]  # fmt: skip
    assert {"alive", "screen", "stop", "close", "attach_argv", "nap", "gone", "output"} <= set(AGENT_METHODS)


@pytest.mark.parametrize("kind", sorted(EXECUTORS))
def test_every_registered_executor_and_its_agents_implement_the_protocol(kind: str, tmp_path: Path):
    made = executor(kind)
    assert made.kind == kind
    handle = made.agent(AgentRef(str(tmp_path), "p:1", 1, "hive-w1-p-1-abc-a1", 7))
    assert handle.ref.token == 7
    for protocol, implementation, names in ((Executor, made, PROTOCOL_METHODS), (Agent, handle, AGENT_METHODS)):
        for name in names:
            method = getattr(implementation, name, None)
            assert callable(method), f"{kind}: {type(implementation).__name__} has no {name}()"
            wanted = list(inspect.signature(getattr(protocol, name)).parameters)[1:]
            assert list(inspect.signature(method).parameters) == wanted, name


def test_tmux_is_the_default_and_one_instance_per_process():
    assert executor() is executor("tmux")
    assert type(executor()).__name__ == "TmuxExecutor"


def test_the_tmux_executor_keeps_worktrees_under_the_configured_folder(tmp_path: Path):
    assert executor("tmux").worktree_base(tmp_path, "worktrees") == tmp_path / "worktrees"


def write_config(tmp_path: Path, toml: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(textwrap.dedent(toml).lstrip("\n"))
    return path


def test_config_picks_a_known_executor(tmp_path: Path):
    assert load_config(write_config(tmp_path, '[executor]\nkind = "tmux"\n')).executor == "tmux"
    assert load_config(tmp_path / "missing.toml").executor == "tmux"


@pytest.mark.parametrize("value", ['"nope"', '"TMUX"', "3", '["tmux"]', "{x = 1}"])
def test_config_with_an_unknown_executor_lists_the_known_kinds(tmp_path: Path, value: str):
    path = write_config(tmp_path, f"[executor]\nkind = {value}\n")
    with pytest.raises(HiveError) as err:
        load_config(path)
    assert len(err.value.problems) == 1
    problem = err.value.problems[0]
    assert str(path) in problem and "executor.kind" in problem and "is not an executor" in problem
    assert "known: " + ", ".join(sorted(EXECUTORS)) in problem


def test_config_with_an_unknown_executor_key_names_it(tmp_path: Path):
    with pytest.raises(HiveError, match=r"unknown key executor\.host; known: kind"):
        load_config(write_config(tmp_path, '[executor]\nhost = "x"\n'))


def test_the_ray_executors_settings_load_with_defaults_and_the_ray_executor_takes_them(tmp_path: Path):
    defaults = load_config(write_config(tmp_path, '[executor]\nkind = "ray"\n'))
    assert defaults.executor_options == {"address": "auto", "resource": "hive_agent", "workdir": "~/.hive-node"}
    toml = '[executor]\nkind = "ray"\naddress = "10.0.0.5:6379"\nresource = "gpu_agent"\nworkdir = "/srv/hive"\n'
    cfg = load_config(write_config(tmp_path, toml))
    made = executor("ray", cfg, tmp_path)
    cluster = made.cluster  # type: ignore[attr-defined]
    assert (cluster.address, cluster.resource, cluster.workdir) == ("10.0.0.5:6379", "gpu_agent", "/srv/hive")
    assert made.capabilities.remote_checkout and not executor("tmux").capabilities.remote_checkout
    assert made.capabilities.threads_only and executor("tmux").capabilities.local_tmux
    assert made.worktree_base(tmp_path, "worktrees") == tmp_path / "worktrees"  # the controller's mirrors


@pytest.mark.parametrize("key", ["address", "resource", "workdir"])
def test_an_empty_ray_setting_is_an_error_naming_its_key(tmp_path: Path, key: str):
    path = write_config(tmp_path, f'[executor]\nkind = "ray"\n{key} = "  "\n')
    with pytest.raises(HiveError) as err:
        load_config(path)
    assert err.value.problems == [f"{path}: executor.{key} = '  ' must be a non-empty string"]
