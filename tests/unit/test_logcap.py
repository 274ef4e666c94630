"""hive/logcap.py: a task's log keeps the first and the last `cap` bytes of its agent's output
with a marker between them, its offsets stay logical across cuts, and readers racing the writer
never get torn bytes. The writer runs as Hive runs it on tmux's pipe-pane (`logcap.command`).

Every stream here is made of 10-byte lines that name their own offset (`000001230\\n` starts
at byte 1230), so any bytes a reader gets can be checked against where it says they are."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import threading
from pathlib import Path

import pytest

from hive import logcap
from hive.executors.ray.shipping import Cursor, Pulled
from hive.logcap import Chunk

MARKER = re.compile(
    rb"\n\[hive: (\d+\.\d) MB of output dropped here; the log keeps its first and last ([\d.]+) MB "
    rb"\(\[logs\] max_mb\)\]\n"
)


def stream(start: int, end: int) -> bytes:
    """The bytes at offsets start..end of the self-describing stream."""
    first = start - start % 10
    lines = b"".join(b"%09d\n" % offset for offset in range(first, end + 10, 10))
    return lines[start - first : end - first]


def check(got: Chunk) -> None:
    """`got` holds the stream's own bytes at the offsets it says (after a whole marker, if any)."""
    assert got.marker == b"" or MARKER.fullmatch(got.marker), got.marker
    assert got.data == stream(got.start, got.end), f"torn bytes at {got.start}"


def feed(log: Path, data: bytes, cap: int, piece: int = 7001) -> None:
    """Run the log's writer as tmux's pipe-pane does, and give it `data` in pieces."""
    writer = subprocess.Popen(logcap.command(log, cap), stdin=subprocess.PIPE)
    assert writer.stdin is not None
    for at in range(0, len(data), piece):
        writer.stdin.write(data[at : at + piece])
    writer.stdin.close()
    assert writer.wait(timeout=60) == 0


def disk_use(folder: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in folder.iterdir())


def test_the_log_keeps_its_head_and_its_tail_byte_exact_with_a_marker_saying_what_was_dropped(tmp_path: Path):
    log, cap, data = tmp_path / "1.log", 100_000, stream(0, 3_000_000)
    feed(log, data, cap)
    kept = log.read_bytes()
    assert kept[:cap] == data[:cap]
    found = MARKER.match(kept, cap)
    assert found is not None, kept[cap : cap + 200]
    rest = kept[found.end() :]
    assert cap <= len(rest) <= 2 * cap + logcap.MARKER_ROOM and rest == data[-len(rest) :]
    assert found.group(1) == b"%.1f" % ((len(data) - cap - len(rest)) / logcap.MB) and found.group(2) == b"0.1"
    assert logcap.size(log) == len(data)  # every byte the agent printed, counted
    assert logcap.read(log) == kept  # read from the start: the head, the marker, the tail


def test_the_marker_reads_as_the_issue_asks():
    assert logcap.marker(581_300_000, 10 * logcap.MB) == (
        b"\n[hive: 581.3 MB of output dropped here; the log keeps its first and last 10 MB ([logs] max_mb)]\n"
    )


def test_offsets_are_logical_so_an_attempts_offset_still_finds_its_output_after_a_cut(tmp_path: Path):
    log, cap, data = tmp_path / "1.log", 10_000, stream(0, 60_000)
    writer = logcap.Writer(log, cap)
    writer.write(data[:30_000])
    assert not logcap.read(log).count(b"[hive:")  # not yet over head + marker + 2 x tail
    writer.write(data[30_000:35_000])  # now it is: the middle goes
    assert os.path.getsize(log) < 35_000 and logcap.size(log) == 35_000 == writer.logical
    assert logcap.read(log, 27_000, 27_050) == data[27_000:27_050]  # in the tail: where it always was
    assert logcap.chunk(log, 3_000) == Chunk(3_000, data[3_000:10_000])  # the head's rest, alone
    dropped = logcap.chunk(log, 15_000)  # among the dropped bytes: the marker, then the tail
    assert dropped.marker and dropped.start == 25_000 and dropped.data == data[25_000:35_000]
    assert MARKER.fullmatch(dropped.marker).group(1) == b"0.0"  # 15 kB, in MB
    assert logcap.read(log, 15_000, 20_000) == dropped.marker  # a range all dropped: only the marker
    assert logcap.tail(log, 100) == data[34_900:35_000]
    assert logcap.tail(log, 100, since=34_950) == data[34_950:35_000]
    writer.write(data[35_000:])  # more cuts: what was kept in the tail is dropped in its turn
    writer.close()
    assert logcap.size(log) == 60_000
    later = logcap.chunk(log, 27_000)
    assert later.marker and later.data == data[later.start : 60_000] and later.start > 27_000


