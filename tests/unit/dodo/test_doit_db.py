"""doit's sqlite database as Hive configures it: a removal (a failed task's entry) is committed
at once, so a second `doit` on the repository is not locked out until the first one ends."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from doit.dependency import JSONCodec, SqliteDB

from hive.dodo import loader


def test_a_removal_holds_no_lock_on_the_db(tmp_path: Path):
    loader._removals_commit_at_once()
    db = tmp_path / ".doit.db"
    first = SqliteDB(str(db), JSONCodec())
    first.remove("plan:task")  # doit does this for a task that failed
    other = sqlite3.connect(db, timeout=0.1)
    other.execute("insert into doit values (?, ?)", ("plan:other", "{}"))  # raised "database is locked"
    other.commit()
