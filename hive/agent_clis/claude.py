"""Claude Code (`claude`): its headless and its interactive (TUI) profile; the reader of
its `--output-format stream-json` events; where its login or key is, the first-run files
its TUI needs, and its refusal to run as root.

Reading its events: usage is kept per message id and summed once: the API's own `message_start` /
`message_delta` usage (as `stream_event`s, with `--include-partial-messages`),
and the usage of each assistant event (repeated per content block, its output
count taken before the message ended). The final `result` event's
`total_cost_usd` is the CLI's own total — but Hive ends the session right after
`hive done`, so it seldom arrives. A 401/403 in an `api_retry` event is permanent
at once (Claude would retry it for minutes); a connection that keeps failing is
an unreachable API.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hive.agent_clis.base import AgentCli, Reach
from hive.agent_clis.context import AgentContext, first_set, load_json
from hive.agent_clis.profile import PROMPT, AgentProfile
from hive.agent_clis.stream import StreamReader, Trouble, TroubleKind, one_line, status_in
from hive.checks import Check, fail, ok, shown, warn

SKIP_PERMISSIONS = "--dangerously-skip-permissions"
LONG_WAIT = 60.0  # a rate-limit retry this far away: pause instead of letting the CLI sit

# Prompts an interactive TUI shows on a first run, or for a new key or directory:
# waiting at one of them must fail the task within the grace period, not hang.
# (Headless profiles read their event stream instead: in it, these words are as
# likely to be a task's own login page as a prompt.)
_PROMPTS = (
    r"trust (the files in )?this folder",
    r"Do you trust",
    r"Yes, proceed",
    r"Please log ?in",
    r"Select login method",
    r"Do you want to use this API key",
    r"Bypass Permissions mode",
    r"Yes, I accept",
    r"Choose the text style",
)

STATE_PATHS = ("~/.claude/", "~/.claude.json")  # its sessions, settings and onboarding state

PROFILES = (
    # Headless `-p` skips the per-directory trust dialog (every worktree is a new
    # directory); stream-json prints as it works, which is the sign of life.
    AgentProfile(
        "claude",
        (
            "claude",
            "-p",
            SKIP_PERMISSIONS,
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",  # the API's usage events, as they stream
            PROMPT,
        ),
        context_file="CLAUDE.md",
        mode="headless",
        stream="claude",
        budget_args=("--max-budget-usd", "{usd}"),
        state_paths=STATE_PATHS,
    ),
    AgentProfile(
        "claude-interactive",
        ("claude", SKIP_PERMISSIONS, PROMPT),
        context_file="CLAUDE.md",
        mode="interactive",
        stall_patterns=_PROMPTS,
        state_paths=STATE_PATHS,
    ),
)


class ClaudeReader(StreamReader):
    def __init__(self) -> None:
        super().__init__(cli="claude", login_fix="set ANTHROPIC_API_KEY or run `claude` once and /login")
        self._messages: dict[str, tuple[int, int]] = {}
        self._current = ""  # the message the API is streaming

    def event(self, event: dict[str, Any]) -> None:
        kind, subtype = event.get("type"), event.get("subtype")
        if kind == "system" and subtype == "init":
            self.usage.model = str(event.get("model") or self.usage.model)
        elif kind == "system" and subtype == "api_retry":
            self._retry(event)
        elif kind == "stream_event" and isinstance(event.get("event"), dict):
            self._api_event(event["event"])
        elif kind == "assistant":
            self._assistant(event)
        elif kind == "user":
            self.progress()
        elif kind == "result":
            self._result(event)

    def _assistant(self, event: dict[str, Any]) -> None:
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        assert isinstance(message, dict)
        error = event.get("error")
        if error:
            status = status_in(str(error))
            self.found_error(_text_of(message) or str(error), status)
            return
        self.progress()
        self._message_usage(message)

    def _api_event(self, api: dict[str, Any]) -> None:
        """The Messages API's own SSE events, as the CLI passes them on."""
        if api.get("type") == "message_start" and isinstance(api.get("message"), dict):
            self._current = str(api["message"].get("id") or "")
            self._message_usage(api["message"])
        elif api.get("type") == "message_delta" and isinstance(api.get("usage"), dict) and self._current:
            self._message_usage({"id": self._current, "usage": api["usage"]})

    def _message_usage(self, message: dict[str, Any]) -> None:
        usage = message.get("usage")
        if isinstance(usage, dict):
            key = str(message.get("id") or len(self._messages))
            tokens_in = sum(int(usage.get(k) or 0) for k in _INPUT_FIELDS)
            old_in, old_out = self._messages.get(key, (0, 0))
            self._messages[key] = (max(old_in, tokens_in), max(old_out, int(usage.get("output_tokens") or 0)))
            self.usage.tokens_in = sum(v[0] for v in self._messages.values())
            self.usage.tokens_out = sum(v[1] for v in self._messages.values())
        model = str(message.get("model") or "")
        if model and not model.startswith("<"):  # "<synthetic>": the CLI's own error message
            self.usage.model = model

    def _retry(self, event: dict[str, Any]) -> None:
        status = event.get("error_status")
        status = int(status) if isinstance(status, int) else None
        message = str(event.get("error") or f"API error {status}")
        if status is None:  # no HTTP answer at all
            self.found(Trouble(TroubleKind.TRANSIENT, "the model API is unreachable (claude: no HTTP answer)"))
            return
        trouble = self.classified(f"API error {status}: {message}", status)
        if trouble is None:
            return  # a 5xx: the CLI's own retries handle it
        delay = float(event.get("retry_delay_ms") or 0) / 1000
        if trouble.kind == TroubleKind.RATE_LIMIT:
            last = event.get("attempt") == event.get("max_retries")
            if not (last or delay >= LONG_WAIT or trouble.resume_at):
                return  # a short wait the CLI sits out itself
        self.found(trouble)

    def _result(self, event: dict[str, Any]) -> None:
        cost = event.get("total_cost_usd")
        if isinstance(cost, (int, float)):
            self.usage.cli_cost_usd = float(cost)
        usage = event.get("usage")
        if isinstance(usage, dict):
            self.usage.tokens_in = max(self.usage.tokens_in, sum(int(usage.get(k) or 0) for k in _INPUT_FIELDS))
            self.usage.tokens_out = max(self.usage.tokens_out, int(usage.get("output_tokens") or 0))
        if event.get("subtype") == "error_max_budget_usd":
            self.found(Trouble(TroubleKind.BUDGET, f"budget reached for this task (claude: {usd_of(cost)})"))
        elif event.get("is_error"):
            text = str(event.get("result") or event.get("subtype") or "error")
            status = event.get("api_error_status")
            self.found_error(text, status if isinstance(status, int) else status_in(text))

    def found_error(self, text: str, status: int | None) -> None:
        trouble = self.classified(text, status)
        if trouble is not None:
            self.found(trouble)
        elif self.trouble is None:
            self.found(Trouble(TroubleKind.TRANSIENT, f"claude reported an error: {one_line(text)}"))


