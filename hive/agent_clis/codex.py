"""OpenAI's Codex CLI (`codex`): its profile, and the reader of its `exec --json` events:
`turn.completed` carries token counts, `error` and `turn.failed` carry the CLI's errors
("Reconnecting..." while the API is out of reach, which Codex repeats forever)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hive.agent_clis.base import AgentCli
from hive.agent_clis.profile import PROMPT, AgentProfile
from hive.agent_clis.stream import ALL, StreamReader

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
        linger=15.0,  # its token counts come with `turn.completed`, after its last words
    ),
)

# a 400 in Codex's text is not taken as the API refusing the request (no recording shows one)
_CODES = ALL - {400}


class CodexReader(StreamReader):
    def __init__(self) -> None:
        super().__init__(cli="codex")

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
    """The `model` in Codex's config.toml ($CODEX_HOME, else ~/.codex): its JSON events
    do not name the model they used."""
    home = env.get("CODEX_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".codex")
    try:
        with open(Path(home) / "config.toml", "rb") as f:
            model = tomllib.load(f).get("model", "")
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    return model if isinstance(model, str) else ""


CLI = AgentCli(
    binary="codex",
    profiles=PROFILES,
    install="npm install -g @openai/codex",
    reader=CodexReader,
)
