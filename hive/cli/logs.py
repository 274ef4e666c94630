"""`hive logs`: a task's agent output, as the terminal showed it (no escape codes,
no overwritten spinner frames); `--raw` for the bytes as logged."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import deque
from typing import BinaryIO

from hive.errors import HiveError
from hive.lifecycle import State
from hive.store.names import parse_key
from hive.store.paths import Paths, find_root
from hive.store.state import StateStore
from hive.streams.base import clean

FOLLOW_POLL = 0.2


def run(args: argparse.Namespace) -> int:
    plan, task_id = parse_key(args.task)
    paths = Paths(find_root())
    log = paths.log_file(plan, task_id)
    if not log.exists():
        raise HiveError(f"no log for {args.task} yet (it has not started)")
    if args.raw:
        argv = ["tail", "-n", str(args.lines), *(["-F"] if args.follow else []), str(log)]
        os.execvp(argv[0], argv)
    with open(log, "rb") as f:
        position = _print_tail(f, args.lines)
        if args.follow:
            _follow(f, position, StateStore(paths), plan, task_id)
    return 0


def _print_tail(f: BinaryIO, lines: int) -> int:
    kept: deque[str] = deque(maxlen=max(lines, 0))
    data = f.read()
    for line in data.decode(errors="replace").split("\n"):
        text = clean(line)
        if text.strip() or (kept and kept[-1].strip()):
            kept.append(text)
    _write("\n".join(kept) + ("\n" if kept else ""))
    return len(data)


def _follow(f: BinaryIO, position: int, store: StateStore, plan: str, task_id: str) -> None:
    """New output as it comes, until the task is no longer running (then what is left)."""
    partial = b""
    while True:
        f.seek(position)
        data = f.read()
        position += len(data)
        lines = (partial + data).split(b"\n")
        partial = lines.pop()
        if lines:
            _write("".join(clean(line.decode(errors="replace")) + "\n" for line in lines))
        if not data and store.read(plan, task_id).state != State.IN_PROGRESS:
            if partial:
                _write(clean(partial.decode(errors="replace")) + "\n")
            return
        if not data:
            time.sleep(FOLLOW_POLL)


def _write(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `hive logs x | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0) from None
