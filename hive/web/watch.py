"""What the open pages' stamp is made of: the size and modification time of the files and folders
Hive writes when something changes, found with a few `stat` calls and no reading. A state file is
replaced by a rename, which changes its plan's folder; a question, an answer or its delivery is a
new file in its task's folder; every change of state appends to the events log. The agents'
output (their logs and notes) is watched only for the tasks a page shows running."""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable
from pathlib import Path

from hive.store.paths import Paths

Stat = tuple[int, int]  # size, modification time (ns)


def stamp(paths: Paths, watch: Iterable[str]) -> tuple[Hashable, Hashable]:
    """(the state's stamp, the output's) — see hive.web.live."""
    files = tuple(_stat(p) for p in (paths.events, paths.run_record, paths.config))
    folders = (paths.plans, paths.state, paths.questions, paths.pause_file("x").parent, paths.discovered)
    return (files, tuple(_entries(f) for f in folders)), tuple(_stat(Path(w)) for w in watch)


def _stat(path: Path) -> Stat:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, 0)
    return (st.st_size, st.st_mtime_ns)


def _entries(folder: Path) -> tuple[tuple[str, Stat], ...]:
    """Each entry of `folder` with its stat (a sub-folder's changes when a file in it is added,
    renamed or removed)."""
    try:
        with os.scandir(folder) as it:
            found = []
            for entry in it:
                try:
                    st = entry.stat()
                except OSError:
                    continue
                found.append((entry.name, (st.st_size if entry.is_file() else 0, st.st_mtime_ns)))
    except OSError:
        return ()
    return tuple(sorted(found))


def output_files(paths: Paths, keys: Iterable[str]) -> tuple[str, ...]:
    """The log and notes files of these tasks (`plan:ID` each)."""
    out = []
    for key in keys:
        plan, _, task_id = key.partition(":")
        out += [str(paths.log_file(plan, task_id)), str(paths.notes_file(plan, task_id))]
    return tuple(out)
