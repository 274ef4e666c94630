"""The commands agents run: `hive done` / `blocked` / `too-big` (the signals in
lifecycle.SIGNALS), `hive note` and `hive discover`."""

from __future__ import annotations

import argparse

from hive.lifecycle import SIGNALS
from hive.store import agent_signals


def signal(args: argparse.Namespace) -> int:
    who = agent_signals.AgentIdentity.from_env()
    if agent_signals.send(who, SIGNALS[args.command], args.reason or ""):
        print(f"hive: {who.key} signalled {args.command}; Hive takes it from here — stop now.")
    else:
        print(f"hive: {who.key} attempt {who.attempt} had already signalled; this one is ignored.")
    return 0


def note(args: argparse.Namespace) -> int:
    who = agent_signals.AgentIdentity.from_env()
    agent_signals.add_note(who, " ".join(args.text))
    print(f"hive: note recorded for {who.key}")
    return 0


def discover(args: argparse.Namespace) -> int:
    from hive.plan import discovered  # the plan's graph code: only this verb needs it

    key, new = discovered.file_item(agent_signals.AgentIdentity.from_env(), args.title, args.details or "")
    said = (
        f"recorded {key} for a human to review; it does not run unless they approve it"
        if new
        else f"{key} already records this (same title); nothing new was filed"
    )
    print(f"hive: {said}. Go on with your task.")
    return 0
