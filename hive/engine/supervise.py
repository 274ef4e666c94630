"""Watching one running agent until it signals, dies, stalls or times out.

The loop costs a few syscalls every 50 ms (signal file, pane pid, log size), so
a signal is seen well under a second after it is sent; tmux is asked only when
something changed.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hive.adapters import tmux
from hive.adapters.processes import pid_alive
from hive.settings.agents import stall_match
from hive.store import agent_signals

POLL = 0.025
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\r")


@dataclass(frozen=True)
class Watch:
    session: str
    pane_pid: int
    signal_path: Path
    exit_file: Path
    stop_file: Path
    log_path: Path
    log_offset: int
    started_at: float           # wall clock, so a re-attached run keeps the original deadlines
    timeout: float
    stuck_threshold: float
    grace: float | None         # spawn check deadline; None for scripts
    exit_zero_is_done: bool = False
    stall_patterns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    kind: str   # done | blocked | too_big | stopped | crashed | spawn_failed | timeout | script_failed
    reason: str = ""
    output_tail: str = ""


def log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def output_tail(watch: Watch, lines: int = 20) -> str:
    """The agent's last words: the pane if tmux still has it, else the log."""
    screen = tmux.capture(watch.session, 200)
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
    kept = [ln.rstrip() for ln in _ANSI.sub("", text).splitlines()
            if ln.strip() and not ln.startswith("Pane is dead")]
    return "\n".join(kept[-lines:])


def wait(watch: Watch, on_stuck: Callable[[float], None] = lambda idle: None) -> Outcome:
    size = log_size(watch.log_path)
    alive_seen = size > watch.log_offset
    last_change = time.time()
    next_screen_check = 0.0
    next_pane_check = time.time() + 1.0
    warned = False
    while True:
        sig = agent_signals.read(watch.signal_path)
        if sig:
            return Outcome(sig.kind, sig.reason)
        if watch.stop_file.exists():
            return Outcome("stopped", "stopped by `hive stop`", output_tail(watch))
        now = time.time()
        if watch.exit_file.exists() or not pid_alive(watch.pane_pid):
            return _exited(watch, alive_seen)
        if now >= next_pane_check:  # backstop where /proc cannot tell a zombie
            next_pane_check = now + 1.0
            pane = tmux.pane(watch.session)
            if pane is None or pane.dead:
                return _exited(watch, alive_seen)
        new_size = log_size(watch.log_path)
        if new_size != size:
            size, last_change, alive_seen = new_size, now, alive_seen or new_size > watch.log_offset
            warned = False
        in_grace = watch.grace is not None and now < watch.started_at + watch.grace
        if watch.grace is not None and not alive_seen and not in_grace:
            return Outcome("spawn_failed", f"agent_spawn_failed: no output and no signal within "
                                           f"{watch.grace:g}s", output_tail(watch))
        if in_grace and watch.stall_patterns and now >= next_screen_check:
            next_screen_check = now + 0.5
            stall = _stalled(watch)
            if stall:
                return Outcome("spawn_failed", f"agent_spawn_failed: the agent is waiting at a prompt "
                                               f"({stall!r}) instead of working", output_tail(watch))
        if now > watch.started_at + watch.timeout:
            return Outcome("timeout", f"timeout: no signal after {watch.timeout / 60:g} min", output_tail(watch))
        if not warned and now - last_change > watch.stuck_threshold:
            warned = True
            on_stuck(now - last_change)
        time.sleep(POLL)


def _stalled(watch: Watch) -> str | None:
    return stall_match(watch.stall_patterns, tmux.capture(watch.session, 50))


def exit_status(path: Path, patience: float = 1.0) -> int | None:
    """The command's exit status, written by the pane's wrapper as it ends (None if
    the wrapper itself was killed)."""
    deadline = time.time() + patience
    while True:
        try:
            text = path.read_text().strip()
            return int(text) if text.lstrip("-").isdigit() else None
        except FileNotFoundError:
            if time.time() > deadline:
                return None
            time.sleep(POLL)


def _exited(watch: Watch, alive_seen: bool) -> Outcome:
    sig = agent_signals.read(watch.signal_path)   # it may have signalled just before exiting
    if sig:
        return Outcome(sig.kind, sig.reason)
    status = exit_status(watch.exit_file)
    if watch.grace is None and status == 0:
        return Outcome("done", "script finished")
    if watch.exit_zero_is_done and status == 0:
        return Outcome("done", "agent exited with status 0")
    tail = output_tail(watch)
    if watch.grace is None:
        return Outcome("script_failed", f"script exited with status {status}", tail)
    if not alive_seen or time.time() < watch.started_at + (watch.grace or 0):
        # an agent that ends this early never really started (missing binary, not logged in...)
        return Outcome("spawn_failed", f"agent_spawn_failed: the agent exited (status {status}) "
                                       f"within {watch.grace:g}s without signalling", tail)
    return Outcome("crashed", f"crashed: the agent exited (status {status}) without signalling", tail)
