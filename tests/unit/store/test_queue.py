"""store/queue.py: the merge queue's record — who is in it, in what order, and what each
task's merge commit is built on."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from hive.store import queue
from hive.store.files import FileLock
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
    held = FileLock(tmp_path / "alive.lock")
    assert held.try_acquire()
    try:
        checks = (("Verify", "make check"), ("test_command", "make test"))  # its batch's leader reads them
        q = [Entry("p:1", str(tmp_path / "dead.lock"), "b1"), Entry("p:2", str(held.path), "b2", commands=checks)]
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
    claims = {t: FileLock(tmp_path / f"{t}.lock") for t in "abcd"}
    slot = FileLock(paths.check_slot(1))
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


# --- groups ([merge] batch) --------------------------------------------------------------------


def built(key: str, base: str, **fields: Any) -> Entry:
    """An entry built on `base`, its merge commit named after it (m<key>)."""
    return Entry(f"p:{key}", "", f"b{key}", base=base, merged=f"m{key}", **fields)


def keys(groups: list[list[Entry]]) -> list[list[str]]:
    return [[e.key for e in g] for g in groups]


def test_a_task_built_behind_a_gathering_group_joins_it_as_its_leader_until_it_is_full(tmp_path: Path):
    q: list[Entry] = []
    for t, base in zip("abcd", ["main", "ma", "mb", "mc"], strict=True):  # each joins, then is built
        q = queue.rebuilt([*q, Entry(f"p:{t}", "", f"b{t}")], built(t, base), batch=3)
    assert keys(queue.groups(q)) == [["p:a", "p:b", "p:c"], ["p:d"]], "full at 3: the fourth starts a group"
    assert [e.leader for e in q] == ["p:c", "p:c", "", ""], "the last of a group leads it"
    alone = queue.rebuilt([built("a", "main"), built("b", "ma")], built("b", "ma"), batch=1)
    assert all(e.leads for e in alone), "batch = 1: each task is a group of its own"


def test_a_group_that_started_its_checks_or_has_none_to_run_takes_no_one_more():
    for checks in (queue.CHECKING, PASSED, FAILED):
        q = queue.rebuilt([built("a", "main", checks=checks), built("b", "ma")], built("b", "ma"), batch=4)
        assert keys(queue.groups(q)) == [["p:a"], ["p:b"]], checks
    no_checks = queue.rebuilt([built("a", "main"), built("b", "ma")], built("b", "ma", checks=PASSED), batch=4)
    assert keys(queue.groups(no_checks)) == [["p:a"], ["p:b"]], "a task without checks is never in a batch"


def test_members_whose_leader_left_are_led_by_the_last_of_them_and_verified_again():
    q = [
        built("a", "main", leader="p:d", checks=PASSED),
        built("b", "ma", leader="p:d", checks=PASSED),
        built("c", "mb", leader="p:d", checks=PASSED),
    ]  # p:d passed them, then its worker died before they reached main
    regrouped = queue.regroup(q)
    assert [(e.leader, e.checks) for e in regrouped] == [("p:c", ""), ("p:c", ""), ("", "")]
    assert queue.regroup(regrouped) == regrouped
    # a member built again leaves its group: the ones ahead of it are a group of their own
    q = [built("a", "main", leader="p:c"), built("b", "ma"), built("c", "mb", leader="")]
    assert keys(queue.groups(queue.regroup(q))) == [["p:a"], ["p:b"], ["p:c"]]


def test_a_failed_batch_is_bisected_the_rest_keeping_its_leader_and_failure():
    q = [built(t, "m?", leader="p:d") for t in "abc"] + [built("d", "mc", checks=FAILED, reason="Verify of p:b failed")]
    halves = queue.split(q, "p:d")
    assert keys(queue.groups(halves)) == [["p:a", "p:b"], ["p:c", "p:d"]]
    assert [(e.leader, e.checks) for e in halves] == [("p:b", ""), ("", ""), ("p:d", ""), ("", FAILED)]
    again = queue.split(queue.passed(halves, "p:b"), "p:d")
    assert keys(queue.groups(again)) == [["p:a", "p:b"], ["p:c"], ["p:d"]]
    assert [e.checks for e in again] == [PASSED, PASSED, "", FAILED], "the first half passed; p:c is verified next"


def test_a_batch_not_full_gathers_while_anything_ahead_has_not_passed_and_waits_for_who_joins_it():
    q = [built("a", "main", checks=queue.CHECKING), built("b", "ma", leader="p:c"), built("c", "mb")]
    assert (
        queue.waits_to_start(q, "p:c", batch=4)
        == "gathering a batch (2 of up to 4) until the tasks ahead pass their checks (p:a)"
    )
    assert queue.waits_to_start(q, "p:c", batch=2) == "", "a full batch starts at once"
    assert queue.waits_to_start([replace(q[0], checks=PASSED), *q[1:]], "p:c", batch=4) == ""
    bisected = [replace(q[0], checks=FAILED), *q[1:]]
    assert queue.waits_to_start(bisected, "p:c", batch=2).startswith("waiting while a batch ahead that failed")
    assert queue.waits_to_start(bisected, "p:c", batch=1) == "", "batch = 1: checks run optimistically, as before"
    behind = Entry("p:d", "", "bd")  # joined, not built yet
    assert queue.joining([*q, behind], "p:c") == "p:d"
    assert queue.joining([*q, replace(behind, base="mc", merged="md")], "p:c") == "", (
        "built on it: in a group of its own"
    )
    assert queue.joining([*q, replace(behind, base="old", checks=queue.CHECKING)], "p:c") == ""


def test_a_batch_reaches_main_only_while_each_member_is_built_on_the_one_ahead():
    group = [built("a", "main", leader="p:b"), built("b", "ma")]
    assert queue.chained(group, group, "main")
    assert not queue.chained(group, group, "moved"), "main moved: its leader's tree is not what main would get"
    assert queue.span(group) == "p:a, p:b" and queue.span([*group, built("c", "mb")]) == "p:a..p:c"


def test_status_says_which_batch_verifies_and_when_one_is_bisected(tmp_path: Path):
    from hive.reports.status import merge_queue
    from hive.store.paths import Paths

    paths = Paths(tmp_path)
    claims = {t: FileLock(tmp_path / f"{t}.lock") for t in "abcdef"}
    try:
        for lock in claims.values():
            assert lock.try_acquire()
        e = {t: Entry(f"p:{t}", str(claims[t].path), f"b{t}", merged=f"m{t}") for t in "abcdef"}
        checking = [replace(e[t], leader="p:d") for t in "abc"] + [replace(e["d"], checks=queue.CHECKING)]
        queue.save(paths.queue, [*checking, replace(e["e"], base="md", leader="p:f"), replace(e["f"], base="me")])
        shown = {k: v["queue"].split(": ", 1)[1] for k, v in merge_queue(paths, max_checks=0, batch=4).items()}
        assert shown["p:d"] == "verifying p:a..p:d together (batch of 4) on main"
        assert shown["p:a"] == shown["p:c"] == "in the batch p:d verifies"
        assert shown["p:f"] == "gathering a batch (2 of up to 4) until the tasks ahead pass their checks (p:a..p:d)"
        bisecting = [replace(e["a"], leader="p:b"), replace(e["b"], checks=queue.CHECKING)]
        bisecting += [replace(e["c"], leader="p:d"), replace(e["d"], checks=FAILED)]
        queue.save(paths.queue, bisecting)
        shown = {k: v["queue"].split(": ", 1)[1] for k, v in merge_queue(paths, max_checks=0, batch=4).items()}
        assert shown["p:b"] == "verifying p:a, p:b together (batch of 2) on main (bisecting the batch of p:d)"
        assert shown["p:c"] == "bisecting: in the batch p:d failed"
        assert shown["p:d"].startswith("bisecting: p:c, p:d together (batch of 2) failed its checks")
    finally:
        for lock in claims.values():
            lock.release()
