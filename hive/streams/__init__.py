"""Readers of the agent CLIs' output streams, by the profile's `stream` name."""

from __future__ import annotations

from collections.abc import Callable

from hive.streams.aider import AiderReader
from hive.streams.base import StreamReader, Trouble, TroubleKind, Usage
from hive.streams.claude import ClaudeReader
from hive.streams.codex import CodexReader
from hive.streams.gemini import GeminiReader

__all__ = ["KINDS", "StreamReader", "Trouble", "TroubleKind", "Usage", "reader"]

KINDS: dict[str, Callable[[], StreamReader]] = {
    "claude": ClaudeReader,
    "codex": CodexReader,
    "gemini": GeminiReader,
    "aider": AiderReader,
    "text": StreamReader,  # any CLI: only its unmistakable plain-text errors
}


def reader(kind: str) -> StreamReader | None:
    factory = KINDS.get(kind)
    return factory() if factory else None
