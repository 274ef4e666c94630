"""hive/executors/ray/node.py's watch (the long poll a node answers) and shipping.Pulled.after
(answers that overlap): no Ray needed, an Attempt on real files with a live process for an agent."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from hive.executors.ray.node import Attempt
from hive.executors.ray.shipping import Cursor, Pulled, Spec
from hive.logcap import Chunk
from hive.store.paths import Paths

TIP = "1" * 40


class FakeNode:
    def __init__(self, home: Path) -> None:
        self.home, self.cache = home, home / "repo"


@pytest.fixture
def attempt(tmp_path: Path) -> Attempt:
    spec = Spec(
        name="hive-w1-p-1-abc-a1", key="p:1", attempt=1, branch="hive/p-1-a1", start=TIP,
        argv=[], env={}, unset=(), root="/ctl", worktree="/ctl/wt", brief="",
    )  # fmt: skip
    a = Attempt(FakeNode(tmp_path), spec)  # type: ignore[arg-type]
    a.token = os.getpid()  # a live "agent"
    ref = tmp_path / "repo" / ".git" / "refs" / "heads" / "hive" / "p-1-a1"
    ref.parent.mkdir(parents=True)
    ref.write_text(TIP + "\n")
    a.dir.mkdir(parents=True)
    return a


def later(seconds: float, action) -> threading.Thread:
    t = threading.Timer(seconds, action)
    t.start()
    return t


def test_a_watch_answers_as_soon_as_the_agent_signals_not_when_it_times_out(attempt: Attempt):
    signal = Paths(attempt.root).signal_file("p", "1", 1)
    signal.parent.mkdir(parents=True)
    later(0.3, lambda: signal.write_text('{"kind": "done"}'))
    began = time.monotonic()
    answer = attempt.watch(Cursor(tip=TIP), wait=10)
    assert 0.3 <= time.monotonic() - began < 2
    assert answer.signal == '{"kind": "done"}' and answer.alive and answer.cursor.signal
    # the next watch knows the controller has it: it waits again
    began = time.monotonic()
    again = attempt.watch(answer.cursor, wait=0.4)
    assert time.monotonic() - began >= 0.4 and again.signal == answer.signal


def test_output_alone_is_batched_and_nothing_at_all_waits_the_whole_while(attempt: Attempt):
    began = time.monotonic()
    quiet = attempt.watch(Cursor(tip=TIP), wait=0.3)
    assert time.monotonic() - began >= 0.3 and quiet.log == b"" and quiet.cursor == Cursor(tip=TIP)
    attempt.log.write_bytes(b"working\n")
    began = time.monotonic()
    talk = attempt.watch(quiet.cursor, wait=10)
    assert 0.2 <= time.monotonic() - began < 2  # OUTPUT_BATCH, not the whole wait
    assert talk.log == b"working\n" and talk.cursor.log == len(b"working\n")


def test_a_stop_ends_the_watch_in_flight_at_once(attempt: Attempt):
    later(0.2, attempt.stopping.set)
    began = time.monotonic()
    attempt.watch(Cursor(tip=TIP), wait=10)
    assert time.monotonic() - began < 2


def pulled(since: Cursor, log: bytes, notes: tuple[str, ...] = ()) -> Pulled:
    end = Cursor(since.log + len(log), since.notes + len(notes), since.found, TIP)
    return Pulled(True, None, log, None, notes, (), TIP, end, since=since)


def test_overlapping_answers_are_written_once():
    watch = pulled(Cursor(), b"one\n", ("n1",))
    stop = pulled(Cursor(), b"one\ntwo\n", ("n1", "n2"))  # asked with the same cursor, answered later
    mine = watch.cursor  # the watch's answer was written first
    rest = stop.after(mine)
    assert rest is not None and rest.log == b"two\n" and rest.notes == ("n2",) and rest.cursor == stop.cursor
    assert watch.after(stop.cursor) is None  # an answer behind what is written is dropped
    assert watch.after(Cursor()) == watch  # the usual case: nothing to trim


def test_output_is_read_from_an_offset_so_following_it_fetches_only_what_is_new(attempt: Attempt):
    assert attempt.output().data == b""  # no log yet
    attempt.log.write_bytes(b"first line\nsecond")
    assert attempt.output() == Chunk(0, b"first line\nsecond")
    assert attempt.output(11) == Chunk(11, b"second")
    assert attempt.output(17).data == b"" and attempt.output(99).data == b""
