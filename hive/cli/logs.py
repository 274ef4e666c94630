"""`hive logs`: a task's agent output, as the terminal showed it (no escape codes,
no overwritten spinner frames); `--raw` for the bytes as logged. Read through
`hive.reports.tasklog` (the log's logical offsets: hive.logcap), so following a log whose
middle is cut meanwhile goes on from its marker."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque
from pathlib import Path

from hive.errors import HiveError
from hive.lifecycle import State
from hive.output import shown_line
from hive.plan import discovered
from hive.project import load_project
from hive.reports import tasklog
from hive.reports.tasklog import Reader
from hive.store.names import parse_key, task_key
from hive.store.paths import Paths, find_root
from hive.store.state import StateStore

FOLLOW_POLL = 0.2


def run(args: argparse.Namespace) -> int:
    plan, task_id = parse_key(args.task)
    root = find_root()
    paths = Paths(root)
    log = paths.log_file(plan, task_id)
    if not log.exists():
        why = _no_log(root, plan, task_id)
        if why is not None:
            raise why
        print(f"hive: no log for {task_key(plan, task_id)} yet: it has not started")  # not an error (issue 43)
        return 0
    store = StateStore(paths)
    read = tasklog.reader(root, store, plan, task_id)
    data, position = tasklog.read_all(read, 0)
    if args.raw:
        _write_raw(_last_lines(data, args.lines))
    else:
        _print_tail(data, args.lines)
    if args.follow:
        _follow(read, position, store, plan, task_id, args.raw)
    return 0


def _no_log(root: Path, plan_name: str, task_id: str) -> HiveError | None:
    """Why there is no log, when that is an error: a plan or task that does not exist is not
    one that "has not started" (a typo would otherwise send the user waiting for it); None for
    a task that has not started."""
    key = task_key(plan_name, task_id)
    try:
        plans = load_project(root, strict=False).plans
    except HiveError:  # a broken config does not make the question wrong
        return None
    try:
        plan = plans.plan(plan_name)
    except HiveError as e:  # no plan named so; it lists the plans there are
        return e
    if any(t.id == task_id for t in plan.tasks):
        return None
    if discovered.find(Paths(root), plan_name, task_id):
        return HiveError(f"{key} is discovered work waiting for review; it runs (and logs) only once approved")
    return HiveError(f"plan {plan_name} has no task {task_id!r}; its tasks: {', '.join(t.id for t in plan.tasks)}")


def _print_tail(data: bytes, lines: int) -> None:
    kept: deque[str] = deque(maxlen=max(lines, 0))
    for line in data.decode(errors="replace").split("\n"):
        text = shown_line(line)
        if text.strip() or (kept and kept[-1].strip()):
            kept.append(text)
    _write("\n".join(kept) + ("\n" if kept else ""))


def _last_lines(data: bytes, lines: int) -> bytes:
    """The last `lines` lines of the bytes, as `tail -n` shows them."""
    if lines <= 0:
        return b""
    parts = data.split(b"\n")
    return b"\n".join(parts[-(lines + 1) :] if data.endswith(b"\n") else parts[-lines:])


def _follow(read: Reader, position: int, store: StateStore, plan: str, task_id: str, raw: bool = False) -> None:
    """New output as it comes, until the task is no longer running (then what is left)."""
    partial = b""
    while True:
        got = read(position)
        data, position = got.shown, got.end
        if raw:
            _write_raw(data)
            lines: list[bytes] = []
        else:
            lines = (partial + data).split(b"\n")
            partial = lines.pop()
        if lines:
            _write("".join(shown_line(line.decode(errors="replace")) + "\n" for line in lines))
        if not data and store.read(plan, task_id).state != State.IN_PROGRESS:
            if partial:
                _write(shown_line(partial.decode(errors="replace")) + "\n")
            return
        if not data:
            time.sleep(FOLLOW_POLL)


def _write(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `hive logs x | head`
        _gone()


def _write_raw(data: bytes) -> None:
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except BrokenPipeError:
        _gone()


def _gone() -> None:
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise SystemExit(0) from None
