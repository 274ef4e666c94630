"""What Hive prints for people, shared by every layer: progress lines, durations, and the
tail of a command's or an agent's output. It imports nothing of Hive but `hive.logcap` (which
imports nothing), so the engine, the executors, the reports and notify can all use it without
importing one another."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, cast

from hive import logcap

# terminal escapes: CSI sequences, OSC strings, charset selection, keypad modes
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>]")
LONG_LINE = 300  # a tail line longer than this (a JSON event) is cut


CLEAR_LINE = "\r\x1b[2K"  # erases the live progress line a run draws on a terminal


def say(message: str) -> None:
    """Progress for the user, one line (see `emit`)."""
    emit(f"hive: {message}\n")


def emit(text: str) -> None:
    """`text` for the user on the run's stdout — the real one: doit captures its actions' —
    so `doit | tee run.log` keeps every line Hive says (issue 43), in one write: doit's workers
    share the stream, and print() writes a line and its newline apart (two workers stopping at
    once ran their lines together). On a terminal the progress line is erased first (the run
    draws it again), so no message is glued to it. A closed terminal must not turn into a task
    error."""
    stream = sys.__stdout__
    if stream is None:
        return
    text = safe(text)
    try:
        stream.write(CLEAR_LINE + text if live() else text)
        stream.flush()
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a reentrant write from a signal handler
        pass


@functools.cache
def live() -> bool:
    """Is the run's output a terminal (where a progress line is drawn and erased)? Asked once."""
    try:
        return sys.__stdout__ is not None and sys.__stdout__.isatty()
    except (OSError, ValueError):
        return False


def prefixed(report: Callable[[str], None], key: str) -> Callable[[str], None]:
    return lambda line: report(f"{key}: {line}")


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def duration(seconds: float) -> str:
    """A duration as people write it — 0.5s, 12s, 5m, 3m05s, 1h, 2h10m — in every
    message (a 5 s timeout once printed as "0.0833333 min")."""
    if seconds < 10 and seconds != int(seconds):
        return f"{round(seconds, 1):g}s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        m, s = divmod(whole, 60)
        return f"{m}m{s:02d}s" if s else f"{m}m"
    h, m = divmod(whole // 60, 60)
    return f"{h}h{m:02d}m" if m else f"{h}h"


def shown_line(line: str) -> str:
    """A line as the terminal last showed it: no escapes, and what a carriage return
    overwrote (a spinner) gone."""
    return ANSI.sub("", line.rstrip("\r")).rsplit("\r", 1)[-1]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# what may drive or deceive a terminal: control characters (escape sequences set its title, write
# the clipboard with OSC 52, clear or hide text) and the invisible marks that reorder what is shown
# (bidirectional overrides); a newline and a tab stay
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe(text: str) -> str:
    """Text bound for a human's terminal, of which an agent may have written any part (a note, a
    reason, a question, a review, a file name): every control character shown escaped (`\\x1b`),
    the words kept (issue 44). The one sanitiser: `emit` and the `hive` command's output pass
    everything through it; the dashboard escapes by construction and JSON escapes itself."""
    return _UNSAFE.sub(_escaped, text)


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class SafeStream:
    """A text stream whose every write passes through `safe`: what the `hive` command prints
    (hive.cli.main installs it over stdout and stderr), so no verb can forget it."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @classmethod
    def over(cls, stream: TextIO) -> TextIO:
        """`stream` made safe (once: a stream already safe is kept as it is)."""
        return stream if isinstance(stream, cls) else cast(TextIO, cls(stream))

    def write(self, text: str) -> int:
        self._stream.write(safe(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, buffer, encoding, ...
        return getattr(self._stream, name)


def plain(text: str) -> str:
    """Text an agent wrote, safe to show on a human's terminal: no escapes, no control
    characters (a question could otherwise rewrite the screen of whoever reads it)."""
    return _CONTROL.sub("", ANSI.sub("", text))


def tail(text: str, lines: int) -> str:
    """The last `lines` lines of a command's output, as it printed them."""
    return "\n".join(text.strip().splitlines()[-lines:])


def clean_tail(text: str, lines: int) -> str:
    """The last lines of a terminal's output worth reading: no terminal escapes, no blank
    lines, not tmux's own "Pane is dead" notice (remain-on-exit), long lines cut."""
    text = ANSI.sub("", text).replace("\r", "")
    kept = [ln.rstrip() for ln in text.splitlines() if ln.strip() and not ln.startswith("Pane is dead")]
    return "\n".join(ln if len(ln) <= LONG_LINE else ln[: LONG_LINE - 1] + "…" for ln in kept[-lines:])


def log_size(path: Path) -> int:
    """How much an agent's log has received: its logical size (hive.logcap), which a cut of its
    middle does not shrink, so it grows with every byte the agent prints."""
    return logcap.size(path)
