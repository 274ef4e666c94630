"""Bounded logs (issue 37: an agent's leftovers are hostile input): a task's log keeps the
first and the last `cap` bytes of what its agent printed ([logs] max_mb), with a marker line
between them saying how much was dropped, so an agent that prints 600 MB cannot fill the disk.

One writer per log: `Writer`, run by `command` (`python -I -S`, this module and the standard
library only, so it starts in ~10 ms) on tmux's pipe-pane in place of `cat >> LOG`, or called
in-process (`append`: the Ray controller writing what a node shipped, Hive's own
header lines). It appends what it reads; once the log holds more than head + marker + 2 ×
tail, it cuts the middle out: the head stays, a new marker follows it, the last `cap` bytes
move behind the marker, and the file is truncated there.

Readers hold byte offsets into the log (an attempt's `log_offset`, a follower's position), so
offsets are *logical*: they count every byte ever written, as an uncut log would. The writer
records its cut in a sidecar, `LOG.cut` (replaced atomically): `kept`, the head's length;
`dropped`, the bytes not kept; `marker`, the marker's length. A head byte (physical offset
p < kept) is logical p; a tail byte (p >= kept + marker) is logical p - marker + dropped. The
marker has no logical offset of its own: it stands for the dropped bytes (logical kept to
kept + dropped), and a read from among them gets it, then the tail (`Chunk.marker`). The
sidecar's `gen` is odd while a cut is under way (it then also holds the cut's plan, so a
writer after one killed half-way finishes it); readers take the sidecar, read, take it again,
and read again if it changed (`size`, `chunk`, `read`, `tail`).
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~10 ms a start)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import TypeVar

    T = TypeVar("T")

MB = 1_000_000
DEFAULT_CAP = 10 * MB  # [logs] max_mb's default, in bytes
CHUNK = 64 * 1024  # what the writer reads and writes at a time, as cat does
SIDECAR = ".cut"
MARKER_ROOM = 256  # more than any marker's length: a cut is due once the tail has this much to spare
PATIENCE = 1.0  # how long a reader waits out a cut in progress (a writer stopped mid-cut is not waited for)
_COPY = 1 << 20


class Cut:
    """A log's sidecar: how its middle was cut out (no marker: it never was)."""

    __slots__ = ("cap", "dropped", "gen", "ino", "kept", "marker", "src")
    FIELDS = ("gen", "kept", "dropped", "marker", "ino", "src", "cap")  # in the sidecar, in this order

    def __init__(
        self, gen: int = 0, kept: int = 0, dropped: int = 0, marker: int = 0, ino: int = 0, src: int = 0, cap: int = 0
    ) -> None:
        self.gen, self.kept, self.dropped, self.marker = gen, kept, dropped, marker
        self.ino = ino  # the log's inode: a sidecar left beside a log made anew says nothing of it
        self.src, self.cap = src, cap  # while busy: where the tail to move starts, and its length

    @property
    def busy(self) -> bool:
        return self.gen % 2 == 1

    @property
    def shift(self) -> int:
        """Logical minus physical offset of every tail byte."""
        return self.dropped - self.marker

    def done(self) -> Cut:
        return Cut(self.gen + 1, self.kept, self.dropped, self.marker, self.ino)

    def of(self, fd: int) -> Cut:
        """What it says of the log open as `fd`: nothing if another log left it (one removed,
        and made anew: its inode may well be the same, but not a marker where this says)."""
        if not self.marker:
            return self
        info = os.fstat(fd)
        if self.ino == info.st_ino and (
            os.pread(fd, len(_MARK), self.kept) == _MARK  # cut, or cutting (the marker first)
            or (self.busy and info.st_size >= self.src + self.cap)  # cutting: the tail yet to move is there
        ):
            return self
        return Cut(self.gen + self.gen % 2, ino=info.st_ino)

    def encoded(self) -> bytes:
        fields = ", ".join(f'"{name}": {int(getattr(self, name))}' for name in self.FIELDS)
        return f"{{{fields}}}\n".encode()


