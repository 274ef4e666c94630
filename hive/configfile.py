"""The `.hive/config.toml` that `hive init` writes, generated from the schema (and each
executor's own settings): every key with its meaning and its default, commented out, so the
file a user edits lists exactly what the loader accepts."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from hive.agent_clis import BUILTIN_PROFILES
from hive.executors import EXECUTORS
from hive.notifiers import CHANNELS
from hive.settings.schema import AGENT_KEYS, KEYS, PRICES_EXAMPLE, SECTIONS, Key

WIDTH = 100
HEADER = """\
# Hive's configuration. Every key is optional: each is shown with its default, commented out;
# uncomment a line to change it. Unknown keys and bad values are errors that name the key.
# Reference: docs/configuration.md in Hive's documentation (`hive --version` says which Hive).
"""


def toml_value(value: Any) -> str:
    """A value as TOML writes it (strings as basic strings, tables inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    raise TypeError(f"no TOML form for {value!r}")


def toml_key(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else json.dumps(name)


def shown_value(key: Key) -> Any:
    """What the commented line shows: the default, or an example where there is none."""
    return key.example if key.default is None else key.default


def section_keys(section: str) -> list[Key]:
    """A section's keys: the schema's, for `[executor]` each executor's own settings too, and
    for `[notify]` each channel's."""
    keys = [k for k in KEYS if k.section == section]
    if section == "executor":
        keys += [key for plugin in EXECUTORS.values() for key in plugin.keys]
    if section == "notify":
        keys += [channel.key for channel in CHANNELS.values()]
    return keys


def config_toml(main_branch: str) -> str:
    parts = [HEADER, "\n"]
    for section, about in SECTIONS.items():
        parts.append(f"[{section}]\n{_comment(about)}\n\n")
        for key in section_keys(section):
            if key.dotted == "merge.main_branch":  # recorded, not commented: `hive init` read it from git
                parts.append(f"{_comment(key.meaning)}\n{key.name} = {toml_value(main_branch)}\n\n")
            else:
                parts.append(_entry(key))
    builtins = ", ".join(BUILTIN_PROFILES)
    parts.append(
        _comment(
            f"Agent profiles. Built in: {builtins}. Any program can be an agent; a table named like a "
            "built-in changes only the keys it sets."
        )
        + "\n# [agents.my-bot]\n\n"
    )
    parts += [_entry(key) for key in AGENT_KEYS]
    parts.append(
        _comment("USD per million tokens, by model name pattern (the longest match wins); built-in prices cover "
                   "Claude, GPT-5 and Gemini models.")
        + "\n# [prices]\n"
        + "".join(f"# {toml_key(model)} = {toml_value(price)}\n" for model, price in PRICES_EXAMPLE.items())
    )  # fmt: skip
    return "".join(parts).replace("\n\n\n", "\n\n")


def _entry(key: Key) -> str:
    return f"{_comment(key.meaning)}\n# {key.name} = {toml_value(shown_value(key))}\n\n"


def _comment(text: str) -> str:
    return "\n".join(textwrap.wrap(text, WIDTH, initial_indent="## ", subsequent_indent="## "))
