"""Are an agent CLI's credentials there? Keyed by the binary's name (`claude`,
`codex`, `gemini`, `aider`), so any profile that runs one gets its checks. Only the
*source* is ever shown — a variable's name, a file's path — never a value."""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

from hive.agent_clis.context import AgentContext, first_set, load_json, table
from hive.checks import Check, fail, ok, shown, warn

CLAUDE_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
GEMINI_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI")
AIDER_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY")


def claude_dir(ctx: AgentContext) -> Path:
    return Path(ctx.get("CLAUDE_CONFIG_DIR")) if ctx.get("CLAUDE_CONFIG_DIR") else ctx.home / ".claude"


def claude_json(ctx: AgentContext) -> Path:
    """Claude Code's global state file: ~/.claude.json, or inside $CLAUDE_CONFIG_DIR when set."""
    return claude_dir(ctx) / ".claude.json" if ctx.get("CLAUDE_CONFIG_DIR") else ctx.home / ".claude.json"


def claude(ctx: AgentContext) -> list[Check]:
    name, profile = f"[{ctx.profile.name}] credentials", ctx.profile.name
    if var := first_set(ctx, CLAUDE_VARS):
        return [ok(name, f"{var} is set ({ctx.where(var)})", profile)]
    login = claude_dir(ctx) / ".credentials.json"
    if login.is_file():
        return [ok(name, f"logged in ({shown(login, ctx.home)})", profile)]
    state = claude_json(ctx)
    if load_json(state)[0].get("oauthAccount"):
        return [ok(name, f"logged in (oauthAccount in {shown(state, ctx.home)})", profile)]
    settings = claude_dir(ctx) / "settings.json"
    if load_json(settings)[0].get("apiKeyHelper"):
        return [ok(name, f"apiKeyHelper in {shown(settings, ctx.home)}", profile)]
    detail = (
        f"none found: {', '.join(CLAUDE_VARS)} not set, no {shown(login, ctx.home)}, "
        f"no oauthAccount in {shown(state, ctx.home)}"
    )
    fix = f"log in once with `claude` (/login), or export ANTHROPIC_API_KEY (or set it in {ctx.section()} env)"
    if sys.platform == "darwin":  # there the login lives in the keychain, which is not looked at
        return [warn(name, detail + " (a login in the macOS keychain is not checked)", fix, profile)]
    return [fail(name, detail, fix, profile)]


def codex(ctx: AgentContext) -> list[Check]:
    name, profile = f"[{ctx.profile.name}] credentials", ctx.profile.name
    if ctx.get("OPENAI_API_KEY"):
        return [ok(name, f"OPENAI_API_KEY is set ({ctx.where('OPENAI_API_KEY')})", profile)]
    home = Path(ctx.get("CODEX_HOME")) if ctx.get("CODEX_HOME") else ctx.home / ".codex"
    auth = home / "auth.json"
    if auth.is_file():
        return [ok(name, f"logged in ({shown(auth, ctx.home)})", profile)]
    config = home / "config.toml"
    found = _codex_provider(ctx, config)
    if found is not None:
        return [found]
    detail = (
        f"none found: OPENAI_API_KEY not set, no {shown(auth, ctx.home)}, "
        f"no model_provider in {shown(config, ctx.home)}"
    )
    return [
        fail(
            name,
            detail,
            f"log in once with `codex login`, or export OPENAI_API_KEY (or set it in {ctx.section()} env)",
            profile,
        )
    ]


