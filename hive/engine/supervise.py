"""Watching one running agent until it signals, dies, stalls or times out.

The loop costs a few syscalls every 25 ms (signal file, agent alive, log size), so
a signal is seen well under a second after it is sent; the executor's service
(tmux) is asked once a second. Time comes from a `Clock`, so the rules (spawn
grace, stall, timeout) are unit-tested without waiting for them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hive.executors import AgentRef, Executor
from hive.lifecycle import Kind, Outcome
from hive.settings.agents import stall_match
from hive.store import agent_signals
from hive.store.agent_signals import Signal

POLL = 0.025
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\r")


class Clock(Protocol):
    def time(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def time(self) -> float:
        return time.time()  # wall clock: a re-attached run keeps the original deadlines

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK = SystemClock()


@dataclass(frozen=True)
class Watch:
    agent: AgentRef
    executor: Executor
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


def log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def output_tail(watch: Watch, lines: int = 20) -> str:
    """The agent's last words: the pane if tmux still has it, else the log."""
    screen = watch.executor.screen(watch.agent.name, 200)
    if not screen.strip():
        try:
            with open(watch.log_path, "rb") as f:
                f.seek(max(watch.log_offset, log_size(watch.log_path) - 20000))
                screen = f.read().decode(errors="replace")
        except FileNotFoundError:
            screen = ""
    return clean_tail(screen, lines)


def clean_tail(text: str, lines: int) -> str:
    """The last lines worth reading: no terminal escapes, no blank lines, and not tmux's
    own "Pane is dead" notice (remain-on-exit)."""
    kept = [ln.rstrip() for ln in _ANSI.sub("", text).splitlines() if ln.strip() and not ln.startswith("Pane is dead")]
    return "\n".join(kept[-lines:])


def wait(watch: Watch, on_stuck: Callable[[float], None] = lambda idle: None, clock: Clock = SYSTEM_CLOCK) -> Outcome:
    size = log_size(watch.log_path)
    alive_seen = size > watch.log_offset
    last_change = clock.time()
    next_screen_check = 0.0
    next_thorough_check = clock.time() + 1.0
    warned = False
    while True:
        sig = agent_signals.read(watch.signal_path)
        if sig:
            return signalled(sig)
        if watch.stop_file.exists():
            return Outcome(Kind.STOPPED, "stopped by `hive stop`", output_tail(watch))
        now = clock.time()
        if watch.exit_file.exists() or not watch.executor.alive(watch.agent):
            return _exited(watch, alive_seen, clock)
        if now >= next_thorough_check:
            next_thorough_check = now + 1.0
            if not watch.executor.alive(watch.agent, thorough=True):
                return _exited(watch, alive_seen, clock)
        new_size = log_size(watch.log_path)
        if new_size != size:
            size, last_change, alive_seen = new_size, now, alive_seen or new_size > watch.log_offset
            warned = False
        in_grace = watch.grace is not None and now < watch.started_at + watch.grace
        if watch.grace is not None and not alive_seen and not in_grace:
            return Outcome(
                Kind.SPAWN_FAILED,
                f"agent_spawn_failed: no output and no signal within {watch.grace:g}s",
                output_tail(watch),
            )
        if in_grace and watch.stall_patterns and now >= next_screen_check:
            next_screen_check = now + 0.5
            stall = _stalled(watch)
            if stall:
                return Outcome(
                    Kind.SPAWN_FAILED,
                    f"agent_spawn_failed: the agent is waiting at a prompt ({stall!r}) instead of working",
                    output_tail(watch),
                )
        if now > watch.started_at + watch.timeout:
            return Outcome(Kind.TIMEOUT, f"timeout: no signal after {watch.timeout / 60:g} min", output_tail(watch))
        if not warned and now - last_change > watch.stuck_threshold:
            warned = True
            on_stuck(now - last_change)
        clock.sleep(POLL)


def signalled(sig: Signal) -> Outcome:
    return Outcome(sig.kind, sig.reason)


def _stalled(watch: Watch) -> str | None:
    return stall_match(watch.stall_patterns, watch.executor.screen(watch.agent.name, 50))


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


def _exited(watch: Watch, alive_seen: bool, clock: Clock) -> Outcome:
    sig = agent_signals.read(watch.signal_path)  # it may have signalled just before exiting
    if sig:
        return signalled(sig)
    status = exit_status(watch.exit_file, clock)
    if watch.grace is None and status == 0:
        return Outcome(Kind.DONE, "script finished")
    if watch.exit_zero_is_done and status == 0:
        return Outcome(Kind.DONE, "agent exited with status 0")
    tail = output_tail(watch)
    if watch.grace is None:
        return Outcome(Kind.SCRIPT_FAILED, f"script exited with status {status}", tail)
    if not alive_seen or clock.time() < watch.started_at + (watch.grace or 0):
        # an agent that ends this early never really started (missing binary, not logged in...)
        return Outcome(
            Kind.SPAWN_FAILED,
            f"agent_spawn_failed: the agent exited (status {status}) within {watch.grace:g}s without signalling",
            tail,
        )
    return Outcome(Kind.CRASHED, f"crashed: the agent exited (status {status}) without signalling", tail)
