"""`.hive/hive.log`: where a bug's traceback goes, with the versions a bug report needs, and
warnings that must never stop anything. The one error edge (`at_the_edge`) is shared by the
CLI and every doit task."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from hive.errors import user_message


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
    trace = traceback.format_exc()  # before anything else runs
    # the whole entry before the file is opened: the versions take ~70 ms (git, tmux), and a
    # kill -9 meanwhile left an empty log that said a bug happened but not which (seen in the soak)
    entry = f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {title}\n{_versions()}\n{trace}"
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as f:
            f.write(entry)
        return f"traceback in {log}"
    except OSError:
        return trace


def record_warning(log: Path, title: str, message: str) -> None:
    """Append a warning that must never stop anything (a notification that did not
    arrive) to `log`, in record_bug's format; a log that cannot be written is let go."""
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as f:
            f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {title}\nwarning: {message}\n")
    except OSError:
        pass


def _versions() -> str:
    # imported here: every `hive done` an agent runs loads this module, and the versions
    # (importlib.metadata, git, tmux) cost it ~70 ms it needs only when a bug is logged
    from hive import about

    try:
        return about.one_line()
    except Exception as e:  # noqa: BLE001 — a bug report is written whatever else is broken
        return f"versions unknown: {e!r}"
