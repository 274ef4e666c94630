"""hive/doctor/agents.py: the agent's program on the agent's PATH, its version; and
Claude Code's refusal to skip permissions as root (hive/agent_clis/claude.py), which the
doctor and `doit` check for any profile that runs `claude`."""

from __future__ import annotations

import os
import shutil

from doctor_helpers import context, custom, preflight_checks, program

from hive.agent_clis.claude import root_check
from hive.checks import FAIL, OK
from hive.doctor import agents
from hive.doctor.agents import binary_check, locate


def test_a_binary_on_the_agents_path_passes_with_its_version(tmp_path):
    bin_dir = tmp_path / "bin"
    claude = program(bin_dir, "claude", 'echo "2.1.197 (Claude Code)"')
    check = binary_check(context("claude", tmp_path, tmp_path, str(bin_dir)), "plan auth tasks 1, 3")
    assert check.status == OK
    assert check.detail == f"{claude}, 2.1.197 (Claude Code) (used by plan auth tasks 1, 3)"


def test_a_missing_known_binary_fails_with_how_to_install_it(tmp_path):
    check = binary_check(context("codex", tmp_path, tmp_path, str(tmp_path / "empty")), "plan p task 1")
    assert check.status == FAIL
    assert check.detail == "`codex` is not on PATH (used by plan p task 1)"
    assert check.fix == "install it (`npm install -g @openai/codex`) or set [agents.codex] command in .hive/config.toml"


def test_the_agents_path_is_doits_unless_the_profile_sets_one(tmp_path):
    bin_dir = tmp_path / "bin"
    program(bin_dir, "bot")
    assert locate(context(custom("bot", "bot"), tmp_path, tmp_path, "/nowhere")) is None
    profile = custom("bot", "bot", env=(("PATH", str(bin_dir)),))
    assert locate(context(profile, tmp_path, tmp_path, "/nowhere")) == str(bin_dir / "bot")


def test_a_command_given_as_a_path_is_checked_as_a_file(tmp_path):
    tool = program(tmp_path / "tools", "bot")
    assert locate(context(custom("a", str(tool)), tmp_path, tmp_path)) == str(tool)
    relative = custom("r", "./tools/bot")  # relative to the worktree, a checkout of the repo
    assert locate(context(relative, tmp_path, tmp_path)) == str(tmp_path / "tools" / "bot")
    tool.chmod(0o644)
    check = binary_check(context(custom("a", str(tool)), tmp_path, tmp_path))
    assert check.status == FAIL and check.detail == f"`{tool}` does not exist or is not executable"
    assert check.fix == "install it or set [agents.a] command in .hive/config.toml"


def test_a_version_that_cannot_be_read_fails_a_known_cli(tmp_path):
    bin_dir = tmp_path / "bin"
    program(bin_dir, "gemini", "echo 'node: not found' >&2; exit 127")
    known = binary_check(context("gemini", tmp_path, tmp_path, str(bin_dir)))
    assert known.status == FAIL and "exited with 127: node: not found" in known.detail
    assert "npm install -g @google/gemini-cli" in known.fix


def test_a_program_hive_does_not_know_is_found_and_never_run(tmp_path):
    """A user's own agent script ran as `--version` and committed to main (issue 43)."""
    marker = tmp_path / "ran"
    bot = program(tmp_path / "bin", "bot", f"touch {marker}; exit 2")
    other = binary_check(context(custom("bot", "bot"), tmp_path, tmp_path, str(tmp_path / "bin")))
    assert other.status == OK and other.detail.startswith(f"{bot} (not run:")
    assert not marker.exists()


def test_a_known_clis_version_is_asked_outside_the_users_checkout(tmp_path):
    bin_dir = tmp_path / "bin"
    program(bin_dir, "codex", 'pwd > "$HOME/where"; echo codex-cli 0.5')
    home = tmp_path / "home"
    home.mkdir()
    check = binary_check(context("codex", tmp_path, tmp_path, str(bin_dir), HOME=str(home)))
    assert check.status == OK and "codex-cli 0.5" in check.detail
    ran_in = (home / "where").read_text().strip()
    assert ran_in != str(tmp_path) and not ran_in.startswith(str(tmp_path) + "/"), ran_in


def test_a_version_that_hangs_is_cut_short(tmp_path, monkeypatch):
    monkeypatch.setattr(agents, "VERSION_TIMEOUT", 0.3)
    bin_dir = tmp_path / "bin"
    program(bin_dir, "aider", f"exec {shutil.which('sleep')} 30")
    check = binary_check(context("aider", tmp_path, tmp_path, str(bin_dir)))
    assert check.status == FAIL and "timed out after 0.3s" in check.detail


def test_the_cheap_check_runs_no_program(tmp_path):
    marker = tmp_path / "ran"
    program(tmp_path / "bin", "claude", f"touch {marker}")
    check = binary_check(context("claude", tmp_path, tmp_path, str(tmp_path / "bin")), version=False)
    assert check.status == OK and not marker.exists()


def test_claude_as_root_fails_unless_is_sandbox_is_set_in_the_environment_or_the_profile(tmp_path):
    ctx = context("claude", tmp_path, tmp_path)
    check = root_check(ctx, euid=0)
    assert check is not None and check.status == FAIL
    assert "refuses --dangerously-skip-permissions as root unless IS_SANDBOX=1" in check.detail
    assert "IS_SANDBOX" in check.fix and "[agents.claude]" in check.fix
    sandboxed = root_check(context("claude", tmp_path, tmp_path, IS_SANDBOX="1"), euid=0)
    assert sandboxed is not None and sandboxed.status == OK and "(environment)" in sandboxed.detail
    profile = custom("mine", "/opt/bin/claude", "--dangerously-skip-permissions", env=(("IS_SANDBOX", "1"),))
    by_profile = root_check(context(profile, tmp_path, tmp_path), euid=0)
    assert by_profile is not None and by_profile.status == OK and "[agents.mine] env" in by_profile.detail
    user = root_check(ctx, euid=os.getuid() or 1000)
    assert user is not None and user.status == OK


def test_the_root_check_is_keyed_by_the_binary_and_needs_the_flag(tmp_path, monkeypatch):
    same_binary = custom("mine", "/usr/local/bin/claude", "--dangerously-skip-permissions", "{prompt}")
    check = root_check(context(same_binary, tmp_path, tmp_path), euid=0)
    assert check is not None and check.status == FAIL and check.name == "[mine] root"
    assert root_check(context(custom("safe", "claude", "{prompt}"), tmp_path, tmp_path), euid=0) is None
    assert root_check(context("codex", tmp_path, tmp_path), euid=0) is None
    # as the doctor and `doit` look it up: by the binary, for any profile that runs `claude`, and only those
    monkeypatch.setattr("hive.agent_clis.claude.os.geteuid", lambda: 0)
    [found] = preflight_checks(context(same_binary, tmp_path, tmp_path))
    assert found.status == FAIL and found.name == "[mine] root"
    assert preflight_checks(context(custom("safe", "claude", "{prompt}"), tmp_path, tmp_path)) == []
    other = custom("other", "codex", "--dangerously-skip-permissions", "{prompt}")
    assert preflight_checks(context(other, tmp_path, tmp_path)) == []