NO_CUT = Cut()


class Chunk:
    """A log's bytes from logical offset `start` on, one unbroken run of them (`data`: the next
    read starts at `end`), after the `marker` that stands for the dropped bytes before them when
    the read started among those (else b""). `shown`: both, as the log holds them."""

    __slots__ = ("data", "marker", "start")

    def __init__(self, start: int, data: bytes, marker: bytes = b"") -> None:
        self.start, self.data, self.marker = start, data, marker

    @property
    def end(self) -> int:
        return self.start + len(self.data)

    @property
    def shown(self) -> bytes:
        return self.marker + self.data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Chunk) and self.__reduce__() == other.__reduce__()

    def __repr__(self) -> str:
        return f"Chunk({self.start}, {len(self.data)} bytes{' after the marker' if self.marker else ''})"

    def __reduce__(self) -> tuple[type[Chunk], tuple[int, bytes, bytes]]:  # it crosses Ray (a node's output)
        return (Chunk, (self.start, self.data, self.marker))


_MARK = b"\n[hive: "  # how every marker starts


def marker(dropped: int, cap: int) -> bytes:
    return (
        f"\n[hive: {dropped / MB:.1f} MB of output dropped here; the log keeps its first and last "
        f"{cap / MB:g} MB ([logs] max_mb)]\n"
    ).encode()


# --- reading ------------------------------------------------------------------------------------


def size(path: str | os.PathLike[str]) -> int:
    """The log's logical size: every byte ever written to it (0 if there is none)."""
    try:
        return _stable(os.fspath(path), lambda _fd, physical, cut: physical + cut.shift)
    except FileNotFoundError:
        return 0


def chunk(path: str | os.PathLike[str], start: int, end: int | None = None, limit: int | None = None) -> Chunk:
    """The log's bytes from logical offset `start` (up to `end`, at most `limit` of them), one
    unbroken run: the head's rest, or the tail's (after the marker, from among the dropped
    bytes). Nothing `shown` at the end, nor with no log."""
    try:
        return _stable(os.fspath(path), lambda fd, physical, cut: _chunk(fd, physical, cut, start, end, limit))
    except FileNotFoundError:
        return Chunk(start, b"")


def read(path: str | os.PathLike[str], start: int = 0, end: int | None = None) -> bytes:
    """Every byte the log keeps between logical offsets `start` and `end`, with the marker
    where some between them were dropped."""
    try:
        return _stable(os.fspath(path), lambda fd, physical, cut: _read(fd, physical, cut, start, end))
    except FileNotFoundError:
        return b""


def tail(path: str | os.PathLike[str], nbytes: int, since: int = 0) -> bytes:
    """The log's last `nbytes` (fewer where they were dropped), none before logical `since`."""

    def look(fd: int, physical: int, cut: Cut) -> bytes:
        return _read(fd, physical, cut, max(since, physical + cut.shift - nbytes), None)

    try:
        return _stable(os.fspath(path), look)
    except FileNotFoundError:
        return b""


def _stable(path: str, look: Callable[[int, int, Cut], T]) -> T:
    """`look(fd, physical size, cut)` at the log as no cut changed it meanwhile: the sidecar
    read before and after it says the same, and no cut was under way."""
    waited_until = 0.0
    while True:
        before = _state(path + SIDECAR)
        late = bool(waited_until) and time.monotonic() > waited_until
        if before.busy and not late and os.stat(path).st_ino == before.ino:
            waited_until = waited_until or time.monotonic() + PATIENCE
            time.sleep(0.001)
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            info = os.fstat(fd)
            value = look(fd, info.st_size, before.of(fd))
        finally:
            os.close(fd)
        if late or _state(path + SIDECAR).gen == before.gen:
            return value


