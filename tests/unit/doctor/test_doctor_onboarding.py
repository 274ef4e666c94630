"""Claude Code's first-run files (`onboarding` in hive/agent_clis/claude.py), as the doctor
looks them up by the binary's name: its TUI stops at a first-run prompt unless
~/.claude.json says onboarding is done, the bypass warning accepted, the API key
approved and the repo trusted. Headless profiles need none of it."""

from __future__ import annotations

import json

from doctor_helpers import context, onboarding_checks

from hive.checks import FAIL, OK

KEY = "sk-ant-test-0123456789abcdefghijklmnopqrstuvwxyz"


def state(root, key: str = KEY) -> dict:
    return {
        "hasCompletedOnboarding": True,
        "bypassPermissionsModeAccepted": True,
        "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
        "projects": {str(root): {"hasTrustDialogAccepted": True}},
    }


def check_with(tmp_path, data, **env):
    root = tmp_path / "repo"
    if data is not None:
        (tmp_path / ".claude.json").write_text(json.dumps(data))
    [check] = onboarding_checks(context("claude-interactive", root, tmp_path, **env), [root])
    return check


def test_complete_onboarding_passes(tmp_path):
    check = check_with(tmp_path, state(tmp_path / "repo"), ANTHROPIC_API_KEY=KEY)
    assert check.status == OK and str(tmp_path / "repo") in check.detail


def test_each_missing_item_is_named_and_the_key_is_never_shown(tmp_path):
    root = tmp_path / "repo"
    data = state(root)
    data["hasCompletedOnboarding"] = False
    del data["bypassPermissionsModeAccepted"]
    data["customApiKeyResponses"]["approved"] = ["someone-elses-key-end"]
    data["projects"] = {"/elsewhere": {"hasTrustDialogAccepted": True}}
    check = check_with(tmp_path, data, ANTHROPIC_API_KEY=KEY)
    assert check.status == FAIL
    for item in (
        "hasCompletedOnboarding",
        "bypassPermissionsModeAccepted",
        "customApiKeyResponses.approved for this ANTHROPIC_API_KEY",
        f'projects["{root}"].hasTrustDialogAccepted',
    ):
        assert item in check.detail
    assert KEY[-20:] not in json.dumps(check.to_json())
    assert f"run `claude` once in {root}" in check.fix


def test_a_trusted_parent_covers_the_repo_and_no_api_key_needs_no_approval(tmp_path):
    data = state(tmp_path / "repo")
    data["projects"] = {str(tmp_path): {"hasTrustDialogAccepted": True}}
    del data["customApiKeyResponses"]
    assert check_with(tmp_path, data).status == OK


def test_a_missing_or_broken_state_file_fails(tmp_path):
    missing = check_with(tmp_path, None)
    assert missing.status == FAIL and "~/.claude.json does not exist" in missing.detail
    (tmp_path / ".claude.json").write_text("{not json")
    [broken] = onboarding_checks(context("claude-interactive", tmp_path, tmp_path), [tmp_path])
    assert broken.status == FAIL and "cannot be read as JSON" in broken.detail


def test_headless_profiles_and_other_clis_have_no_onboarding_check(tmp_path):
    assert onboarding_checks(context("claude", tmp_path, tmp_path), [tmp_path]) == []
    assert onboarding_checks(context("codex", tmp_path, tmp_path), [tmp_path]) == []