def _codex_provider(ctx: AgentContext, config: Path) -> Check | None:
    """A `model_provider` in Codex's config.toml (codex ignores OPENAI_BASE_URL): its
    `env_key` variable must be set. None when the config names no provider."""
    name, profile, where = f"[{ctx.profile.name}] credentials", ctx.profile.name, shown(config, ctx.home)
    try:
        data = tomllib.loads(config.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        return fail(name, f"{where} cannot be read as TOML ({e})", f"fix {where}", profile)
    selected = table(table(data, "profiles"), str(data.get("profile", "")))  # `profile = "x"` picks [profiles.x]
    provider = selected.get("model_provider") or data.get("model_provider")
    if not isinstance(provider, str) or provider == "openai":
        return None
    providers = table(data, "model_providers")
    if provider not in providers:
        return ok(name, f"model_provider {provider!r} in {where} (a built-in provider)", profile)
    env_key = table(providers, provider).get("env_key")
    if not isinstance(env_key, str) or not env_key:
        return ok(name, f"model_provider {provider!r} in {where} (it names no env_key)", profile)
    if ctx.get(env_key):
        return ok(name, f"model_provider {provider!r} in {where}; {env_key} is set ({ctx.where(env_key)})", profile)
    return fail(
        name,
        f"model_provider {provider!r} in {where} reads its key from {env_key}, which is not set",
        f"export {env_key} (or set it in {ctx.section()} env)",
        profile,
    )


def gemini(ctx: AgentContext) -> list[Check]:
    name, profile = f"[{ctx.profile.name}] credentials", ctx.profile.name
    oauth = ctx.home / ".gemini" / "oauth_creds.json"
    if var := first_set(ctx, GEMINI_VARS):
        found = ok(name, f"{var} is set ({ctx.where(var)})", profile)
    elif oauth.is_file():
        found = ok(name, f"logged in with Google ({shown(oauth, ctx.home)})", profile)
    else:
        found = fail(
            name,
            f"none found: {', '.join(GEMINI_VARS)} not set, no {shown(oauth, ctx.home)}",
            f"export GEMINI_API_KEY (or set it in {ctx.section()} env), or log in once with `gemini`",
            profile,
        )
    return [found, gemini_auth_type(ctx)]


# What each selectable auth type needs, checked where it is cheap to tell.
_GEMINI_NEEDS: dict[str, Callable[[AgentContext], str]] = {
    "gemini-api-key": lambda ctx: "" if ctx.get("GEMINI_API_KEY") else "GEMINI_API_KEY is not set",
    "oauth-personal": lambda ctx: (
        "" if (ctx.home / ".gemini" / "oauth_creds.json").is_file() else "~/.gemini/oauth_creds.json does not exist"
    ),
}


def gemini_auth_type(ctx: AgentContext) -> Check:
    """Gemini CLI exits 41 ("Invalid auth method selected.") unless a settings file
    selects an auth type — even with GEMINI_API_KEY set. The workspace's file wins."""
    name, profile = f"[{ctx.profile.name}] auth type", ctx.profile.name
    user = ctx.home / ".gemini" / "settings.json"
    for path in (ctx.root / ".gemini" / "settings.json", user):
        data = load_json(path)[0]
        # `security.auth.selectedType`; older versions wrote `selectedAuthType` at the top
        selected = table(table(data, "security"), "auth").get("selectedType") or data.get("selectedAuthType")
        if isinstance(selected, str) and selected:
            needs = _GEMINI_NEEDS.get(selected)
            missing = needs(ctx) if needs else ""
            where = shown(path, ctx.home)
            if missing:
                return fail(
                    name,
                    f"{where} selects {selected!r}, but {missing}",
                    f"set it up, or select another auth type in {where}",
                    profile,
                )
            return ok(name, f"{selected!r} selected in {where}", profile)
    return fail(
        name,
        f'no auth type selected in {shown(user, ctx.home)}: gemini exits 41 "Invalid auth method selected."',
        f'write {{"security":{{"auth":{{"selectedType":"gemini-api-key"}}}}}} to {shown(user, ctx.home)} '
        '(or "oauth-personal" after logging in with Google)',
        profile,
    )


def aider(ctx: AgentContext) -> list[Check]:
    name, profile = f"[{ctx.profile.name}] credentials", ctx.profile.name
    if var := first_set(ctx, AIDER_VARS):
        return [ok(name, f"{var} is set ({ctx.where(var)})", profile)]
    for path in (ctx.home / ".aider.conf.yml", ctx.root / ".aider.conf.yml"):
        if path.is_file():
            return [ok(name, f"{shown(path, ctx.home)} exists", profile)]
    return [
        fail(
            name,
            f"none found: {', '.join(AIDER_VARS)} not set, no .aider.conf.yml in ~ or the repo",
            f"export your model provider's key (or set it in {ctx.section()} env), or put it in ~/.aider.conf.yml",
            profile,
        )
    ]


CREDENTIALS: dict[str, Callable[[AgentContext], list[Check]]] = {
    "claude": claude,
    "codex": codex,
    "gemini": gemini,
    "aider": aider,
}


def credential_checks(ctx: AgentContext) -> list[Check]:
    """An unknown binary gets none: Hive cannot know where its credentials live."""
    check = CREDENTIALS.get(ctx.binary)
    return check(ctx) if check else []
