"""hive/doctor/diagnose.py: the whole check-up on a real repository; a bad config or
plan is one failed check, not a traceback, and the rest is still checked."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hive.checks import FAIL, OK, WARN
from hive.doctor.diagnose import diagnose

CONFIG = f"""
[agent]
default = "bot"

[agents.bot]
command = ["{sys.executable}", "bot.py", "{{context_file}}"]
"""


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "repo"
    (root / ".hive").mkdir(parents=True)
    (root / "plans").mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "--allow-empty", "-m", "first"], check=True)
    (root / ".hive" / "config.toml").write_text(CONFIG)
    return root


def by_name(checks):
    return {c.name: c for c in checks}


def test_without_an_approved_plan_the_default_profile_is_checked(root):
    checks = by_name(diagnose(root))
    assert checks["agents"].status == OK and "default profile 'bot'" in checks["agents"].detail
    assert checks["[bot] binary"].status == OK and "Python" in checks["[bot] binary"].detail
    assert not [c for c in checks.values() if c.status == FAIL]


def test_a_default_profile_no_task_uses_only_warns(root):
    """A repository whose plans are scripts needs no agent's login (issue 43)."""
    (root / ".hive" / "config.toml").write_text(CONFIG.replace('default = "bot"', 'default = "codex"'))
    plan = "---\nstatus: approved\n---\n# S\n\n### Task 1: One\n**Type:** script\n```sh\ntrue\n```\n"
    (root / "plans" / "s.md").write_text(plan)
    checks = diagnose(root)
    assert not [c for c in checks if c.status == FAIL], checks
    codex = [c for c in checks if c.profile == "codex" and c.status == WARN]
    assert codex and all(c.detail.endswith("; no task uses this profile yet") for c in codex), checks


def test_profiles_of_approved_plans_are_checked_with_the_tasks_using_them(root):
    (root / "plans" / "p.md").write_text("---\nstatus: approved\n---\n# P\n\n### Task 1: One\nwork\n")
    checks = by_name(diagnose(root))
    assert "agents" not in checks
    assert checks["[bot] binary"].detail.endswith("(used by plan p task 1)")


def test_a_bad_config_is_a_failed_check_and_the_tools_are_still_checked(root):
    (root / ".hive" / "config.toml").write_text("[merge]\nmain_branch = 3\n")
    checks = diagnose(root)
    assert checks[0].name == "hive" and checks[0].detail.startswith("hive-agents ")  # which build: its commit
    assert checks[1].name == "config" and checks[1].status == FAIL and "main_branch" in checks[1].detail
    assert [c.name for c in checks[2:]] == ["git", "tmux"]


def test_a_bad_approved_plan_is_a_failed_check_and_the_rest_goes_on(root):
    (root / "plans" / "p.md").write_text("---\nstatus: approved\n---\n# P\n\n### Task 1: One\n**Depends on:** 9\n")
    checks = by_name(diagnose(root))
    assert checks["plans"].status == FAIL and "unknown task '9'" in checks["plans"].detail
    assert checks["git identity"].status == OK and checks["[bot] binary"].status == OK