def test_a_follower_sees_every_byte_once_then_the_marker_where_it_fell_behind(tmp_path: Path):
    log, cap, data = tmp_path / "1.log", 10_000, stream(0, 200_000)
    writer = logcap.Writer(log, cap)
    position, seen = 0, []

    def follow() -> None:
        nonlocal position
        got = logcap.chunk(log, position)
        while got.shown:
            check(got)
            seen.append(got)
            position = got.end
            got = logcap.chunk(log, position)

    for at in range(0, len(data), 3_000):  # reads between writes, as the engine's follower does
        writer.write(data[at : at + 3_000])
        if at // 3_000 % 20 >= 12:  # else it falls behind, by more than a tail: a cut drops what it did not read
            follow()
    writer.close()
    follow()
    assert position == len(data) and sum(bool(got.marker) for got in seen) >= 3
    assert all(a.end <= b.start for a, b in itertools.pairwise(seen))  # never a byte twice


def test_a_second_writer_goes_on_from_a_cut_log_its_output_at_its_offset(tmp_path: Path):
    log, cap, data = tmp_path / "1.log", 10_000, stream(0, 58_000)
    feed(log, data[:50_000], cap)  # the first attempt's output
    offset = logcap.size(log)  # where the next attempt starts (TaskState.log_offset)
    assert offset == 50_000
    feed(log, data[50_000:], cap)  # the second attempt: a new writer on the cut log
    assert logcap.read(log, offset) == data[50_000:]
    kept = log.read_bytes()
    assert kept[:cap] == data[:cap] and len(MARKER.findall(kept)) == 1  # the first head stays; one marker
    assert logcap.size(log) == len(data)


def test_a_reader_racing_the_writers_cuts_never_gets_torn_bytes(tmp_path: Path):
    log, cap, data = tmp_path / "1.log", 16_384, stream(0, 4_000_000)
    log.touch()
    writing = threading.Thread(target=feed, args=(log, data, cap, 4096))
    writing.start()
    position, markers, reads = 0, 0, 0
    while writing.is_alive() or position < logcap.size(log):
        got = logcap.chunk(log, position)  # following, as `hive logs -f` and the engine do
        check(got)
        markers += bool(got.marker)
        position = got.end
        whole = logcap.read(log)  # and whole reads: head, marker, tail, each where it says
        reads += 1
        head = whole[: min(len(whole), cap)]
        assert head == data[: len(head)]
        found = MARKER.search(whole)
        if found:
            assert whole[found.end() :] in data  # one unbroken run of the stream (each line names its offset)
    writing.join()
    cuts = int(re.search(rb'"gen": (\d+)', (tmp_path / "1.log.cut").read_bytes()).group(1)) // 2
    assert position == len(data) and cuts > 40 and markers >= 1 and reads > 10


def test_disk_use_stays_bounded_however_much_is_printed(tmp_path: Path):
    cap = 100_000
    feed(tmp_path / "1.log", stream(0, 8_000_000), cap, piece=65536)
    assert disk_use(tmp_path) <= 3 * cap + 64 * 1024  # head, marker, up to two tails; the sidecar


def test_a_cut_a_killed_writer_left_half_done_is_finished_by_the_next(tmp_path: Path):
    log, cap, data = tmp_path / "1.log", 10_000, stream(0, 31_000)
    log.write_bytes(data)  # a writer got this far, and was killed while it cut:
    plan = logcap._plan(logcap.NO_CUT, len(data), cap, log.stat().st_ino)
    assert plan is not None
    logcap._write_state(str(log) + logcap.SIDECAR, plan)  # its plan recorded, the marker written, no more
    with open(log, "r+b") as f:
        f.seek(plan.kept)
        f.write(logcap.marker(plan.dropped, cap))
    logcap.append(log, b"", cap)  # the next writer
    assert log.read_bytes() == data[:cap] + logcap.marker(plan.dropped, cap) + data[-cap:]
    assert logcap.size(log) == len(data) and logcap.read(log, 25_000) == data[25_000:]


def test_a_sidecar_left_by_a_log_made_anew_says_nothing_of_it(tmp_path: Path):
    log, cap = tmp_path / "1.log", 10_000
    feed(log, stream(0, 50_000), cap)
    log.unlink()  # a log removed by hand; its sidecar is still there
    feed(log, b"fresh output\n", cap)
    assert logcap.size(log) == 13 and logcap.read(log) == b"fresh output\n"
    assert logcap.chunk(log, 6) == Chunk(6, b"output\n")


