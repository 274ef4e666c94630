"""Processes seen from outside, through /proc: whether doit has loaded Hive yet, a process group's
members, every process that carries a trial's environment; and signalling a group."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path


def hive_loaded(pid: int) -> bool:
    """Whether doit's process has loaded Hive, seen from outside: Hive's first act in a doit
    process is to handle SIGTERM (crashsafe.install_for_doit), which Python alone leaves at its
    default, so the SIGTERM bit of /proc/<pid>/status's SigCgt (caught signals) says it."""
    try:
        with open(f"/proc/{pid}/status") as f:
            caught = next((int(line.split()[1], 16) for line in f if line.startswith("SigCgt:")), 0)
    except (OSError, ValueError):
        return True  # gone, or unreadable: hold the run to the full rules
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except OSError:  # the group is already gone
        pass


def group_snapshot(pgid: int) -> list[str]:
    """Every process of a process group: pid, state, the kernel function it waits in,
    command line."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
            if not d.name.isdigit() or int(stat[2]) != pgid:
                continue
            wchan = (d / "wchan").read_text().strip()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            out.append(f"{d.name} {stat[0]} {wchan or '-'} {cmd[:90]}{_threads(d)}")
        except (OSError, IndexError, ValueError):
            continue
    return out


def _threads(proc_dir: Path) -> str:
    """A process's other threads and where each waits (a lock one thread holds is another's futex wait)."""
    waits = []
    for t in sorted((proc_dir / "task").iterdir(), key=lambda t: int(t.name))[1:]:
        with contextlib.suppress(OSError):
            waits.append(f"{t.name}:{(t / 'wchan').read_text().strip() or '-'}")
    return f" [threads {' '.join(waits)}]" if waits else ""


def dump_python_stacks(pgid: int, out: Path, patience: float = 2.0) -> str:
    """Every thread's Python stack of the group's leader, if it is a Python run with
    PYTHONFAULTHANDLER set (a trial's environment sets it): SIGABRT makes faulthandler
    print them to its stderr, the run's output file, and the process dies of it. What a
    hung run waited in, as the process list alone cannot say."""
    before = out.stat().st_size if out.exists() else 0
    try:
        os.kill(pgid, signal.SIGABRT)
    except OSError:
        return ""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline and _alive(Path(f"/proc/{pgid}")):
        time.sleep(0.05)
    with open(out, "rb") as f:
        f.seek(before)
        text = f.read().decode(errors="replace")
    start = text.find("Fatal Python error")
    return text[start:] if start >= 0 else ""


def _alive(proc_dir: Path) -> bool:
    try:
        return not _zombie(proc_dir)
    except OSError:
        return False


def processes_where(wanted: Callable[[list[bytes]], bool]) -> list[tuple[int, str]]:
    """(pid, command line) of every live process but this one whose environment entries
    (`NAME=value` bytes) are `wanted`."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if wanted((d / "environ").read_bytes().split(b"\0")) and not _zombie(d):
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                out.append((int(d.name), cmd))
        except OSError:
            continue
    return out


def _zombie(proc_dir: Path) -> bool:
    return (proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
