"""Regular expressions compiled when first used."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


class LazyPattern:
    """A regular expression compiled when first used: every `doit` and `hive` command imports
    the readers with the agent CLIs' profiles (hive.agent_clis), and most never read a stream
    (compiling them all at import cost ~3 ms of each start-up)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled.search(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self.compiled.match(text)

    def findall(self, text: str) -> list[Any]:
        return self.compiled.findall(text)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        return self.compiled.sub(repl, text)
