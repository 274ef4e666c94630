"""Where each agent CLI's key or login is (its `credentials` in hive/agent_clis/<cli>.py),
as the doctor looks it up: keyed by the binary's name, shown by source only — a secret's
value never appears."""

from __future__ import annotations

import json

import pytest
from doctor_helpers import context, credential_checks, custom

from hive.checks import FAIL, OK

SECRET = "sk-test-0123456789abcdefghijklmnopqrstuvwxyz"


def only(checks):
    [check] = checks
    return check


def text(checks) -> str:
    return json.dumps([c.to_json() for c in checks])


def write(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


@pytest.mark.parametrize("var", ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"])
def test_claude_key_in_the_environment_is_named_never_shown(tmp_path, var):
    checks = credential_checks(context("claude", tmp_path, tmp_path, **{var: SECRET}))
    assert only(checks).status == OK and only(checks).detail == f"{var} is set (environment)"
    assert SECRET not in text(checks) and SECRET[-20:] not in text(checks)


def test_claude_login_files(tmp_path):
    ctx = context("claude", tmp_path, tmp_path)
    missing = only(credential_checks(ctx))
    assert missing.status == FAIL and "~/.claude/.credentials.json" in missing.detail
    assert "/login" in missing.fix and "ANTHROPIC_API_KEY" in missing.fix
    write(tmp_path / ".claude.json", {"oauthAccount": {"emailAddress": "me@example.com"}})
    found = only(credential_checks(ctx))
    assert found.status == OK and found.detail == "logged in (oauthAccount in ~/.claude.json)"
    assert "me@example.com" not in found.detail
    write(tmp_path / ".claude" / ".credentials.json", {"claudeAiOauth": {"accessToken": SECRET}})
    assert only(credential_checks(ctx)).detail == "logged in (~/.claude/.credentials.json)"


def test_an_empty_key_is_no_key(tmp_path):
    assert only(credential_checks(context("claude", tmp_path, tmp_path, ANTHROPIC_API_KEY=" "))).status == FAIL


def test_a_key_in_the_profiles_env_counts_and_says_so(tmp_path):
    profile = custom("mine", "claude", env=(("ANTHROPIC_API_KEY", SECRET),))
    check = only(credential_checks(context(profile, tmp_path, tmp_path)))
    assert check.status == OK and check.detail == "ANTHROPIC_API_KEY is set ([agents.mine] env)"


def test_credentials_are_keyed_by_the_binary_name_not_the_profile(tmp_path):
    same_cli = custom("fast-codex", "/opt/codex/bin/codex", "exec", "{prompt}")
    check = only(credential_checks(context(same_cli, tmp_path, tmp_path)))
    assert check.name == "[fast-codex] credentials" and check.status == FAIL
    assert credential_checks(context(custom("bot", "python3", "bot.py"), tmp_path, tmp_path)) == []


def test_codex_sources(tmp_path):
    assert only(credential_checks(context("codex", tmp_path, tmp_path, OPENAI_API_KEY=SECRET))).status == OK
    missing = only(credential_checks(context("codex", tmp_path, tmp_path)))
    assert missing.status == FAIL and "codex login" in missing.fix
    write(tmp_path / ".codex" / "auth.json", {"OPENAI_API_KEY": SECRET})
    found = only(credential_checks(context("codex", tmp_path, tmp_path)))
    assert found.status == OK and found.detail == "logged in (~/.codex/auth.json)" and SECRET not in text([found])


def test_codex_provider_in_codex_home_needs_its_env_key(tmp_path):
    codex_home = tmp_path / "ch"
    write(
        codex_home / "config.toml",
        'model_provider = "mock"\n[model_providers.mock]\nbase_url = "http://127.0.0.1:9/v1"\n'
        'env_key = "MOCK_API_KEY"\n',
    )
    unset = only(credential_checks(context("codex", tmp_path, tmp_path, CODEX_HOME=str(codex_home))))
    assert unset.status == FAIL and "MOCK_API_KEY, which is not set" in unset.detail
    assert unset.fix.startswith("export MOCK_API_KEY")
    ctx = context("codex", tmp_path, tmp_path, CODEX_HOME=str(codex_home), MOCK_API_KEY=SECRET)
    check = only(credential_checks(ctx))
    assert check.status == OK and "model_provider 'mock'" in check.detail and "MOCK_API_KEY is set" in check.detail


def test_codex_config_that_is_not_toml_is_reported(tmp_path):
    write(tmp_path / ".codex" / "config.toml", "model_provider = \n")
    check = only(credential_checks(context("codex", tmp_path, tmp_path)))
    assert check.status == FAIL and "cannot be read as TOML" in check.detail


def test_gemini_needs_credentials_and_a_selected_auth_type(tmp_path):
    checks = credential_checks(context("gemini", tmp_path, tmp_path, GEMINI_API_KEY=SECRET))
    creds, auth = checks
    assert creds.status == OK and creds.detail == "GEMINI_API_KEY is set (environment)"
    assert auth.status == FAIL and "exits 41" in auth.detail and '"selectedType":"gemini-api-key"' in auth.fix
    write(tmp_path / ".gemini" / "settings.json", {"security": {"auth": {"selectedType": "gemini-api-key"}}})
    creds, auth = credential_checks(context("gemini", tmp_path, tmp_path, GEMINI_API_KEY=SECRET))
    assert auth.status == OK and auth.detail == "'gemini-api-key' selected in ~/.gemini/settings.json"
    assert SECRET not in text([creds, auth])


def test_gemini_auth_type_without_what_it_needs_fails(tmp_path):
    write(tmp_path / ".gemini" / "settings.json", {"security": {"auth": {"selectedType": "oauth-personal"}}})
    creds, auth = credential_checks(context("gemini", tmp_path, tmp_path))
    assert creds.status == FAIL and "GEMINI_API_KEY" in creds.fix
    assert auth.status == FAIL and "oauth_creds.json does not exist" in auth.detail
    write(tmp_path / ".gemini" / "oauth_creds.json", {"refresh_token": SECRET})
    creds, auth = credential_checks(context("gemini", tmp_path, tmp_path))
    assert creds.status == OK and auth.status == OK


def test_gemini_workspace_settings_win(tmp_path):
    repo = tmp_path / "repo"
    write(repo / ".gemini" / "settings.json", {"selectedAuthType": "vertex-ai"})  # the older key
    _, auth = credential_checks(context("gemini", repo, tmp_path, GOOGLE_GENAI_USE_VERTEXAI="true"))
    assert auth.status == OK and "'vertex-ai' selected in" in auth.detail


def test_aider_takes_any_provider_key_or_its_config_file(tmp_path):
    assert only(credential_checks(context("aider", tmp_path, tmp_path, DEEPSEEK_API_KEY=SECRET))).status == OK
    missing = only(credential_checks(context("aider", tmp_path, tmp_path)))
    assert missing.status == FAIL and "OPENROUTER_API_KEY" in missing.detail
    repo = tmp_path / "repo"
    write(repo / ".aider.conf.yml", "model: x\n")
    found = only(credential_checks(context("aider", repo, tmp_path)))
    assert found.status == OK and ".aider.conf.yml exists" in found.detail
