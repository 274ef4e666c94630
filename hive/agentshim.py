"""What `.hive/bin/hive`, the `hive` on every agent's PATH, runs:
`python -I -S` with this module and ARGS... (hive.scripts).

An agent's one certain call is its signal, `hive done` (or `blocked`, `too-big`), and each
task pays for it: `python -m hive` costs ~120 ms of CPU (site, the venv's import hooks, the
CLI), a third of all Hive spends on an instant task (bench/merge_queue.py's replay is bound
by CPU). Here, with `-I -S` and the standard library only, a signal costs ~15 ms. It is
written where Hive said (HIVE_SIGNAL_FILE, the attempt's `Paths.signal_file`), exactly as
`hive.store.agent_signals.send` writes one (it calls `send` below).

Anything else, and any form of a signal this does not know (`--help`, another option, no
HIVE_SIGNAL_FILE), becomes `python -m hive ARGS...`: the whole CLI, with its checks and errors.
"""

from __future__ import annotations

import os
import sys
import time

try:  # how json.dumps quotes a string, without importing json: its `re` costs ~10 ms a signal
    from _json import encode_basestring_ascii as _quoted
except ImportError:  # another Python than CPython
    from json import dumps as _quoted

# verb → the signal's kind: hive.lifecycle.SIGNALS, as plain strings (a test keeps them equal);
# and a reviewer's (REVIEW_SIGNALS: done, changes), only where HIVE_REVIEW says it is one
KINDS = {"done": "done", "blocked": "blocked", "too-big": "too_big"}
REVIEW_KINDS = {"done": "done", "changes": "changes"}
SIGNAL_FILE = "HIVE_SIGNAL_FILE"
REVIEW = "HIVE_REVIEW"


def send(path: str, kind: str, reason: str, task: str, attempt: int) -> bool:
    """Create the signal file `path` unless it exists: True if this call created it (the first
    signal of an attempt counts). Whole or absent after a kill -9: written beside it, synced,
    then linked into place (a link fails where a file already is)."""
    payload = _payload(kind, reason, time.time(), task, attempt)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        try:
            os.write(fd, payload.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)


def _payload(kind: str, reason: str, at: float, task: str, attempt: int) -> str:
    """The signal as `json.dumps` writes it (a test holds the two equal)."""
    kind, reason, task = _quoted(kind), _quoted(reason), _quoted(task)
    return f'{{"signal": {kind}, "reason": {reason}, "time": {float(at)!r}, "task": {task}, "attempt": {int(attempt)}}}'


def said(task: str, verb: str, attempt: int | str, sent: bool) -> str:
    """What an agent is told of its signal (the whole CLI's `hive done` says the same)."""
    if sent:
        return f"hive: {task} signalled {verb}; Hive takes it from here — stop now."
    return f"hive: {task} attempt {attempt} had already signalled; this one is ignored."


def _reason(args: list[str]) -> str | None:
    """`--reason R`, `--reason=R` or nothing; None for anything else (the full CLI decides)."""
    if not args:
        return ""
    if len(args) == 2 and args[0] == "--reason":
        return args[1]
    if len(args) == 1 and args[0].startswith("--reason="):
        return args[0].removeprefix("--reason=")
    return None


def main(args: list[str]) -> int:
    path, task, attempt = (os.environ.get(v, "") for v in (SIGNAL_FILE, "HIVE_TASK", "HIVE_ATTEMPT"))
    kinds = REVIEW_KINDS if os.environ.get(REVIEW) else KINDS
    reason = _reason(args[1:]) if args and args[0] in kinds else None
    if reason is None or not path or not task or not attempt.isdigit():
        os.execv(sys.executable, [sys.executable, "-m", "hive", *args])
    verb = args[0]
    print(said(task, verb, attempt, send(path, kinds[verb], reason, task, int(attempt))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
