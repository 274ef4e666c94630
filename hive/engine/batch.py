"""When a run of checks in the merge queue starts, and what it runs ([merge] batch, max_checks).

A task whose checks are to run leads a group (store/queue.py): itself alone, or, with
`[merge] batch = N`, a batch of up to N tasks that one run on its merge commit verifies. A batch
that is not full gathers while anything ahead of it has not passed, and waits a little for a task
about to be built on it (it will join); then the run takes a check slot, and its group is closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hive.store import queue
from hive.store.files import FileLock
from hive.store.queue import Entry

JOIN_PATIENCE = 5.0  # how long a batch not full waits for a task about to join it (queue.joining)

Checks = tuple[tuple[str, str], ...]  # (label, bash command)


@dataclass(frozen=True)
class Run:
    """A run of checks about to start: the group it verifies, and the check slot it holds."""

    group: tuple[Entry, ...]
    slot: FileLock | None

    @property
    def batch(self) -> tuple[str, ...]:
        """The tasks it verifies, if more than its leader alone."""
        return tuple(e.key for e in self.group) if len(self.group) > 1 else ()

    def release(self) -> None:
        if self.slot is not None:
            self.slot.release()


def waits(entries: list[Entry], key: str, batch: int, waited: float) -> str:
    """What the group `key` leads waits for before its run starts ("": nothing but a check
    slot); `waited`: seconds it has waited so far (a task about to join is waited for a while)."""
    gathering = queue.waits_to_start(entries, key, batch)
    if gathering or batch <= 1 or waited >= JOIN_PATIENCE:
        return gathering
    behind = queue.joining(entries, key)
    return f"waiting for {behind} to join its batch" if behind else ""


def take_slot(slots: tuple[Path, ...]) -> tuple[bool, FileLock | None]:
    """(free?, the slot taken): one of `slots` ([merge] max_checks) if one is free; none: no cap."""
    if not slots:
        return True, None
    held = next((lock for path in slots if (lock := FileLock(path)).try_acquire()), None)
    return held is not None, held


def checks_of(group: tuple[Entry, ...], own: Checks) -> Checks:
    """What one run for `group` runs: its leader's `own` checks; for a batch, every member's too,
    each command once (test_command is everyone's), a member's named by its task (a failure that
    names none is the leader's own, as the reason of a culprit found by bisection reads)."""
    named: dict[str, str] = {}  # command -> label, in queue order
    for e in group[:-1]:
        for label, command in e.commands:
            if not any(c == command for _, c in own):
                named.setdefault(command, f"{label} of {e.key}")
    return tuple((label, command) for command, label in named.items()) + own
