"""Worker slots: `max_workers` lock files, one held while an agent runs, so the
cap holds across every doit process on the repo."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hive import crashsafe
from hive.adapters import worktrees
from hive.engine.task import Worker
from hive.output import say
from hive.store import names
from hive.store.files import FileLock
from hive.store.paths import Paths


class Slot:
    """`with Slot(...) as worker:` waits for a free slot; its number is the worker's."""

    def __init__(self, paths: Paths, size: int, key: str) -> None:
        self.locks = [FileLock(paths.slot_lock(i)) for i in range(1, size + 1)]
        self.key = key
        self.held: FileLock | None = None

    def __enter__(self) -> Worker:
        said = False
        while True:
            for i, lock in enumerate(self.locks, 1):
                if lock.try_acquire():
                    self.held = lock
                    return Worker(i)
            if not said:
                say(f"{self.key}: waiting for a free worker slot (max_workers={len(self.locks)})")
                said = True
            crashsafe.pause(0.1)

    def __exit__(self, *exc: object) -> None:
        if self.held:
            self.held.release()


def idle_spares(paths: Paths, base: Path, act: Callable[[Path], str | None]) -> list[str]:
    """`act` on each worker's spare checkout (`[worktrees] reuse`, under `base`) whose worker runs
    nothing now: its slot is held meanwhile, so no worker takes or parks that spare under it.
    Returns what `act` said."""
    said = []
    for path in worktrees.spares(paths.root, base):
        slot = FileLock(paths.slot_lock(names.spare_owner(path.name)))
        if not slot.try_acquire():
            continue
        try:
            note = act(path)
        finally:
            slot.release()
        if note:
            said.append(note)
    return said
