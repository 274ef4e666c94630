"""The agent CLIs Hive knows, one module each (its profiles, how to read its output, how
to check that it will start: `base.AgentCli`), and what the rest of Hive looks up in them.
Adding a built-in CLI is its module and one line in AGENT_CLIS; nothing outside this
package branches on which CLI a profile runs (issue 22).

- `profile`  AgentProfile: how to start an agent (a built-in one here, or `[agents.NAME]`)
- `stream`   the base every output reader builds on: usage, trouble, classify
- `context`  AgentContext, a profile as its agent sees the world, for a CLI's own checks
- `base`     AgentCli, the record a CLI's module defines as its `CLI`
- `claude`, `codex`, `gemini`, `aider`  one module per built-in CLI
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from hive.agent_clis import aider, claude, codex, gemini
from hive.agent_clis.base import AgentCli, Reach
from hive.agent_clis.profile import AgentProfile
from hive.agent_clis.stream import StreamReader

# By the binary's name, one line per CLI; in this order `hive init`'s config and the
# reference list their profiles.
AGENT_CLIS: dict[str, AgentCli] = {cli.binary: cli for cli in (claude.CLI, codex.CLI, aider.CLI, gemini.CLI)}

BUILTIN_PROFILES: dict[str, AgentProfile] = {p.name: p for cli in AGENT_CLIS.values() for p in cli.profiles}

# The readers of the agent CLIs' output streams, by the profile's `stream` name: a CLI's
# own reader goes by its binary's name.
READERS: dict[str, Callable[[], StreamReader]] = {
    **{cli.binary: cli.reader for cli in AGENT_CLIS.values() if cli.reader is not None},
    "text": StreamReader,  # any CLI: only its unmistakable plain-text errors
}


def reader(kind: str) -> StreamReader | None:
    factory = READERS.get(kind)
    return factory() if factory else None


def cli_for(binary: str) -> AgentCli:
    """The CLI a profile's program is, by its name (`AgentContext.binary`). An unknown
    program is a CLI that declares nothing: Hive cannot know where its credentials live."""
    return AGENT_CLIS.get(binary) or AgentCli(binary, profiles=())


def configured_model(stream: str, env: Mapping[str, str]) -> str:
    """The model a profile's CLI names in its own config, by the profile's `stream` (a
    profile that reads Codex's stream runs Codex), for pricing; "" when it names none."""
    cli = AGENT_CLIS.get(stream)
    return cli.configured_model(env) if cli else ""


def reach(profile: AgentProfile, env: Mapping[str, str]) -> Reach:
    """What a profile's agent must reach from inside the sandbox: its CLI's API hosts and
    variables, those its CLI's config names, and the variables its profile sets."""
    cli = cli_for(os.path.basename(profile.command[0]))
    return cli.reach + cli.configured_reach(env) + Reach(env=tuple(k for k, _ in profile.env))
