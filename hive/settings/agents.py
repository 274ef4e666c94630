"""An `[agents.NAME]` table of a repo's config, checked and turned into an agent profile
(hive.agent_clis.profile) — a new one, or a built-in one (hive.agent_clis.BUILTIN_PROFILES)
changed key by key.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from hive.agent_clis import READERS
from hive.agent_clis.profile import AgentProfile
from hive.errors import HiveError
from hive.settings.schema import AGENT_KEYS

_KEYS = {key.name for key in AGENT_KEYS}  # the schema's [agents.NAME] keys


def profile_from_table(name: str, table: Any, base: AgentProfile | None, where: str) -> AgentProfile:
    """Build a profile from an `[agents.NAME]` table, overriding a built-in if one exists."""
    if not isinstance(table, dict):
        raise HiveError(f"{where} must be a table")
    command = table.get("command", base.command if base else None)
    problems = [f"{where}: unknown key {k!r}; known: {', '.join(sorted(_KEYS))}" for k in table if k not in _KEYS]
    if isinstance(command, str) or not command or not all(isinstance(c, str) for c in command):
        problems.append(
            f"{where}.command must be a non-empty list of strings, "
            f'e.g. ["my-agent", "{{context_file}}"] (not one shell string)'
        )
    problems += _scalar_problems(table, base, where) + _list_problems(table, where)
    if problems:
        raise HiveError(*problems)
    assert command is not None  # checked above
    start = base or AgentProfile(name, tuple(command))
    changes = {k: v for k, v in table.items() if k in _KEYS}
    changes["command"] = tuple(command)
    if "env" in changes:
        changes["env"] = tuple(sorted(changes["env"].items()))
    for key in ("stall_patterns", "budget_args", "ignore", "state_paths"):
        if key in changes:
            changes[key] = tuple(changes[key])
    return replace(start, name=name, **changes)


def _scalar_problems(table: dict[str, Any], base: AgentProfile | None, where: str) -> list[str]:
    problems = []
    mode = table.get("mode", base.mode if base else "headless")
    if mode not in ("interactive", "headless"):
        problems.append(f'{where}.mode = {mode!r} must be "interactive" or "headless"')
    if "linger" in table and not (isinstance(table["linger"], (int, float)) and table["linger"] >= 0):
        problems.append(f"{where}.linger must be a number of seconds >= 0")
    for key, kind in (("context_file", str), ("exit_zero_is_done", bool), ("model", str)):
        if key in table and not isinstance(table[key], kind):
            problems.append(f"{where}.{key} = {table[key]!r} must be {'true or false' if kind is bool else 'a string'}")
    name_ = table.get("context_file", "AGENTS.md")
    if isinstance(name_, str) and ("/" in name_ or name_ in ("", ".", "..")):
        problems.append(f'{where}.context_file must be a plain file name like "AGENTS.md"')
    stream = table.get("stream", "")
    if stream and stream not in READERS:
        problems.append(f"{where}.stream = {stream!r} is not a stream reader; known: {', '.join(sorted(READERS))}")
    return problems


def _list_problems(table: dict[str, Any], where: str) -> list[str]:
    problems = []
    patterns = table.get("stall_patterns", [])
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        problems.append(f"{where}.stall_patterns must be a list of regular expressions")
    else:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as e:
                problems.append(f"{where}.stall_patterns: {pattern!r} is not a valid regular expression ({e})")
    for key in ("budget_args", "ignore", "state_paths"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"{where}.{key} must be a list of strings")
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        problems.append(f'{where}.env must be a table of strings, e.g. env = {{ FOO = "1" }}')
    return problems
