"""The record each agent CLI's module defines as its `CLI`: everything Hive knows of one
CLI, as data and typed callables. The engine, the settings and the doctor read it through
the registry (`hive.agent_clis`) and never name a CLI, so a built-in CLI is one module and
one registry line (issue 22; pre-commit's `Language` and `all_languages` are the model)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hive.agent_clis.profile import AgentProfile
from hive.agent_clis.stream import StreamReader


@dataclass(frozen=True)
class AgentCli:
    # The program's name, as a profile's command[0] runs it (`/opt/bin/claude` is `claude`):
    # the doctor's checks are keyed by it, and its reader is the `stream` of that name.
    binary: str
    profiles: tuple[AgentProfile, ...]  # its built-in profiles, in the order `hive init` lists them
    install: str = ""  # how to install it, for the doctor's fix ("": Hive cannot say)
    reader: Callable[[], StreamReader] | None = None  # reads its output; None: only as plain text