def test_the_writer_starts_on_the_standard_librarys_bare_minimum(tmp_path: Path):
    """It starts for every attempt: what it imports until its first byte is what its start costs
    (`typing` alone is ~10 ms; `signal`, for a cut, comes with the first cut)."""
    argv = logcap.command(tmp_path / "1.log", 1000)
    started = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], stdin=subprocess.DEVNULL, capture_output=True)
    assert started.returncode == 0, started.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in started.stderr.decode().splitlines()[1:]}
    assert "logcap" in imported and not any(name.startswith("hive") for name in imported)
    assert not imported & {"typing", "re", "json", "signal", "enum", "fcntl", "subprocess", "site"}


def test_no_log_reads_as_nothing(tmp_path: Path):
    log = tmp_path / "none.log"
    assert logcap.size(log) == 0 and logcap.read(log) == b"" and logcap.tail(log, 10) == b""
    assert not logcap.chunk(log, 0).shown


@pytest.fixture
def cut_log(tmp_path: Path) -> tuple[Path, bytes]:
    log, data = tmp_path / "output.log", stream(0, 60_000)
    logcap.append(log, data, 10_000)
    return log, data


def test_a_nodes_answer_from_among_the_dropped_bytes_brings_the_marker_once(cut_log: tuple[Path, bytes]):
    log, data = cut_log
    since = Cursor(log=15_000)  # the controller's cursor, behind a cut there
    got = logcap.chunk(log, since.log)
    answer = Pulled(True, None, got.data, None, (), (), "", Cursor(log=got.end), since=since, log_at=got.start,
                    log_marker=got.marker)  # fmt: skip
    assert answer.after(since) == answer  # written whole: the marker, then the tail
    overlap = answer.after(Cursor(log=got.start + 100))  # an earlier answer brought the marker and 100 bytes
    assert overlap is not None and overlap.log_marker == b"" and overlap.log == data[got.start + 100 : got.end]


def test_a_ray_attempts_output_is_bounded_on_its_node_and_in_the_controllers_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The node's log is cut by its own writer; the controller, behind a cut there, gets the
    node's marker and its tail, and its own log (which it alone writes) is cut the same way."""
    from hive.executors.base import AgentRef
    from hive.executors.ray.link import Link
    from hive.executors.ray.node import Attempt
    from hive.executors.ray.shipping import Spec
    from hive.store.paths import Paths

    tip, cap, data = "1" * 40, 10_000, stream(0, 60_000)
    spec = Spec(
        name="hive-w1-p-1-abc-a1", key="p:1", attempt=1, branch="hive/p-1-a1", start=tip, argv=[], env={},
        unset=(), root="/ctl", worktree="/ctl/wt", brief="", log_cap=cap,
    )  # fmt: skip

    class Node:
        home, cache = tmp_path / "node", tmp_path / "node" / "repo"
        ip, node_id = "10.0.0.7", "n1"

    there = Attempt(Node(), spec)  # type: ignore[arg-type]
    there.token = os.getpid()
    ref = Node.cache / ".git" / "refs" / "heads" / "hive" / "p-1-a1"
    ref.parent.mkdir(parents=True)
    ref.write_text(tip + "\n")
    there.dir.mkdir(parents=True)
    here = tmp_path / "ctl"
    link = Link(spec.name, None, None, here, ref=AgentRef(str(here), "p:1", 1, spec.name), tip=tip)
    monkeypatch.setenv("HIVE_TMUX_SOCKET", "hive-test-n1")  # where() names the node's tmux server
    link.placed(there.where())
    assert link.log_cap == cap  # the node says how much its log keeps: so does the controller's

    def ship() -> None:
        while True:
            answer = there.poll(link.cursor or Cursor(tip=tip))
            link.apply(answer)
            if not answer.log:
                return

    logcap.append(there.log, data[:25_000], cap)
    ship()  # it keeps up: every byte arrives
    logcap.append(there.log, data[25_000:], cap)  # then the node cuts what the controller had not fetched
    ship()
    log = Paths(here).log_file("p", "1")
    kept = log.read_bytes()
    assert kept.startswith(data[:cap]) and MARKER.search(kept) and kept.endswith(data[-cap:])
    assert os.path.getsize(log) <= 3 * cap + logcap.MARKER_ROOM and os.path.getsize(there.log) < 3 * cap
    assert link.cursor is not None and link.cursor.log == len(data) == logcap.size(there.log)
