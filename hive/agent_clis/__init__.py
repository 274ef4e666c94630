"""The agent CLIs Hive knows: each one's profiles, how to read its output, and how to
check that it will start."""

from __future__ import annotations

from collections.abc import Callable

from hive.agent_clis.aider import AiderReader
from hive.agent_clis.claude import ClaudeReader
from hive.agent_clis.codex import CodexReader
from hive.agent_clis.gemini import GeminiReader
from hive.agent_clis.stream import StreamReader

# The readers of the agent CLIs' output streams, by the profile's `stream` name.
READERS: dict[str, Callable[[], StreamReader]] = {
    "claude": ClaudeReader,
    "codex": CodexReader,
    "gemini": GeminiReader,
    "aider": AiderReader,
    "text": StreamReader,  # any CLI: only its unmistakable plain-text errors
}


def reader(kind: str) -> StreamReader | None:
    factory = READERS.get(kind)
    return factory() if factory else None
