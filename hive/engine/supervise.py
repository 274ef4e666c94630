"""Watching one running agent until it signals, dies, stalls or times out.

The loop costs a few syscalls every 25 ms (signal file, agent alive, log size), so
a signal is seen well under a second after it is sent; the executor's service
(tmux) is asked once a second. Time comes from a `Clock`, so the rules (spawn
grace, stall, timeout) are unit-tested without waiting for them.
"""

from __future__ import annotations

import codecs
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hive import crashsafe, logcap
from hive.adapters import inotify
from hive.agent_clis.profile import stall_match
from hive.agent_clis.stream import StreamReader, Trouble, TroubleKind, Usage
from hive.executors import Agent
from hive.executors.base import LOCAL_POLL
from hive.lifecycle import Kind, Outcome
from hive.output import clean_tail, duration, log_size
from hive.store import agent_signals, questions
from hive.store.agent_signals import Signal
from hive.store.questions import Question

POLL = LOCAL_POLL
UNREACHABLE_PATIENCE = 30.0  # an API the CLI cannot reach this long ends the attempt
USAGE_EVERY = 1.0  # seconds between recordings of a running agent's usage
STALL_QUIET = 1.0  # a stall pattern counts once the agent has printed nothing for this long
# an agent its `hive ask` told to end its session (no answer in ask_wait) that is still
# there this long after is ended by Hive: a TUI cannot quit itself
ASK_END_GRACE = 90.0


class Meter(Protocol):
    """Where a running agent's usage goes: recorded, and checked against the budget."""

    def record(self, usage: Usage) -> str | None:
        """Record it; return why the agent must stop (over budget), if it must."""
        ...


