"""The one user-error exception, caught at the CLI and dodo boundaries."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path


class HiveError(Exception):
    """A problem the user can fix: bad plan, bad config, bad state or command.

    `problems` holds one line per problem (file:line, what, how to fix), so a
    plan with several mistakes is reported all at once.
    """

    def __init__(self, *problems: str) -> None:
        self.problems = [p for p in problems if p] or ["unknown error"]
        super().__init__("\n".join(self.problems))

    def __reduce__(self) -> tuple[type[HiveError], tuple[str, ...]]:
        # pickled whole (a Ray node's error reaches the controller so): not by its message alone
        return (type(self), tuple(self.problems))


class CommandError(Exception):
    """A subprocess failed: shows the command, exit code and output tail."""

    def __init__(self, argv: list[str], code: int, output: str) -> None:
        self.argv = argv
        self.code = code
        self.output = output
        tail = "\n".join(output.strip().splitlines()[-15:])
        super().__init__(f"`{' '.join(argv)}` exited with {code}:\n{tail}")

    def __reduce__(self) -> tuple[type[CommandError], tuple[list[str], int, str]]:
        # by default an exception is pickled as its class and message, which this __init__ does not take
        return (type(self), (self.argv, self.code, self.output))


def user_message(exc: BaseException) -> str | None:
    """What to tell the user about an error without a traceback; None for a bug.

    The one error edge shared by the CLI and the doit task runner: a git or tmux
    failure is a clear failure that shows the command and its output, never an
    "internal error"."""
    if isinstance(exc, HiveError):
        return "\n".join(exc.problems)
    if isinstance(exc, CommandError):
        return str(exc)
    return None


@dataclass(frozen=True)
class Failure:
    message: str
    bug: bool  # not the user's doing: its traceback is in the log


def at_the_edge(exc: BaseException, log: Path, title: str) -> Failure:
    """The one error edge, shared by the CLI and every doit task: a user error becomes
    its message; anything else is a bug, its traceback logged under `title`."""
    message = user_message(exc)
    if message is not None:
        return Failure(message, bug=False)
    return Failure(f"internal error: {exc!r} ({record_bug(log, title)})", bug=True)


def record_bug(log: Path, title: str) -> str:
    """Append the traceback being handled to `log`; returns where to find it (or the
    traceback itself when the log cannot be written)."""
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as f:
            f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {title}\n{traceback.format_exc()}")
        return f"traceback in {log}"
    except OSError:
        return traceback.format_exc()


def record_warning(log: Path, title: str, message: str) -> None:
    """Append a warning that must never stop anything (a notification that did not
    arrive) to `log`, in record_bug's format; a log that cannot be written is let go."""
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as f:
            f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {title}\nwarning: {message}\n")
    except OSError:
        pass
