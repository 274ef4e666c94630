"""An agent profile: how to start an agent, which file it reads its brief from, how to
read its output. A record of data, so adding an agent is adding data (a built-in CLI's
profiles in its module here, or an `[agents.NAME]` table in a repo's config), never
editing the runner.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hive.agent_clis.patterns import LazyPattern

PROMPT = "{prompt}"
CONTEXT_FILE = "{context_file}"
_PLACEHOLDER = LazyPattern(r"\{prompt\}|\{context_file\}")


@dataclass(frozen=True)
class AgentProfile:
    name: str
    command: tuple[str, ...]
    context_file: str = "AGENTS.md"
    mode: str = "headless"  # "interactive" (a TUI that stays open) or "headless"
    exit_zero_is_done: bool = False  # exiting 0 without `hive done` counts as done
    stall_patterns: tuple[str, ...] = ()  # screen text meaning "stuck at a prompt, not working"
    env: tuple[tuple[str, str], ...] = ()  # extra environment for the agent
    stream: str = ""  # how to read its output (hive.agent_clis.READERS); "" = only watch that it grows
    budget_args: tuple[str, ...] = ()  # appended when a task has a budget ({usd} = what is left)
    ignore: tuple[str, ...] = ()  # files it leaves in the worktree that are never the task's work
    linger: float = 0.0  # seconds it may take to end its turn after signalling (its usage comes last)
    model: str = ""  # the model it uses, for pricing when its output does not name it
    state_paths: tuple[str, ...] = ()  # what the CLI writes outside the checkout (`~` = home): writable in the sandbox

    def budget_argv(self, usd: float) -> list[str]:
        return [a.replace("{usd}", f"{usd:.4f}") for a in self.budget_args]

    def argv(self, prompt: str, context_file: str) -> list[str]:
        """The command line, placeholders replaced literally in one pass (no formatting,
        no shell), so placeholder-like text inside the prompt stays as written."""
        values = {PROMPT: prompt, CONTEXT_FILE: context_file}
        return [_PLACEHOLDER.sub(lambda m: values[m.group(0)], part) for part in self.command]

    def stalled(self, screen: str) -> str | None:
        return stall_match(self.stall_patterns, screen)


def stall_match(patterns: tuple[str, ...], screen: str) -> str | None:
    """The first stall pattern the agent's screen shows, if any."""
    for pattern in patterns:
        if re.search(pattern, screen, re.IGNORECASE):
            return pattern
    return None
