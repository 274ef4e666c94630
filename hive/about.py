"""What a bug report needs: the versions of Hive and of what it drives, for `hive --version`
and every internal error in `.hive/hive.log` (pre-commit's error log does the same)."""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable

from hive import __version__
from hive.adapters import git, proc, tmux
from hive.errors import CommandError

DISTRIBUTION = "hive-agents"  # PyPI's `hive` is another project
_TIMEOUT = 5.0  # a bug report must not hang on a tool that does


def versions() -> dict[str, str]:
    """Program → version ("not found" for a tool that is missing or does not answer)."""
    return {
        DISTRIBUTION: __version__,
        "doit": _distribution("doit"),
        "git": _tool(git.version, "git version "),
        "tmux": _tool(tmux.version, "tmux "),
        "Python": f"{platform.python_version()} ({sys.executable})",
    }


def report() -> str:
    """One line per program, as `hive --version` prints it."""
    return "\n".join(f"{name} {version}" for name, version in versions().items())


def one_line() -> str:
    """The same on one line, for a log entry's header."""
    return ", ".join(f"{name} {version}" for name, version in versions().items())


def _distribution(name: str) -> str:
    from importlib import metadata  # 40 ms: only for a bug report or `hive --version`

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _tool(version: Callable[[float], proc.Result], prefix: str) -> str:
    try:
        result = version(_TIMEOUT)
    except CommandError as e:  # not on PATH (127) or no answer in time (124)
        return "not found" if e.code == 127 else f"unknown ({e.output.strip()})"
    first = result.output.splitlines()[0] if result.code == 0 and result.output else ""
    return first.removeprefix(prefix) if first else f"unknown (exit {result.code})"