def _chunk(fd: int, physical: int, cut: Cut, start: int, end: int | None, limit: int | None = None) -> Chunk:
    stop = physical + cut.shift if end is None else min(end, physical + cut.shift)
    marker = b""
    if not cut.marker or start < cut.kept:  # uncut, or in the head
        at = start  # its physical offset
        stop = min(stop, cut.kept) if cut.marker else stop
    else:
        if start < cut.kept + cut.dropped:  # among the dropped bytes: the marker stands for them
            marker, start = os.pread(fd, cut.marker, cut.kept), cut.kept + cut.dropped
        at = start - cut.shift
    stop = stop if limit is None else min(stop, start + limit)
    return Chunk(start, os.pread(fd, stop - start, at) if stop > start else b"", marker)


def _read(fd: int, physical: int, cut: Cut, start: int, end: int | None) -> bytes:
    parts: list[bytes] = []
    while True:
        got = _chunk(fd, physical, cut, start, end)
        parts += (got.marker, got.data)
        if not got.data or (end is not None and got.end >= end):
            return b"".join(parts)
        start = got.end


def _state(sidecar: str) -> Cut:
    """What a sidecar says; an unreadable one (never written whole: it is replaced) says nothing."""
    try:
        with open(sidecar, "rb") as f:
            text = f.read(4096).decode()
    except FileNotFoundError:
        return NO_CUT
    try:
        fields = {}
        for item in text.strip().strip("{}").split(","):
            name, _, value = item.partition(":")
            fields[name.strip().strip('"')] = int(value)
        return Cut(**{name: fields[name] for name in Cut.FIELDS if name in fields})
    except (ValueError, TypeError):
        return NO_CUT


# --- writing ------------------------------------------------------------------------------------


class Writer:
    """The one writer of a log: appends to it, and cuts its middle out when it holds more than
    head + marker + 2 × `cap`. It goes on from the log as it finds it: one already cut keeps
    its head, and everything new goes to the tail."""

    def __init__(self, path: str | os.PathLike[str], cap: int) -> None:
        self.path, self.cap = os.fspath(path), max(int(cap), 1)
        self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        info = os.fstat(self.fd)
        found = _state(self.path + SIDECAR)
        cut = found.of(self.fd)
        self._settle(info.st_size, cut)
        # a cut a killed writer left half-done, one due, or a sidecar some other log left
        if cut.busy or self.size > self.limit or (found.gen and cut is not found):
            self.cut()

    def _settle(self, physical: int, cut: Cut) -> None:
        self.size, self.shift = physical, cut.shift
        self.limit = (cut.kept if cut.marker else self.cap) + cut.marker + 2 * self.cap + MARKER_ROOM

    @property
    def logical(self) -> int:
        return self.size + self.shift

    def write(self, data: bytes) -> None:
        while data:
            written = os.write(self.fd, data)
            self.size += written
            data = data[written:]
        if self.size > self.limit:
            self.cut()

    def cut(self) -> None:
        """Cut the middle out, if it is due (under the log's lock, with the signals that would
        end this process held off until it is done: a writer killed mid-cut is finished by the next)."""
        import fcntl
        import signal

        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP, signal.SIGINT})
        try:
            rw = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(rw, fcntl.LOCK_EX)
                self._cut(rw)
            finally:
                os.close(rw)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def _cut(self, rw: int) -> None:
        info = os.fstat(rw)
        if info.st_ino != os.fstat(self.fd).st_ino:  # the log was removed and made anew: write that one
            os.close(self.fd)
            self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        side = self.path + SIDECAR
        found = _state(side)
        cut = found.of(rw)
        if cut is not found and found.gen:  # left by another log: it must not hold readers up
            cut = Cut(cut.gen + 2, ino=info.st_ino)
            _write_state(side, cut)
        if cut.busy:
            cut = _finish(rw, side, cut)
        physical = os.fstat(rw).st_size
        plan = _plan(cut, physical, self.cap, info.st_ino)
        if plan is not None:
            _write_state(side, plan)
            cut = _finish(rw, side, plan)
            physical = os.fstat(rw).st_size
        self._settle(physical, cut)

    def close(self) -> None:
        os.close(self.fd)


