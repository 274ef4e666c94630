"""bubblewrap (`bwrap`): whether it works on this machine, and how a program is run in it."""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PROBE_TIMEOUT = 10.0


@functools.cache
def unavailable() -> str:
    """Why bubblewrap cannot sandbox agents here ("" when it can): not installed, or user
    namespaces refused (a container without them). Asked once per process."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (`sudo apt-get install bubblewrap`)"
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "true"]
    try:
        r = subprocess.run(probe, capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap does not run here ({e})"
    if r.returncode != 0:
        said = (r.stderr or r.stdout).strip().splitlines()
        return f"bubblewrap does not run here: {said[-1] if said else f'exit {r.returncode}'}"
    return ""


@dataclass(frozen=True)
class View:
    """What a sandboxed program sees besides the read-only machine: binds in this order
    (a later one wins where they overlap)."""

    readable: tuple[Path, ...] = ()  # under /tmp (which is private): bound back, read-only
    writable: tuple[Path, ...] = ()
    files: tuple[tuple[Path, Path], ...] = ()  # (source, target): a file shown at target, read-only
    moved: tuple[tuple[Path, Path], ...] = ()  # (source, target): a folder shown at target, writable
    hidden: tuple[Path, ...] = ()
    network: bool = True  # False: only a loopback of its own (--unshare-net)


def command(view: View, argv: Iterable[str]) -> list[str]:
    """`argv` run inside bubblewrap with `view`. Its processes get their own pid namespace
    (when the pane's process ends, every one of them ends: none escapes to init) and die
    with their parent; they keep the terminal (a TUI agent needs it)."""
    out = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in view.readable:
        if path.exists():
            out += ["--ro-bind", str(path), str(path)]
    for path in view.writable:
        out += ["--bind", str(path), str(path)]
    for source, target in view.moved:
        out += ["--bind", str(source), str(target)]
    for source, target in view.files:
        out += ["--ro-bind", str(source), str(target)]
    for path in view.hidden:
        if path.is_dir():
            out += ["--tmpfs", str(path)]
        elif path.exists():
            out += ["--ro-bind", "/dev/null", str(path)]
    # its temporary files go to its own /tmp, wherever TMPDIR pointed (a read-only home, say)
    out += ["--setenv", "TMPDIR", "/tmp", "--unshare-pid", "--die-with-parent"]
    out += [] if view.network else ["--unshare-net"]
    out.append("--")
    return out + list(argv)
