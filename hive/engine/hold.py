"""What a task's change may not do on its own (issue 37): change Hive's own files — what the
user's next `doit` obeys (`[merge] protect`: dodo.py, `.hive/`, plans, the worktrees' folder) —
or add a file bigger than `[merge] max_file_mb`. Such a change is verified as usual and then
waits for a human (`awaiting_human`, Resume.HELD): `hive approve` merges it as it is, `hive retry`
runs the task again, its brief naming what to leave alone (the attempt's history entry, `held`)."""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hive.settings.config import Config

SHOWN = 10  # files named in a reason


@dataclass(frozen=True)
class Rules:
    """What a merge holds for a human (none when a human approved the change)."""

    protected: tuple[str, ...] = ()
    max_mb: int = 0  # 0: no limit

    @property
    def max_bytes(self) -> int | None:
        return self.max_mb * 1024 * 1024 if self.max_mb else None


NONE = Rules()


def rules(cfg: Config) -> Rules:
    return Rules(cfg.protected, cfg.max_file_mb)


def touched(protected: Sequence[str], paths: Iterable[str]) -> list[str]:
    """The `paths` (of a change: added, changed or deleted; a rename is both) that are
    protected: an entry ending in `/` is that folder and all in it (a file of its name too: a
    symbolic link put in its place); one with `*`, `?` or `[` an fnmatch pattern; else that path."""
    return sorted({path for path in paths if any(_covers(entry, path) for entry in protected)})


# doit reads its configuration, and the plugins it imports, from the project's pyproject.toml too:
# with dodo.py protected, that table is (the rest of the file is the project's own)
PYPROJECT = "pyproject.toml"
DOIT_TABLE = "pyproject.toml [tool.doit]"


def doit_table(text: str | None) -> object:
    """The `[tool.doit]` table of a pyproject.toml's text (None: none; a file TOML cannot read
    counts as a change, since doit would fail on it)."""
    if text is None:
        return None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "unreadable"
    tool = data.get("tool")
    return tool.get("doit") if isinstance(tool, dict) else None


def guards_doit(protected: Sequence[str]) -> bool:
    """Is doit's own configuration protected (dodo.py is): its table in pyproject.toml then too."""
    return any(_covers(entry, "dodo.py") for entry in protected)


def _covers(entry: str, path: str) -> bool:
    entry = entry.strip().removeprefix("./")
    if entry.endswith("/"):
        return path == entry.rstrip("/") or path.startswith(entry)
    if any(c in entry for c in "*?["):
        return fnmatch.fnmatchcase(path, entry)
    return path == entry


def reason(protected: Sequence[str], big: Sequence[tuple[str, int]], max_mb: int, leaves: bool = False) -> str:
    """Why the change waits for a human ("": it does not); `leaves`: the big files are left
    uncommitted in its checkout (not yet in its commits)."""
    parts = []
    if protected:
        parts.append(f"changes Hive's own files: {_names(list(protected))}")
    if big:
        files = [f"{path} ({size / 1e6:,.1f} MB)" for path, size in big]
        verb = "leaves uncommitted" if leaves else "adds"
        parts.append(f"{verb} files over [merge] max_file_mb = {max_mb}: {_names(files)}")
    return "; ".join(parts)


def _names(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more