_INPUT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def usd_of(cost: object) -> str:
    return f"${cost:.4f} spent" if isinstance(cost, (int, float)) else "--max-budget-usd"


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content or "")


# --- what the doctor checks ---------------------------------------------------------------------

VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
API_KEY_SUFFIX = 20  # Claude Code remembers an approved key by its last 20 characters


def claude_dir(ctx: AgentContext) -> Path:
    return Path(ctx.get("CLAUDE_CONFIG_DIR")) if ctx.get("CLAUDE_CONFIG_DIR") else ctx.home / ".claude"


def claude_json(ctx: AgentContext) -> Path:
    """Claude Code's global state file: ~/.claude.json, or inside $CLAUDE_CONFIG_DIR when set."""
    return claude_dir(ctx) / ".claude.json" if ctx.get("CLAUDE_CONFIG_DIR") else ctx.home / ".claude.json"


def credentials(ctx: AgentContext) -> list[Check]:
    name, profile = f"[{ctx.profile.name}] credentials", ctx.profile.name
    if var := first_set(ctx, VARS):
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
        f"none found: {', '.join(VARS)} not set, no {shown(login, ctx.home)}, "
        f"no oauthAccount in {shown(state, ctx.home)}"
    )
    fix = f"log in once with `claude` (/login), or export ANTHROPIC_API_KEY (or set it in {ctx.section()} env)"
    if sys.platform == "darwin":  # there the login lives in the keychain, which is not looked at
        return [warn(name, detail + " (a login in the macOS keychain is not checked)", fix, profile)]
    return [fail(name, detail, fix, profile)]


