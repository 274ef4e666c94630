"""Processes seen through /proc: is a pid alive, who holds a file open, and which
processes belong to one agent attempt — so stopping an agent means all of it.

An agent is more than its tmux pane's process: tmux makes that process a session
leader, the agent runs below it, and an agent that traps SIGINT outlives the
pane's shell with ppid 1 (seen with `hive stop`). Its processes are found by the
environment Hive gave the attempt (HIVE_ROOT, HIVE_TASK, HIVE_ATTEMPT) and by its
session id; the session id alone is trusted only together with an environment
match, because after a reboot that number may belong to someone else.
"""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

POLL = 0.05


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A finished pane process can linger as a zombie until tmux reaps it (seen with
    tmux 3.3a): it still answers kill(0), so look at its state where /proc exists."""
    stat = _stat(pid)
    return stat is not None and stat[0] in ("Z", "X")


def _stat(pid: int) -> tuple[str, int, int, int, int] | None:
    """(state, ppid, process group, session id, start time in clock ticks since boot) of a
    live pid."""
    try:
        fields = _read(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _read(path: str) -> bytes:
    """A file of /proc, whole: read with the bare calls, as `members` reads two files of every
    process each time it looks (Python's open() adds a stat, a seek and a terminal check each)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _pids() -> Iterator[int]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if name.isdigit():
            yield int(name)


def holders(path: Path) -> list[int]:
    """Processes that have `path` open (git keeps its lock files open while it works).
    /proc shows the resolved path, so compare with that, not with the name as given."""
    return _holding({os.path.realpath(path)})


def _holding(links: set[str]) -> list[int]:
    """Processes with a descriptor whose /proc/<pid>/fd link reads as one of `links`."""
    found = []
    for pid in _pids() if links else ():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in links:
                    found.append(pid)
                    break
            except OSError:
                continue
    return found


def listening_on(path: Path) -> list[int]:
    """Processes holding the unix socket bound at `path` (a tmux server, for its socket):
    the socket's inode from /proc/net/unix, then whose descriptors point at it — not a child
    that still holds it because it was just forked by one of them, before it closes it or execs
    (a tmux server starting a pane: seen as two "servers" in CI)."""
    wanted = {str(path), os.path.realpath(path)}
    try:
        table = _read("/proc/net/unix").decode(errors="replace").splitlines()[1:]
    except OSError:
        return []
    # Num RefCount Protocol Flags Type St Inode Path
    inodes = {f"socket:[{f[6]}]" for f in (line.split(None, 7) for line in table) if len(f) == 8 and f[7] in wanted}
    holding = _holding(inodes)
    return [pid for pid in holding if (st := _stat(pid)) is None or st[1] not in holding]


def command_name(pid: int) -> str:
    """What the process calls itself (/proc/<pid>/comm: "tmux: server" for tmux's server)."""
    try:
        return _read(f"/proc/{pid}/comm").decode(errors="replace").strip()
    except OSError:
        return ""


# the variables of an attempt's environment that find its processes (AgentMark)
MARKS = ("HIVE_ROOT", "HIVE_TASK", "HIVE_ATTEMPT")


@dataclass(frozen=True)
class AgentMark:
    """What identifies one attempt's processes."""

    root: str
    task: str
    attempt: int
    session_id: int  # the tmux pane's pid: the session leader tmux made

    def _needles(self) -> tuple[bytes, ...]:
        values = (self.root, self.task, self.attempt)
        return tuple(f"{name}={value}".encode() for name, value in zip(MARKS, values, strict=True))


def members(mark: AgentMark, born: int = 0) -> set[int]:
    """Every live process of this attempt's agent; `born` (`birth`'s) leaves out, unread, the
    processes started before it: none of them can be the agent's."""
    needles = mark._needles()
    by_env, by_session = set(), set()
    me = os.getpid()
    for pid in _pids():
        stat = _stat(pid)
        if stat is None or stat[0] in ("Z", "X") or pid == me or stat[4] < born:
            continue
        if mark.session_id > 0 and stat[3] == mark.session_id:
            by_session.add(pid)
        if _has_env(pid, needles):
            by_env.add(pid)
    return by_env | (by_session if by_session & by_env else set())


def birth(mark: AgentMark) -> int:
    """When the attempt's pane process started (clock ticks since boot), if that pid is still
    the attempt's (its environment says so), else 0. Every process of the agent descends from
    it, so none is older: a scan need not read the environment of the machine's older
    processes (issue 44: most of a scan's ~5 ms here, and a desktop has hundreds). Not a wall
    clock's time: one set back would hide the agent's processes."""
    stat = _stat(mark.session_id) if mark.session_id > 0 else None
    if stat is None or stat[0] in ("Z", "X") or not _has_env(mark.session_id, mark._needles()):
        return 0
    return stat[4]


def _has_env(pid: int, needles: tuple[bytes, ...]) -> bool:
    try:
        env = set(_read(f"/proc/{pid}/environ").split(b"\0"))
    except OSError:
        return False
    return all(n in env for n in needles)


Stages = tuple[tuple[int, float], ...]


def stages(patience: float, finished: bool = False) -> Stages:
    """Stopping an agent against its will (hive stop, a timeout): SIGINT first, so it
    may save its work. Ending one that finished (it signalled, or exited): SIGHUP,
    what closing its terminal does. Then SIGTERM and SIGKILL, `patience` apart."""
    first = (signal.SIGHUP, min(patience, 2.0)) if finished else (signal.SIGINT, patience)
    return (first, (signal.SIGTERM, patience), (signal.SIGKILL, patience))


def stop_in_stages(
    mark: AgentMark, stages: Stages, report: Callable[[str], None], quiet_first: bool = False
) -> set[int]:
    """Signal every process of the agent, stage by stage, until none is left;
    returns what survived the last stage (nothing, unless the kernel disagrees).
    `quiet_first`: the first stage is routine (an agent that finished), not news."""
    born = birth(mark)  # once, while the pane's process still lives to say it
    pids = members(mark, born)
    for n, (sig, patience) in enumerate(stages):
        if not pids:
            return set()
        if n or not quiet_first:
            report(f"sending {signal.Signals(sig).name} to {_describe(pids)}, waiting up to {patience:g}s")
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                continue
        pids = _outlasting(mark, pids, patience, born)
    return pids


def _outlasting(mark: AgentMark, pids: set[int], patience: float, born: int) -> set[int]:
    """What is left of the agent after waiting up to `patience` for it to end. While the
    processes it had live only they are looked at: a scan (`members`) reads every process's
    environment, ~5 ms of CPU, and an agent ending a task is stopped once a task."""
    deadline, pause = time.monotonic() + patience, 0.005
    while True:
        if _ended(pids, deadline):
            pause = 0.0  # woken by their ends: a look at once, no nap
        if not any(pid_alive(pid) for pid in pids):
            pids = members(mark, born)  # gone, unless one of them started another meanwhile
            if not pids:
                return pids
        if time.monotonic() >= deadline:
            return members(mark, born)
        time.sleep(pause)  # most agents are gone within milliseconds: look again soon, then less often
        pause = min(max(pause * 2, 0.005), POLL)


def _ended(pids: set[int], deadline: float) -> bool:
    """Wait until each of `pids` has ended or `deadline` (monotonic) passed, woken the moment
    the last one ends through pidfds, not a nap of up to POLL at each look (issue 44: ~5 ms on
    every task's way). False where the kernel has none (before Linux 5.3): the caller looks."""
    fds: list[int] = []
    try:
        for pid in pids:
            try:
                fds.append(os.pidfd_open(pid))
            except ProcessLookupError:
                continue
        while fds and (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(fds, [], [], left)
            for fd in ready:
                fds.remove(fd)
                os.close(fd)
    except (AttributeError, OSError):  # no pidfd_open here (not Linux, an old kernel, too many open)
        return False
    finally:
        for fd in fds:
            os.close(fd)
    return True


def _describe(pids: set[int]) -> str:
    listed = ", ".join(str(p) for p in sorted(pids)[:8])
    return f"its process{'es' if len(pids) > 1 else ''} (pid {listed}{', …' if len(pids) > 8 else ''})"
