"""Agent → orchestrator signals: one small file per task *attempt*, so a leftover
agent of an old attempt can never finish a newer one. Agents only ever write
these (and notes); the orchestrator alone writes task state."""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive import agentshim, scripts
from hive.errors import HiveError
from hive.lifecycle import REVIEW_SIGNALS, SIGNALS, Kind
from hive.store.files import NOTES, SMALL, NotAFile, append_line, atomic_write, read_untrusted
from hive.store.names import PLAN_RE, SAFE_RE, split_key, task_key
from hive.store.paths import Paths

KINDS = frozenset(SIGNALS.values())
READ = KINDS | {Kind.BAD_FILE}  # what a signal file read back may say (a Ray node sends BAD_FILE so)
REVIEW_KINDS = frozenset(REVIEW_SIGNALS.values())  # a reviewer's verdicts (engine/review.py)
REVIEW_VARIABLE = "HIVE_REVIEW"  # set for a reviewer: which review it is


@dataclass(frozen=True)
class Signal:
    kind: Kind
    reason: str
    time: float
    exited: bool = False  # not sent: a script's exit status 0, found while no run watched it


def script_finished(paths: Paths, plan: str, task_id: str, attempt: int) -> Signal | None:
    """A script's attempt whose exit status says it succeeded: its done, as an agent's `hive
    done` (a script has no other way to say it). Only a script's attempt has a script file."""
    if not paths.script_file(plan, task_id, attempt).exists():
        return None
    exit_file = paths.exit_file(plan, task_id, attempt)
    try:
        status = read_untrusted(exit_file, SMALL).strip()
    except (FileNotFoundError, NotAFile):
        return None
    return Signal(Kind.DONE, "script finished", exit_file.stat().st_mtime, exited=True) if status == b"0" else None


@dataclass(frozen=True)
class AgentIdentity:
    """Who is signalling, from the environment Hive gave the agent."""

    root: Path
    plan: str
    task_id: str
    attempt: int

    @classmethod
    def from_env(cls) -> AgentIdentity:
        key, attempt, root = (os.environ.get(v, "") for v in ("HIVE_TASK", "HIVE_ATTEMPT", "HIVE_ROOT"))
        if not key or not attempt.isdigit() or not root:
            raise HiveError(
                "this command is for agents run by Hive: HIVE_TASK, HIVE_ATTEMPT and HIVE_ROOT "
                "are not set (run it inside the task's tmux session)"
            )
        try:
            plan, task_id = split_key(key)
        except ValueError:
            raise HiveError(f"HIVE_TASK={key!r} is not <plan>:<ID>") from None
        if not PLAN_RE.match(plan) or not SAFE_RE.match(task_id):
            raise HiveError(f"HIVE_TASK={key!r} is not a Hive task name (letters, digits, '.', '_', '-')")
        return cls(Path(root), plan, task_id, int(attempt))

    @property
    def key(self) -> str:
        return task_key(self.plan, self.task_id)


def send(who: AgentIdentity, kind: Kind, reason: str) -> bool:
    """Record a signal; False if this attempt already signalled (the first one counts). A
    reviewer's goes where Hive told it (HIVE_SIGNAL_FILE: its review's own folder)."""
    if kind not in KINDS | REVIEW_KINDS:
        raise ValueError(kind)
    told = os.environ.get(agentshim.SIGNAL_FILE, "")
    path = (
        told
        if told and os.environ.get(REVIEW_VARIABLE)
        else str(Paths(who.root).signal_file(who.plan, who.task_id, who.attempt))
    )
    return agentshim.send(path, kind.value, reason, who.key, who.attempt)


def read(path: Path, review: bool = False) -> Signal | None:
    """The attempt's signal (or a reviewer's verdict, with `review`), if it sent one. Its folder
    is the agent's to write: a signal file that is not one (a FIFO, a link to /dev/zero, a huge
    file) ends its attempt as BAD_FILE, never the watch (it hung there: issue 37); one that is not
    a signal's JSON is no signal."""
    try:
        raw = read_untrusted(path, SMALL)
    except FileNotFoundError:
        return None
    except NotAFile as e:
        return Signal(Kind.BAD_FILE, bad_signal(e), 0.0)
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    # a file an agent (or anyone) wrote by hand must not end the watch with a traceback
    kinds = READ | REVIEW_KINDS if review else READ
    if not isinstance(data, dict) or not isinstance(data.get("signal"), str) or data["signal"] not in kinds:
        return None
    try:
        sent = float(data.get("time", 0))
    except (TypeError, ValueError):
        sent = 0.0
    return Signal(Kind(data["signal"]), str(data.get("reason", "")), sent)


def bad_signal(e: NotAFile) -> str:
    return f"its signal file is {e.what}"


def bad_file(reason: str) -> str:
    """The signal a Ray node sends for a file its agent left that is not one (read back as
    BAD_FILE): its signal file, its private git directory's."""
    return json.dumps({"signal": Kind.BAD_FILE.value, "reason": reason, "time": time.time()})


def add_note(who: AgentIdentity, text: str) -> None:
    path = Paths(who.root).notes_file(who.plan, who.task_id)
    append_line(path, json.dumps({"attempt": who.attempt, "time": time.time(), "text": text}))


def notes_of(paths: Paths, tasks: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The notes of each (plan, task id) that has any, the folder listed once: a report
    rewritten as each task of a long plan finishes must not try to open every task's file."""
    try:
        present = {entry.name for entry in os.scandir(paths.notes)}
    except FileNotFoundError:
        return {}
    wanted = [t for t in tasks if paths.notes_file(*t).name in present]
    return {t: found for t in wanted if (found := notes(paths, *t))}


def notes(paths: Paths, plan: str, task_id: str) -> list[dict[str, Any]]:
    """The task's notes (the newest NOTES bytes of them: its agents write the file, as much as
    they like), each a JSON object with its text; a file that is not one has none."""
    try:
        raw = read_untrusted(paths.notes_file(plan, task_id), NOTES, tail=True)
    except (FileNotFoundError, NotAFile):
        return []
    out = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        try:
            note = json.loads(line)
        except ValueError:
            continue  # the first line of a cut file, or one written by hand
        if isinstance(note, dict) and isinstance(note.get("text"), str):
            # its readers compare and format these: what a hand wrote there must not crash them
            attempt, at = note.get("attempt"), note.get("time")
            out.append(
                {
                    "attempt": attempt if isinstance(attempt, int) else 0,
                    "time": float(at) if isinstance(at, (int, float)) else 0.0,
                    "text": note["text"],
                }
            )
    return out


def ensure_shim(paths: Paths) -> Path:
    """`.hive/bin/hive` runs this very Hive, so agents find `hive` even when it lives in a venv:
    its signals quickly (hive.agentshim), the rest as `python -m hive`."""
    shim = paths.shim
    text = agentshim.shim(shlex.join(scripts.argv(agentshim.__file__)))
    if not shim.exists() or shim.read_text() != text:
        atomic_write(shim, text)
        shim.chmod(0o755)
    return shim.parent
