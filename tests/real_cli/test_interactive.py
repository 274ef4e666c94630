"""The interactive Claude profile (`claude-interactive`, which `hive plan` uses) with the
real CLI in tmux: without its onboarding answers it stops at a prompt, and Hive fails
the task within the grace period naming that prompt instead of hanging for the timeout."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from cli_setup import cli_env
from clis import cli_bin_dir
from conftest import API_KEY

CONFIG = """\
[agent]
default = "claude-interactive"

[execution]
spawn_grace_period = "20s"
task_timeout = "10m"
max_attempts = 1

[merge]
main_branch = "main"
"""

PLAN = """
### Task 1: Login page
model> write: login.html :: <h1>Please log in</h1>
model> run: hive done
"""


def test_without_onboarding_it_fails_at_once_with_the_clis_own_words(repo, cli_paths, model_server):
    (repo.root / ".hive" / "config.toml").write_text(CONFIG)
    repo.write_plan("web", PLAN)
    env = cli_env("claude", model_server, Path(os.environ["HOME"]))
    env["PATH"] = f"{os.environ['PATH']}{os.pathsep}{cli_bin_dir('claude')}"
    started = time.monotonic()
    r = repo.doit(env=env, timeout=120)
    took = time.monotonic() - started
    st = repo.state("web", "1")
    assert r.returncode == 1, r.stderr
    assert st["state"] == "failed", st
    assert took < 30, f"took {took:.0f}s"
    # the onboarding check ignores ANTHROPIC_BASE_URL; `hive doctor` says how to complete it
    assert st["reason"].startswith("agent_spawn_failed: the agent exited (status 1)"), st
    assert "api.anthropic.com" in st["reason"] or "Anthropic" in st["reason"], st


def onboarding(root: Path, stage: int) -> dict:
    """~/.claude.json answering the first `stage` of the TUI's first-run questions."""
    data: dict = {"hasCompletedOnboarding": True, "theme": "dark"}
    if stage >= 1:
        data["projects"] = {str(root): {"hasTrustDialogAccepted": True}}
    if stage >= 2:
        data["customApiKeyResponses"] = {"approved": [API_KEY[-20:]], "rejected": []}
    if stage >= 3:
        data["bypassPermissionsModeAccepted"] = True
    return data


@pytest.mark.parametrize(
    ("stage", "prompt"),
    [(0, "trust (the files in )?this folder"), (1, "Do you want to use this API key"), (2, "Bypass Permissions mode")],
)
def test_each_first_run_prompt_is_named_within_the_grace_period(repo, cli_paths, model_server, stage, prompt):
    (repo.root / ".hive" / "config.toml").write_text(CONFIG)
    repo.write_plan("web", PLAN)
    home = Path(os.environ["HOME"])
    (home / ".claude.json").write_text(json.dumps(onboarding(repo.root, stage)))
    env = cli_env("claude", model_server, home)
    env["PATH"] = f"{os.environ['PATH']}{os.pathsep}{cli_bin_dir('claude')}"
    started = time.monotonic()
    r = repo.doit(env=env, timeout=120)
    took = time.monotonic() - started
    st = repo.state("web", "1")
    assert r.returncode == 1 and st["state"] == "failed", st
    assert st["reason"] == f"agent_spawn_failed: the agent is waiting at a prompt ({prompt!r}) instead of working"
    assert took < 30, f"took {took:.0f}s"


def test_with_every_answer_given_the_interactive_profile_merges(repo, cli_paths, model_server):
    (repo.root / ".hive" / "config.toml").write_text(CONFIG)
    repo.write_plan("web", PLAN)
    home = Path(os.environ["HOME"])
    (home / ".claude.json").write_text(json.dumps(onboarding(repo.root, 3)))
    env = cli_env("claude", model_server, home)
    env["PATH"] = f"{os.environ['PATH']}{os.pathsep}{cli_bin_dir('claude')}"
    r = repo.doit(env=env, timeout=120)
    assert r.returncode == 0, r.stderr + repo.hive("logs", "web:1").stdout
    assert "Please log in" in (repo.file_on_main("login.html") or "")


def test_hive_plan_without_a_terminal_names_the_prompt_instead_of_waiting_on_it(repo, cli_paths, model_server):
    (repo.root / ".hive" / "config.toml").write_text(CONFIG)  # the planner is claude-interactive by default
    home = Path(os.environ["HOME"])
    (home / ".claude.json").write_text(json.dumps(onboarding(repo.root, 1)))
    env = cli_env("claude", model_server, home)
    env["PATH"] = f"{os.environ['PATH']}{os.pathsep}{cli_bin_dir('claude')}"
    started = time.monotonic()
    r = repo.hive("plan", "a login page", env=env, timeout=60)
    assert r.returncode != 0
    assert "waiting at a prompt ('Do you want to use this API key')" in r.stderr, r.stderr
    assert time.monotonic() - started < 30