def _plan(cut: Cut, physical: int, cap: int, ino: int) -> Cut | None:
    """The next cut of a log of `physical` bytes (as `cut` left it), if it holds enough for one:
    the tail moves behind the new marker only from where nothing of it is overwritten."""
    head = cut.kept if cut.marker else cap
    dropped = physical + cut.shift - head - cap
    text = marker(dropped, cap)
    src = physical - cap
    if dropped <= 0 or src < head + len(text) + cap:
        return None
    return Cut(cut.gen + 1, head, dropped, len(text), ino, src, cap)


def _finish(rw: int, side: str, plan: Cut) -> Cut:
    """Carry out a cut `plan` (again, after a writer killed half-way: each step can be redone,
    as the tail's source lies past where it is copied to, until the truncation ends it)."""
    end = plan.kept + plan.marker + plan.cap
    if os.fstat(rw).st_size > end:
        os.pwrite(rw, marker(plan.dropped, plan.cap), plan.kept)
        _copy(rw, plan.src, plan.kept + plan.marker, plan.cap)
        os.ftruncate(rw, end)
    done = plan.done()
    _write_state(side, done)
    return done


def _copy(fd: int, src: int, dst: int, n: int) -> None:
    try:
        while n > 0:
            moved = os.copy_file_range(fd, fd, n, src, dst)  # in the kernel, where it can
            if moved <= 0:
                return
            src, dst, n = src + moved, dst + moved, n - moved
    except (AttributeError, OSError):  # not on this system or file system: by hand
        while n > 0:
            data = os.pread(fd, min(n, _COPY), src)
            if not data:
                return
            os.pwrite(fd, data, dst)
            src, dst, n = src + len(data), dst + len(data), n - len(data)


def _write_state(side: str, cut: Cut) -> None:
    tmp = f"{side}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        os.write(fd, cut.encoded())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, side)


def section(path: str | os.PathLike[str], title: str, cap: int) -> int:
    """Separate attempts (and reviews) in a task's log with a header naming `title`; returns
    where the output that follows starts (a logical offset, as `append`'s)."""
    header = f"\n===== hive: {title} {time.strftime('%Y-%m-%d %H:%M:%S')} =====\n"
    return append(path, header.encode(), cap)


def append(path: str | os.PathLike[str], data: bytes, cap: int) -> int:
    """Append `data` to the log as its writer would (cutting it when due); returns the log's
    logical size after it: where what comes next starts."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    writer = Writer(path, cap)
    try:
        writer.write(data)
        return writer.logical
    finally:
        writer.close()


def command(path: str | os.PathLike[str], cap: int, beside: Sequence[str] = ()) -> list[str]:
    """The argv of a writer that appends its stdin to the log `path`; with `beside`
    (hive.adapters.envexec.beside's options), it also serves the sandbox's proxy beside the
    agent's pane, whose pid and terminal its caller appends (`main`)."""
    from hive import scripts  # not at the top: its own run, as a helper, imports nothing of Hive's

    return [*scripts.argv(__file__), os.fspath(path), str(int(cap)), *beside]


def main(args: list[str]) -> int:
    """`logcap.py LOG CAP [--beside SOCKET N PROGRAM... PANE_PID PANE_TTY]`: append stdin to LOG,
    cut to CAP bytes at each end, until stdin ends. With `--beside`, first listen on SOCKET
    beside the agent's pane (a sandboxed agent's proxy, started at its first connection: what
    envexec does for an agent it starts, done here so that none starts on its way)."""
    if len(args) > 4 and args[2] == "--beside" and args[4].isdigit():
        n = int(args[4])
        socket, program, rest = args[3], args[5 : 5 + n], args[5 + n :]
        if len(rest) == 2 and rest[0].isdigit():
            sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "adapters"))
            import envexec  # type: ignore[import-not-found]  # hive.adapters.envexec, as this helper's own run finds it

            envexec.start_beside(socket, program, dict(os.environ), of=int(rest[0]), tty=rest[1])
    writer = Writer(args[0], int(args[1]))
    while True:
        data = os.read(0, CHUNK)
        if not data:
            return 0
        writer.write(data)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
