"""Codex's `exec --json` events: `turn.completed` carries token counts, `error`
and `turn.failed` carry the CLI's errors ("Reconnecting..." while the API is out
of reach, which Codex repeats forever)."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hive.streams.base import StreamReader, Trouble, TroubleKind, classify, one_line


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
            self._error(str(event.get("message") or ""))
        elif kind == "turn.failed":
            error = event.get("error") if isinstance(event.get("error"), dict) else {}
            assert isinstance(error, dict)
            self._error(str(error.get("message") or "turn failed"), final=True)

    def _error(self, message: str, final: bool = False) -> None:
        trouble = classify(message, _status_in(message), self.cli)
        if trouble is None and final:
            trouble = Trouble(TroubleKind.TRANSIENT, f"codex: {one_line(message)}")
        if trouble is not None:
            self.found(trouble)


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


def _status_in(message: str) -> int | None:
    for code in (401, 403, 404, 429, 500, 502, 503, 529):
        if str(code) in message:
            return code
    return None
