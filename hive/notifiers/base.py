"""The record each notification channel's module defines as its `CHANNEL`: its `[notify]`
key and how it delivers one event (as executors' `Plugin` and agent CLIs' `AgentCli`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive.settings.schema import Key

# (its configured value, the event as JSON, the repo's root, the event's name) -> what went
# wrong, one line each ([] = it arrived). Never raises: a notification that does not arrive
# must not fail a task or change a run's exit code.
Deliver = Callable[[Any, str, Path, str], list[str]]


@dataclass(frozen=True)
class Channel:
    key: Key  # its `[notify]` key (section "notify"): its type, meaning and example
    deliver: Deliver

    @property
    def name(self) -> str:
        return self.key.name
