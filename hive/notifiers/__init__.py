"""Notification channels (`[notify]`), one module each (its key and how it delivers an
event: `base.Channel`), and the one call that sends an event everywhere configured. Adding
a channel is its module and one line in CHANNELS; the config, `hive init`'s file and the
reference read its key from here (issue 22)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hive.notifiers import command, webhook
from hive.notifiers.base import Channel

# By its `[notify]` key, one line per channel, in the order the reference lists them.
CHANNELS: dict[str, Channel] = {c.name: c for c in (command.CHANNEL, webhook.CHANNEL)}


def deliver(event: dict[str, Any], root: Path, settings: Mapping[str, Any]) -> list[str]:
    """Send `event` to every channel `settings` ([notify], as the config holds it) sets;
    what failed, one line each ([] = all arrived)."""
    body = json.dumps(event, sort_keys=True)
    problems = []
    for name, channel in CHANNELS.items():
        if settings.get(name):
            problems += channel.deliver(settings[name], body, root, str(event.get("event", "")))
    return problems
