"""Claude Code's `--output-format stream-json` events.

Usage comes with every assistant message (one event per content block, the same
message id repeated), so it is kept per message id and summed once; the final
`result` event's `total_cost_usd` is the CLI's own total. A 401/403 in an
`api_retry` event is permanent at once: Claude would retry it for minutes.
"""

from __future__ import annotations

from typing import Any

from hive.streams.base import StreamReader, Trouble, TroubleKind, classify, one_line

LONG_WAIT = 60.0  # a rate-limit retry this far away: pause instead of letting the CLI sit


class ClaudeReader(StreamReader):
    def __init__(self) -> None:
        super().__init__(cli="claude")
        self._messages: dict[str, tuple[int, int]] = {}

    def event(self, event: dict[str, Any]) -> None:
        kind, subtype = event.get("type"), event.get("subtype")
        if kind == "system" and subtype == "init":
            self.usage.model = str(event.get("model") or self.usage.model)
        elif kind == "system" and subtype == "api_retry":
            self._retry(event)
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
            status = _status_of(str(error))
            self.found_error(_text_of(message) or str(error), status)
            return
        self.progress()
        usage = message.get("usage")
        if isinstance(usage, dict):
            key = str(message.get("id") or len(self._messages))
            tokens_in = sum(int(usage.get(k) or 0) for k in _INPUT_FIELDS)
            old_in, old_out = self._messages.get(key, (0, 0))
            self._messages[key] = (max(old_in, tokens_in), max(old_out, int(usage.get("output_tokens") or 0)))
            self.usage.tokens_in = sum(v[0] for v in self._messages.values())
            self.usage.tokens_out = sum(v[1] for v in self._messages.values())
        if message.get("model"):
            self.usage.model = str(message["model"])

    def _retry(self, event: dict[str, Any]) -> None:
        status = event.get("error_status")
        status = int(status) if isinstance(status, int) else None
        message = str(event.get("error") or f"API error {status}")
        trouble = classify(f"API error {status}: {message}", status, self.cli)
        if trouble is None:
            return  # a 5xx or a dropped connection: the CLI's own retries handle it
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
        if event.get("is_error"):
            text = event.get("result") or event.get("subtype") or "error"
            self.found_error(str(text), _status_of(str(text)))

    def found_error(self, text: str, status: int | None) -> None:
        trouble = classify(text, status, self.cli)
        if trouble is not None:
            self.found(trouble)
        elif self.trouble is None:
            self.found(Trouble(TroubleKind.TRANSIENT, f"claude reported an error: {one_line(text)}"))


_INPUT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return str(content or "")


def _status_of(text: str) -> int | None:
    """The HTTP status in "API Error: 401 {...}"."""
    for word in text.replace(":", " ").split()[:6]:
        if word.isdigit() and 400 <= int(word) < 600:
            return int(word)
    return None
