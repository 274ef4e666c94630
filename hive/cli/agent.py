"""The commands agents run: `hive done` / `blocked` / `too-big` (the signals in
lifecycle.SIGNALS), `hive note`, `hive discover` and `hive ask`."""

from __future__ import annotations

import argparse
import os
import sys
import time

from hive import agentshim
from hive.errors import HiveError
from hive.lifecycle import SIGNALS
from hive.output import duration
from hive.store import agent_signals, questions
from hive.store.paths import Paths

NO_ANSWER = 75  # `hive ask` ended its wait without an answer: EX_TEMPFAIL, "try again later"
ASK_POLL = 0.5


def signal(args: argparse.Namespace) -> int:
    who = agent_signals.AgentIdentity.from_env()
    agentshim.outlast_stop()
    sent = agent_signals.send(who, SIGNALS[args.command], args.reason or "")
    agentshim.tell(agentshim.said(who.key, args.command, who.attempt, sent))
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


def ask(args: argparse.Namespace) -> int:
    """File the question, wait for its answer up to `[execution] ask_wait`, print it."""
    who = agent_signals.AgentIdentity.from_env()
    wait = os.environ.get("HIVE_ASK_WAIT", "")
    if not wait:
        raise HiveError(
            "`hive ask` cannot reach your human from here (agents on the Ray executor cannot ask yet): "
            'run `hive blocked --reason "your question"` instead'
        )
    options = tuple(o.strip() for o in (args.options or "").split(",") if o.strip())
    paths = Paths(who.root)
    q = questions.ask(paths, who.plan, who.task_id, who.attempt, args.question, options, args.details or "")
    print(
        f"hive: question {q.number} is with your human; waiting up to {duration(float(wait))} for the answer",
        file=sys.stderr,
        flush=True,
    )
    deadline = time.time() + float(wait)
    while True:
        got = next((a for a in questions.load(paths, who.plan, who.task_id) if a.number == q.number), q)
        if got.answered:
            questions.mark_delivered(paths, who.plan, who.task_id, q.number)
            print(got.shown_answer(), flush=True)
            return 0
        if time.time() >= deadline:
            break
        time.sleep(ASK_POLL)
    questions.mark_gave_up(paths, who.plan, who.task_id, q.number)
    print(
        f"hive: no answer yet to question {q.number}. Do not wait for it: commit your work "
        f'(git add -A && git commit -m "..."), record where you are with `hive note "..."`, then end your '
        f"session (exit). This is not a failure: Hive starts you again with the answer once your human gives it."
    )
    return NO_ANSWER
