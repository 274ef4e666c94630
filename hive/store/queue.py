"""The merge queue's record (issue 25): which finished tasks wait to reach main, in the order
they will, each with the merge commit it would publish and whether that exact tree passed its
checks.

A task joins at the end when its worker starts to merge it. Its merge commit is built on the
*speculative* tip ahead of it: main for the first, else the merge commit of the task just
ahead (Zuul's "optimistic" pipeline), so every task's checks run at once, each on the tree it
will publish. Publishing is one at a time, in order: the first task moves main from its base
(which main then is) to its merge commit, a fast-forward to exactly the tree verified. When a
task leaves otherwise (failed, conflicted, its worker died) the ones behind it find their base
gone and are built and verified again.

One file, `.hive/queue.json`, read and written whole under the merge lock, by the workers
alone (each writes its own entry; any removes the entry of a worker that died, whose task's
claim no process holds). A run started again finds its tasks' entries and goes on from them.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from hive.store.files import HeldLock, atomic_write

PENDING, PASSED, FAILED = "", "passed", "failed"


@dataclass(frozen=True)
class Entry:
    key: str  # plan:ID
    claim: str  # its task's claim lock: held while its worker lives
    branch: str  # the branch commit it merges
    base: str = ""  # what its merge commit is built on ("": not built yet)
    merged: str = ""  # its merge commit
    files: tuple[str, ...] = ()  # what its merge commit changes on its base
    checks: str = PENDING  # PENDING | PASSED | FAILED: of `merged`'s tree
    reason: str = ""  # why its checks failed
    output: str = ""  # ... and the end of their output
    since: float = 0.0  # when it joined

    @property
    def built(self) -> bool:
        return bool(self.merged)


def load(path: Path) -> list[Entry]:
    """The queue, in order ([] if there is none or it cannot be read: the workers rebuild it)."""
    try:
        raw = json.loads(path.read_text())
        return [Entry(**{**e, "files": tuple(e.get("files", ()))}) for e in raw["entries"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def save(path: Path, entries: list[Entry]) -> None:
    atomic_write(path, json.dumps({"entries": [asdict(e) for e in entries]}, indent=1))


def living(entries: list[Entry]) -> list[Entry]:
    """Those whose worker still runs (a worker killed leaves its task's claim free)."""
    return [e for e in entries if HeldLock(Path(e.claim)).holder() is not None]


def find(entries: list[Entry], key: str) -> Entry | None:
    return next((e for e in entries if e.key == key), None)


def join(entries: list[Entry], key: str, claim: Path, branch: str) -> list[Entry]:
    """With `key` in the queue for `branch`: its entry as it was (a run started again goes on from
    it), anew at the end if its branch moved (a resolve attempt), else added at the end."""
    old = find(entries, key)
    if old is not None and old.branch == branch:
        return entries
    rest = [e for e in entries if e.key != key]
    return [*rest, Entry(key, str(claim), branch, since=time.time())]


def leave(entries: list[Entry], key: str) -> list[Entry]:
    return [e for e in entries if e.key != key]


def put(entries: list[Entry], entry: Entry) -> list[Entry]:
    return [entry if e.key == entry.key else e for e in entries]


def ahead(entries: list[Entry], key: str) -> list[Entry]:
    keys = [e.key for e in entries]
    return entries[: keys.index(key)] if key in keys else list(entries)


def base_for(entries: list[Entry], key: str, main: str) -> str | None:
    """What `key`'s merge commit is built on: main's tip for the first, else the merge commit of
    the task just ahead (None while that one is not built)."""
    before = ahead(entries, key)
    if not before:
        return main
    return before[-1].merged or None
