"""engine/batch.py: when a run of checks in the merge queue may start, and what one run of a
batch runs."""

from __future__ import annotations

from pathlib import Path

from hive.engine import batch
from hive.store.files import FileLock
from hive.store.queue import CHECKING, Entry

SUITE = ("test_command", "make test")


def member(key: str, verify: str, base: str = "", merged: str = "") -> Entry:
    return Entry(key, "", f"b{key}", base=base, merged=merged, commands=(("Verify", verify), SUITE))


def test_a_batch_runs_every_members_verify_named_by_its_task_and_the_shared_suite_once():
    group = (member("p:a", "test -f a"), member("p:b", "test -f b"), member("p:c", "test -f c"))
    assert batch.checks_of(group, group[-1].commands) == (
        ("Verify of p:a", "test -f a"),
        ("Verify of p:b", "test -f b"),
        ("Verify", "test -f c"),  # the leader's own: a culprit found alone reads its own reason
        SUITE,
    )
    assert batch.checks_of(group[-1:], group[-1].commands) == group[-1].commands, "alone: its own checks"


def test_a_batch_not_full_waits_a_while_for_the_task_about_to_join_it():
    a = member("p:a", "true", base="main", merged="ma")
    behind = member("p:b", "true")  # joined, not built yet
    assert batch.waits([a, behind], "p:a", 4, waited=0.0) == "waiting for p:b to join its batch"
    assert batch.waits([a, behind], "p:a", 4, waited=batch.JOIN_PATIENCE) == "", "not forever: its worker may be busy"
    assert batch.waits([a, behind], "p:a", 1, waited=0.0) == "", "batch = 1: no one joins"
    checking = Entry("p:b", "", "bb", base="old", merged="mb", checks=CHECKING)
    assert batch.waits([a, checking], "p:a", 4, waited=0.0) == "", "it checks a tree of its own: not joining"


def test_a_run_takes_a_free_check_slot_or_none_with_no_cap(tmp_path: Path):
    slots = (tmp_path / "slot1", tmp_path / "slot2")
    assert batch.take_slot(()) == (True, None)
    other = FileLock(slots[0])
    assert other.try_acquire()
    try:
        free, held = batch.take_slot(slots)
        assert free and held is not None and held.path == slots[1]
        assert batch.take_slot(slots) == (False, None), "both taken"
        batch.Run((), held).release()
        free, again = batch.take_slot(slots)
        assert free and again is not None
        again.release()
    finally:
        other.release()