def onboarding(ctx: AgentContext, trust_dirs: Sequence[Path]) -> list[Check]:
    """First-run files, or the TUI stops at a prompt no one answers: it reads ~/.claude.json
    (onboarding done, the bypass-permissions warning accepted, the API key approved, the
    folder trusted) — headless `claude -p` skips all of it."""
    return [claude_tui(ctx, trust_dirs)] if ctx.profile.mode == "interactive" else []


def claude_tui(ctx: AgentContext, trust_dirs: Sequence[Path]) -> Check:
    """`trust_dirs`: where the agents run (the repo root covers worktrees below it)."""
    name, profile = f"[{ctx.profile.name}] onboarding", ctx.profile.name
    path = claude_json(ctx)
    where = shown(path, ctx.home)
    fix = (
        f"run `claude` once in {trust_dirs[0]} and answer its prompts (log in or approve the API key, "
        f"accept the bypass-permissions warning, trust the folder), or set these in {where}"
    )
    data, problem = load_json(path)
    if problem:
        return fail(name, f"{where} {problem}: the TUI would stop at its first-run screens", fix, profile)
    missing = [item for item in _missing(ctx, data, trust_dirs) if item]
    if missing:
        return fail(name, f"{where} lacks {', '.join(missing)}: the TUI would stop at a prompt", fix, profile)
    return ok(name, f"{where}: onboarding done, {', '.join(str(d) for d in trust_dirs)} trusted", profile)


def _missing(ctx: AgentContext, data: dict[str, Any], trust_dirs: Sequence[Path]) -> list[str]:
    key = ctx.get("ANTHROPIC_API_KEY")
    responses = data.get("customApiKeyResponses")
    approved = responses.get("approved") if isinstance(responses, dict) else None
    return [
        "" if data.get("hasCompletedOnboarding") is True else "hasCompletedOnboarding",
        ""
        if SKIP_PERMISSIONS not in ctx.profile.command or data.get("bypassPermissionsModeAccepted") is True
        else "bypassPermissionsModeAccepted",
        # the key itself is never shown: only that this one is not approved
        ""
        if not key or (isinstance(approved, list) and key[-API_KEY_SUFFIX:] in approved)
        else "customApiKeyResponses.approved for this ANTHROPIC_API_KEY",
        *("" if trusted(data, d) else f'projects["{d}"].hasTrustDialogAccepted' for d in trust_dirs),
    ]


def trusted(data: dict[str, Any], directory: Path) -> bool:
    """Claude Code trusts a folder when it or a folder above it was accepted."""
    projects = data.get("projects")
    if not isinstance(projects, dict):
        return False
    for d in (directory, *directory.parents):
        entry = projects.get(str(d))
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return True
    return False


def preflight(ctx: AgentContext) -> list[Check]:
    """What `doit` checks before a run, as the doctor does: Claude Code as root."""
    found = root_check(ctx)
    return [found] if found is not None else []


def root_check(ctx: AgentContext, euid: int | None = None) -> Check | None:
    """Claude Code refuses --dangerously-skip-permissions as root (exit 1, "cannot be
    used with root/sudo privileges") unless IS_SANDBOX=1 — every task would fail the
    same way. None where it does not apply."""
    if SKIP_PERMISSIONS not in ctx.profile.command:
        return None
    name = f"[{ctx.profile.name}] root"
    if (os.geteuid() if euid is None else euid) != 0:
        return ok(name, "not running as root", ctx.profile.name)
    if ctx.get("IS_SANDBOX") == "1":
        return ok(name, f"running as root with IS_SANDBOX=1 ({ctx.where('IS_SANDBOX')})", ctx.profile.name)
    return fail(
        name,
        f"running as root: Claude Code refuses {SKIP_PERMISSIONS} as root unless IS_SANDBOX=1",
        f"run Hive as a normal user, or inside a real sandbox export IS_SANDBOX=1 "
        f'(or set env = {{ IS_SANDBOX = "1" }} in {ctx.section()} of .hive/config.toml)',
        ctx.profile.name,
    )


CLI = AgentCli(
    binary="claude",
    profiles=PROFILES,
    install="npm install -g @anthropic-ai/claude-code",
    reader=ClaudeReader,
    credentials=credentials,
    onboarding=onboarding,
    preflight=preflight,
    reach=Reach(hosts=("api.anthropic.com",), env=("ANTHROPIC_*", "CLAUDE_*")),
)
