"""OpenAI's Codex CLI (`codex`): its profile; the reader of its `exec --json` events
(`turn.completed` carries token counts, `error` and `turn.failed` carry the CLI's errors:
"Reconnecting..." while the API is out of reach, which Codex repeats forever); the model
its config names; where its login or key is."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hive.agent_clis.base import AgentCli, Reach
from hive.agent_clis.context import AgentContext, table
from hive.agent_clis.profile import PROMPT, AgentProfile
from hive.agent_clis.stream import ALL, StreamReader
from hive.checks import Check, fail, ok, shown

PROFILES = (
    AgentProfile(
        # `exec` never asks for approval; the bypass flag lifts its read-only sandbox;
        # no login shell, whose /etc/profile would reset PATH.
        "codex",
        (
            "codex",
            "exec",
            "--json",
            "--dangerously-bypass-approvals-and-sandbox",
            "-c",
            "allow_login_shell=false",
            PROMPT,
        ),
        context_file="AGENTS.md",
        mode="headless",
        stream="codex",
        state_paths=("~/.codex/",),
        linger=15.0,  # its token counts come with `turn.completed`, after its last words
    ),
)

# a 400 in Codex's text is not taken as the API refusing the request (no recording shows one)
_CODES = ALL - {400}


class CodexReader(StreamReader):
    def __init__(self) -> None:
        super().__init__(cli="codex", login_fix="set OPENAI_API_KEY or run `codex login`")

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "turn.completed":
            usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
            assert isinstance(usage, dict)
            self.add_usage(int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
            self.progress()
        elif kind in ("item.started", "item.completed", "item.updated"):
            self.progress()
        elif kind == "error":
            self.reported(str(event.get("message") or ""), False, codes=_CODES)
        elif kind == "turn.failed":
            error = event.get("error") if isinstance(event.get("error"), dict) else {}
            assert isinstance(error, dict)
            self.reported(str(error.get("message") or "turn failed"), True, codes=_CODES)


def configured_model(env: Mapping[str, str]) -> str:
    """The `model` in Codex's config.toml: its JSON events do not name the model they used."""
    model = _config(env).get("model", "")
    return model if isinstance(model, str) else ""


def configured_reach(env: Mapping[str, str]) -> Reach:
    """The `model_providers` of Codex's config.toml (codex ignores OPENAI_BASE_URL): the host
    of each one's `base_url` and its `env_key` variable."""
    hosts, keys = [], []
    for provider in table(_config(env), "model_providers").values():
        if not isinstance(provider, dict):
            continue
        url, key = provider.get("base_url"), provider.get("env_key")
        host = urlsplit(url).hostname if isinstance(url, str) else None
        hosts += [host] if host else []
        keys += [key] if isinstance(key, str) and key else []
    return Reach(tuple(hosts), tuple(keys))


def _config(env: Mapping[str, str]) -> dict[str, Any]:
    """Codex's config.toml ($CODEX_HOME, else ~/.codex); {} when there is none to read."""
    home = env.get("CODEX_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".codex")
    try:
        with open(Path(home) / "config.toml", "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


# --- what the doctor checks ---------------------------------------------------------------------


def credentials(ctx: AgentContext) -> list[Check]:
    name, profile = f"[{ctx.profile.name}] credentials", ctx.profile.name
    if ctx.get("OPENAI_API_KEY"):
        return [ok(name, f"OPENAI_API_KEY is set ({ctx.where('OPENAI_API_KEY')})", profile)]
    home = Path(ctx.get("CODEX_HOME")) if ctx.get("CODEX_HOME") else ctx.home / ".codex"
    auth = home / "auth.json"
    if auth.is_file():
        return [ok(name, f"logged in ({shown(auth, ctx.home)})", profile)]
    config = home / "config.toml"
    found = _provider(ctx, config)
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


def _provider(ctx: AgentContext, config: Path) -> Check | None:
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


CLI = AgentCli(
    binary="codex",
    profiles=PROFILES,
    install="npm install -g @openai/codex",
    reader=CodexReader,
    configured_model=configured_model,
    credentials=credentials,
    # the API with a key; ChatGPT's backend and OpenAI's token endpoint with a ChatGPT login
    reach=Reach(hosts=("api.openai.com", "chatgpt.com", "auth.openai.com"), env=("OPENAI_*", "CODEX_*")),
    configured_reach=configured_reach,
)
