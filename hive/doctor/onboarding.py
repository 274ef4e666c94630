"""First-run files an interactive (TUI) agent needs, or it stops at a prompt no one
answers: Claude Code's TUI reads ~/.claude.json (onboarding done, the bypass-
permissions warning accepted, the API key approved, the folder trusted) — headless
`claude -p` skips all of it. Keyed by the binary's name, like the credentials."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hive.agent_clis.context import AgentContext, load_json
from hive.checks import Check, fail, ok, shown
from hive.doctor.agents import SKIP_PERMISSIONS
from hive.doctor.credentials import claude_json

API_KEY_SUFFIX = 20  # Claude Code remembers an approved key by its last 20 characters


def onboarding_checks(ctx: AgentContext, trust_dirs: Sequence[Path]) -> list[Check]:
    if ctx.binary == "claude" and ctx.profile.mode == "interactive":
        return [claude_tui(ctx, trust_dirs)]
    return []


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
