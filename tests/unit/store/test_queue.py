"""store/queue.py: the merge queue's record — who is in it, in what order, and what each
task's merge commit is built on."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hive.store import queue
from hive.store.files import HeldLock
from hive.store.queue import FAILED, PASSED, Entry


def test_a_task_joins_at_the_end_keeps_its_place_and_starts_again_when_its_branch_moved(tmp_path: Path):
    q = queue.join([], "p:1", tmp_path / "1.lock", "b1")
    q = queue.join(q, "p:2", tmp_path / "2.lock", "b2")
    q = queue.put(q, Entry("p:1", str(tmp_path / "1.lock"), "b1", base="m", merged="x1", checks=PASSED))
    assert queue.join(q, "p:1", tmp_path / "1.lock", "b1") == q, "a run started again goes on from its entry"
    moved = queue.join(q, "p:1", tmp_path / "1.lock", "b1-resolved")
    assert [e.key for e in moved] == ["p:2", "p:1"] and not moved[1].built, "a new branch: anew, at the end"
    assert [e.key for e in queue.leave(q, "p:1")] == ["p:2"]


def test_each_is_built_on_main_or_on_the_merge_commit_of_the_one_ahead(tmp_path: Path):
    a = Entry("p:a", "", "ba", base="m", merged="ma")
    b = Entry("p:b", "", "bb")
    c = Entry("p:c", "", "bc")
    q = [a, b, c]
    assert queue.base_for(q, "p:a", "main") == "main"
    assert queue.base_for(q, "p:b", "main") == "ma"
    assert queue.base_for(q, "p:c", "main") is None, "not while the one ahead is not built"
    assert queue.ahead(q, "p:c") == [a, b] and queue.ahead(q, "p:a") == []


def test_the_entry_of_a_worker_that_died_is_dropped_and_the_record_survives_a_torn_file(tmp_path: Path):
    held = HeldLock(tmp_path / "alive.lock")
    assert held.try_acquire()
    try:
        q = [Entry("p:1", str(tmp_path / "dead.lock"), "b1"), Entry("p:2", str(held.path), "b2")]
        assert [e.key for e in queue.living(q)] == ["p:2"]
        queue.save(tmp_path / "queue.json", q)
        assert queue.load(tmp_path / "queue.json") == q
    finally:
        held.release()
    (tmp_path / "queue.json").write_text('{"entries": [{"key": ')
    assert queue.load(tmp_path / "queue.json") == [], "the workers rebuild it"


def test_status_tells_each_queued_task_its_place_and_what_it_waits_for(tmp_path: Path):
    from hive.reports.status import merge_queue
    from hive.store.paths import Paths

    paths = Paths(tmp_path)
    claims = {t: HeldLock(tmp_path / f"{t}.lock") for t in "abcd"}
    slot = HeldLock(paths.check_slot(1))
    try:
        for lock in [*claims.values(), slot]:
            assert lock.try_acquire()  # this process is every worker, and holds the one check slot
        entry = {t: Entry(f"p:{t}", str(claims[t].path), f"b{t}") for t in "abcd"}
        queue.save(
            paths.queue,
            [
                replace(entry["a"], base="m", merged="ma", checks=PASSED),
                replace(entry["b"], base="ma", merged="mb", checks=FAILED),
                replace(entry["c"], base="mb", merged="mc"),
                entry["d"],
            ],
        )
        shown = {k: v["queue"] for k, v in merge_queue(paths, max_checks=0).items()}
        assert shown == {
            "p:a": "merge queue #1 of 4: verified on main; reaching main",
            "p:b": "merge queue #2 of 4: its checks failed on top of p:a; final once p:a pass theirs",
            "p:c": "merge queue #3 of 4: verifying on top of p:a, p:b",
            "p:d": "merge queue #4 of 4: waiting for the task ahead to be built",
        }
        slot.release()
        assert merge_queue(paths, max_checks=1)["p:c"]["queue"].endswith("waiting for a check slot")
    finally:
        for lock in claims.values():
            lock.release()