class Clock(Protocol):
    def time(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def time(self) -> float:
        return time.time()  # wall clock: a re-attached run keeps the original deadlines

    def sleep(self, seconds: float) -> None:
        crashsafe.pause(seconds)


SYSTEM_CLOCK = SystemClock()


@dataclass(frozen=True)
class Watch:
    agent: Agent
    signal_path: Path
    exit_file: Path
    stop_file: Path
    log_path: Path
    log_offset: int
    started_at: float  # wall clock, so a re-attached run keeps the original deadlines
    timeout: float
    stuck_threshold: float
    grace: float | None  # spawn check deadline; None for scripts
    exit_zero_is_done: bool = False
    stall_patterns: tuple[str, ...] = ()
    reader: StreamReader | None = None  # reads a headless CLI's event stream
    meter: Meter | None = None
    command: str = ""  # the agent's program, named in a "not found" reason
    linger: float = 0.0  # after a signal, how long it may take to end its turn by itself
    poll: float = POLL  # a remote executor's news come at its own pace: no need to look more often
    naps: bool = False  # wait in `agent.nap` between two looks (its host's news cut it short): Capabilities.naps
    attempt: int = 0
    questions: Callable[[], list[Question]] | None = None  # the task's questions (`hive ask`), oldest first
    review: bool = False  # a reviewer's (engine/review.py): its verdict is `hive done` or `hive changes`


def output_tail(watch: Watch, lines: int = 20) -> str:
    """The agent's last words: the pane if tmux still has it, else the log."""
    screen = watch.agent.screen(200)
    if not screen.strip():
        screen = logcap.tail(watch.log_path, 20000, since=watch.log_offset).decode(errors="replace")
    return clean_tail(screen, lines)


class _Follow:
    """Feeds the log's new bytes to the stream reader as the log grows."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.position = watch.log_offset
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.recorded_at = 0.0
        self.recorded: tuple[int, int, float | None] = (0, 0, None)
        self.transient: Trouble | None = None
        self.transient_since = 0.0

    def read(self) -> None:
        reader = self.watch.reader
        if reader is None:
            return
        for _run in range(3):  # the head's rest, then the marker and the tail, of a cut log (hive.logcap)
            got = logcap.chunk(self.watch.log_path, self.position)
            if not got.shown:
                return
            self.position = got.end
            reader.feed(self.decoder.decode(got.shown))

    def meter(self, now: float, final: bool = False) -> str | None:
        """Record usage that changed (at most once a second while it runs)."""
        reader, meter = self.watch.reader, self.watch.meter
        if reader is None or meter is None or (not final and now - self.recorded_at < USAGE_EVERY):
            return None
        u = reader.usage
        current = (u.tokens_in, u.tokens_out, u.cli_cost_usd)
        if current == self.recorded:
            return None
        self.recorded, self.recorded_at = current, now
        return meter.record(u)

    def trouble(self, now: float) -> Trouble | None:
        """Trouble that ends the attempt now: permanent failures and rate limits at
        once; an unreachable API once it has lasted UNREACHABLE_PATIENCE."""
        trouble = self.watch.reader.trouble if self.watch.reader else None
        if trouble is None or trouble.kind != TroubleKind.TRANSIENT:
            return trouble
        if trouble is not self.transient:
            self.transient, self.transient_since = trouble, now
        return trouble if now - self.transient_since >= UNREACHABLE_PATIENCE else None


_ERROR_WORDS = re.compile(r"error|fail|unable|cannot|can't|denied|not found|invalid|refus", re.IGNORECASE)


def last_words(tail: str) -> str:
    """The line of an agent's last output that says why it ended: the last one that
    sounds like an error, else the last one."""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return next((line for line in reversed(lines) if _ERROR_WORDS.search(line)), lines[-1] if lines else "")


def troubled(trouble: Trouble, tail: str) -> Outcome:
    if trouble.kind == TroubleKind.PERMANENT:
        return Outcome(Kind.AGENT_ERROR, trouble.reason, tail)
    if trouble.kind == TroubleKind.RATE_LIMIT:
        return Outcome(Kind.RATE_LIMITED, trouble.reason, tail, resume_at=trouble.resume_at)
    if trouble.kind == TroubleKind.BUDGET:
        return Outcome(Kind.OVER_BUDGET, trouble.reason, tail)
    return Outcome(Kind.CRASHED, trouble.reason, tail)


@dataclass(frozen=True)
class Hooks:
    """What the engine is told while it waits, to record and pass on."""

    stuck: Callable[[float], None] = lambda _idle: None  # no output for this long
    question: Callable[[Question], None] = lambda _q: None  # asked (unanswered), then answered
    waiting: Callable[[Question], None] = lambda _q: None  # at each look while a question waits for its answer


def wait(watch: Watch, hooks: Hooks = Hooks(), clock: Clock = SYSTEM_CLOCK) -> Outcome:
    follow = _Follow(watch)
    # on this machine, woken the moment its signal or exit file is written (a look at every
    # poll all the same); a remote executor's `nap` wakes on its host's news instead
    local = clock is SYSTEM_CLOCK and not watch.naps
    waker = inotify.waiter((watch.signal_path.parent, watch.exit_file.parent)) if local else None
    try:
        outcome = _wait(watch, hooks, clock, follow, waker)
    finally:
        if waker is not None:
            waker.close()
    if watch.linger and outcome.rule.verb:
        # it signalled: let it end its turn, whose last event carries its usage
        deadline = clock.time() + watch.linger
        while clock.time() < deadline and not watch.exit_file.exists() and watch.agent.alive():
            clock.sleep(watch.poll)
    follow.read()  # what it printed up to the end (a signal ends the wait before it is read)
    follow.meter(clock.time(), final=True)
    return outcome


@dataclass
class _Seen:
    """What the wait loop has seen of the attempt so far."""

    size: int  # of its log
    alive_seen: bool  # it printed something
    last_change: float  # when its log last grew
    next_thorough_check: float
    next_screen_check: float = 0.0
    warned: bool = False  # said it is stuck (once per silence)
    asking: Question | None = None  # the question its agent waits on the answer to
    told_to_end: Question | None = None  # a question whose `hive ask` gave up and told it to end
    waited: float = 0.0  # time spent waiting for answers: the timeout does not count it


def _wait(watch: Watch, hooks: Hooks, clock: Clock, follow: _Follow, waker: inotify.Waiter | None) -> Outcome:
    size, now = log_size(watch.log_path), clock.time()
    seen = _Seen(size, size > watch.log_offset, now, next_thorough_check=now + 1.0)
    while True:
        outcome = _look(watch, seen, clock, follow, hooks)
        if outcome is not None:
            _questions(watch, seen, clock.time(), hooks)  # an answer it got since the last look is news too
            return outcome
        if watch.naps:
            watch.agent.nap(watch.poll)  # wakes when its host reports news
            crashsafe.may_stop()
        elif waker is not None:
            waker.wait(watch.poll)
            crashsafe.may_stop()
        else:
            clock.sleep(watch.poll)


def _look(watch: Watch, seen: _Seen, clock: Clock, follow: _Follow, hooks: Hooks) -> Outcome | None:
    """One look at the attempt: how it ended, if it has (or must)."""
    # asked first: a remote executor brings the agent's signal over as it answers
    ended = watch.exit_file.exists() or not watch.agent.alive()
    sig = agent_signals.read(watch.signal_path, watch.review)
    if sig:
        return signalled(sig)
    if watch.stop_file.exists():
        return Outcome(Kind.STOPPED, "stopped by `hive stop`", output_tail(watch))
    now = clock.time()
    if not ended and now >= seen.next_thorough_check:
        seen.next_thorough_check = now + 1.0
        ended = not watch.agent.alive(thorough=True)
        _questions(watch, seen, now, hooks)
    if seen.asking is not None:
        seen.last_change, seen.warned = now, False  # silence while it waits for its human is no stall
    if ended:
        return _exited(watch, seen.alive_seen, clock, follow)
    new_size = log_size(watch.log_path)
    if new_size != seen.size:
        seen.size, seen.last_change, seen.warned = new_size, now, False
        seen.alive_seen = seen.alive_seen or new_size > watch.log_offset
        follow.read()
    over = follow.meter(now)
    if over:
        return Outcome(Kind.OVER_BUDGET, over, output_tail(watch))
    trouble = follow.trouble(now)
    if trouble:
        return troubled(trouble, output_tail(watch))
    told = seen.told_to_end
    if told is not None and now - told.gave_up_at >= ASK_END_GRACE:
        return Outcome(Kind.ASKED, told.text, output_tail(watch))  # it was told to end long ago
    outcome = None if seen.asking else _not_started(watch, seen, now)
    if outcome is None and now > watch.started_at + watch.timeout + seen.waited:
        outcome = Outcome(Kind.TIMEOUT, f"timeout: no signal after {duration(watch.timeout)}", output_tail(watch))
    if outcome is None and not seen.warned and now - seen.last_change > watch.stuck_threshold:
        seen.warned = True
        hooks.stuck(now - seen.last_change)
    return outcome


def _questions(watch: Watch, seen: _Seen, now: float, hooks: Hooks) -> None:
    """Its agent's questions: the time spent waiting for answers (the clocks stop for
    it), and news for the engine when it asks or is answered."""
    if watch.questions is None:
        return
    asked = watch.questions()
    seen.waited = questions.waited(asked, watch.attempt, now)
    waiting = questions.waiting(asked)
    waiting = waiting if waiting is not None and waiting.attempt == watch.attempt else None
    before = seen.asking
    if before is not None and (waiting is None or waiting.number != before.number):
        hooks.question(next((q for q in asked if q.number == before.number), before))
    if waiting is not None and (before is None or waiting.number != before.number):
        hooks.question(waiting)
    seen.asking = waiting
    seen.told_to_end = questions.told_to_end(asked, watch.attempt)
    if waiting is not None:
        hooks.waiting(waiting)


def _not_started(watch: Watch, seen: _Seen, now: float) -> Outcome | None:
    """An agent that printed nothing within its grace period, or that waits at a prompt."""
    if watch.grace is None:  # a script
        return None
    in_grace = now < watch.started_at + watch.grace
    if not seen.alive_seen and not in_grace:
        return Outcome(
            Kind.SPAWN_FAILED,
            f"agent_spawn_failed: no output and no signal within {watch.grace:g}s",
            output_tail(watch),
        )
    # a prompt waits in silence; a TUI at work redraws (its tool calls may show the very
    # words of a prompt: a login page's "Please log in" failed a working agent)
    quiet = now - seen.last_change >= STALL_QUIET
    if in_grace and watch.stall_patterns and now >= seen.next_screen_check and quiet:
        seen.next_screen_check = now + 0.5
        stall = _stalled(watch)
        if stall:
            return Outcome(
                Kind.SPAWN_FAILED,
                f"agent_spawn_failed: the agent is waiting at a prompt ({stall!r}) instead of working",
                output_tail(watch),
            )
    return None


def signalled(sig: Signal) -> Outcome:
    return Outcome(sig.kind, sig.reason)


def _stalled(watch: Watch) -> str | None:
    return stall_match(watch.stall_patterns, watch.agent.screen(50))


def exit_status(path: Path, clock: Clock, patience: float = 1.0) -> int | None:
    """The command's exit status, written by the executor's wrapper as it ends (None
    if the wrapper itself was killed)."""
    deadline = clock.time() + patience
    while True:
        try:
            text = path.read_text().strip()
            return int(text) if text.lstrip("-").isdigit() else None
        except FileNotFoundError:
            if clock.time() > deadline:
                return None
            clock.sleep(POLL)


def _exited(watch: Watch, alive_seen: bool, clock: Clock, follow: _Follow) -> Outcome:
    sig = agent_signals.read(watch.signal_path, watch.review)  # it may have signalled just before exiting
    lost = watch.agent.gone() if sig is None else ""
    if lost:
        return Outcome(Kind.LOST, lost, output_tail(watch))
    status = exit_status(watch.exit_file, clock) if sig is None else None
    follow.read()
    if watch.reader is not None:
        watch.reader.close()
    over = follow.meter(clock.time(), final=True)
    ended_itself = signalled(sig) if sig else _asked(watch)
    if ended_itself:
        return ended_itself
    if over and status != 0:
        return Outcome(Kind.OVER_BUDGET, over, output_tail(watch))
    if watch.grace is None:  # a script: its exit status says it all
        if status == 0:
            return Outcome(Kind.DONE, "script finished")
        return Outcome(Kind.SCRIPT_FAILED, f"script exited with status {status}", output_tail(watch))
    trouble = watch.reader.trouble if watch.reader else None
    if trouble is not None and trouble.kind != TroubleKind.TRANSIENT:
        return troubled(trouble, output_tail(watch))  # aider exits 0 after a failed API call
    if watch.exit_zero_is_done and status == 0:
        return Outcome(Kind.DONE, "agent exited with status 0")
    tail = output_tail(watch)
    if trouble is not None and status != 127:
        return troubled(trouble, tail)
    early = not alive_seen or clock.time() < watch.started_at + watch.grace
    return _agent_exited(watch, status, tail, early)


def _asked(watch: Watch) -> Outcome | None:
    """An agent whose `hive ask` gave up waiting told it to end: that is not a crash."""
    unanswered = questions.left_unanswered(watch.questions(), watch.attempt) if watch.questions else None
    return Outcome(Kind.ASKED, unanswered.text, output_tail(watch)) if unanswered else None


def _agent_exited(watch: Watch, status: int | None, tail: str, early: bool) -> Outcome:
    """An agent that exited without a signal, and without trouble its output explains."""
    if status == 127:
        said = last_words(tail) or f"`{watch.command}`"
        # a program that is here but was not found where the agent ran (its sandbox, a node) is
        # not one to install (issue 43)
        there = os.sep in watch.command and os.path.exists(watch.command)
        fix = (
            f"`{watch.command}` exists here, but not where its agent ran: see `hive doctor`"
            if there
            else "install it or fix the agent profile's command in .hive/config.toml"
        )
        return Outcome(
            Kind.AGENT_ERROR,
            f"command not found (exit 127: {said}); {fix}, then `hive retry` (`hive doctor` checks)",
            tail,
        )
    if status == 0:
        # it finished its turn without signalling: what it committed is kept for the next attempt
        return Outcome(Kind.CRASHED, "the agent exited (status 0) without running `hive done`", tail)
    if early:
        # an agent that ends this early never really started (missing binary, not logged in...)
        said = f": {last_words(tail)}" if tail else ""
        return Outcome(
            Kind.SPAWN_FAILED,
            f"agent_spawn_failed: the agent exited (status {status}) within {watch.grace:g}s without signalling{said}",
            tail,
        )
    return Outcome(Kind.CRASHED, f"crashed: the agent exited (status {status}) without signalling", tail)
