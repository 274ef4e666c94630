"""The record each agent CLI's module defines as its `CLI`: everything Hive knows of one
CLI, as data and typed callables. The engine, the settings and the doctor read it through
the registry (`hive.agent_clis`) and never name a CLI, so a built-in CLI is one module and
one registry line (issue 22; pre-commit's `Language` and `all_languages` are the model)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hive.agent_clis.context import AgentContext
from hive.agent_clis.profile import AgentProfile
from hive.agent_clis.stream import StreamReader
from hive.checks import Check

# A CLI's own checks of a profile that runs it; `trust_dirs`: where its agents run (the
# repo covers the worktrees below it).
Checks = Callable[[AgentContext], list[Check]]
FirstRunChecks = Callable[[AgentContext, Sequence[Path]], list[Check]]


def no_checks(_ctx: AgentContext) -> list[Check]:
    return []


def no_first_run_checks(_ctx: AgentContext, _trust_dirs: Sequence[Path]) -> list[Check]:
    return []


def no_configured_model(_env: Mapping[str, str]) -> str:
    return ""


@dataclass(frozen=True)
class Reach:
    """What a CLI must reach from inside the sandbox (hive.sandbox): the hosts it talks to (let
    through the sandbox's proxy) and the variables it reads (patterns, as `fnmatch`; kept in its
    environment even where they look like the secrets the sandbox withholds)."""

    hosts: tuple[str, ...] = ()
    env: tuple[str, ...] = ()

    def __add__(self, other: Reach) -> Reach:
        return Reach(self.hosts + other.hosts, self.env + other.env)


def no_configured_reach(_env: Mapping[str, str]) -> Reach:
    return Reach()


@dataclass(frozen=True)
class AgentCli:
    # The program's name, as a profile's command[0] runs it (`/opt/bin/claude` is `claude`):
    # the doctor's checks are keyed by it, and its reader is the `stream` of that name.
    binary: str
    profiles: tuple[AgentProfile, ...]  # its built-in profiles, in the order `hive init` lists them
    install: str = ""  # how to install it, for the doctor's fix ("": Hive cannot say)
    reader: Callable[[], StreamReader] | None = None  # reads its output; None: only as plain text
    # The model its own config file names (given the agent's environment), for pricing a CLI
    # whose output does not name the model; "": none.
    configured_model: Callable[[Mapping[str, str]], str] = no_configured_model
    # The doctor's checks; only the source of a secret is shown (a variable's name, a file's
    # path), never its value.
    credentials: Checks = no_checks  # is its login or key there?
    onboarding: FirstRunChecks = no_first_run_checks  # has it the first-run files it needs there?
    preflight: Checks = no_checks  # cheap (no subprocess): `doit` runs these before a run starts too
    reach: Reach = Reach()  # its API hosts and variables, always
    # ... and those its own config file names, given the agent's environment (a provider's URL)
    configured_reach: Callable[[Mapping[str, str]], Reach] = no_configured_reach
