"""Gemini CLI's `--output-format stream-json` events: `error` events carry the
CLI's errors, the final `result` its status and token stats."""

from __future__ import annotations

from typing import Any

from hive.streams.base import StreamReader, Trouble, TroubleKind, classify, one_line


class GeminiReader(StreamReader):
    def __init__(self) -> None:
        super().__init__(cli="gemini")

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "init":
            self.usage.model = str(event.get("model") or self.usage.model)
        elif kind in ("message", "tool_use", "tool_result"):
            if event.get("role") != "user":
                self.progress()
        elif kind == "error":
            self._error(str(event.get("message") or ""), event.get("severity") != "warning")
        elif kind == "result":
            stats = event.get("stats") if isinstance(event.get("stats"), dict) else {}
            assert isinstance(stats, dict)
            self.usage.tokens_in = max(self.usage.tokens_in, int(stats.get("input_tokens") or 0))
            self.usage.tokens_out = max(self.usage.tokens_out, int(stats.get("output_tokens") or 0))
            if event.get("status") == "error":
                error = event.get("error") if isinstance(event.get("error"), dict) else {}
                assert isinstance(error, dict)
                self._error(str(error.get("message") or error or "error"), True)

    def _error(self, message: str, serious: bool) -> None:
        status = _status_in(message)
        trouble = classify(message, status, self.cli)
        if trouble is None and serious:
            trouble = Trouble(TroubleKind.TRANSIENT, f"gemini: {one_line(message)}")
        if trouble is not None:
            self.found(trouble)


def _status_in(message: str) -> int | None:
    for code in (400, 401, 403, 404, 429, 500, 503):
        if f"{code}" in message.split("]")[0] or f"status {code}" in message or f'code":{code}' in message:
            return code
    return None
