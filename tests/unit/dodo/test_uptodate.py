"""hive/dodo/uptodate.py: doit's `uptodate` answer and what `doit info` prints for a task
that is not done both come from one lifecycle.verdict, against a real repo's main."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hive.dodo.uptodate import DoneCheck
from hive.plan.done import StateView
from hive.store.files import atomic_write
from hive.store.paths import Paths
from hive.store.state import TaskState


def _record(root: Path, st: TaskState) -> None:
    path = Paths(root).state_file(st.plan, st.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, st.to_json())


def _check(root: Path, task_id: str, text_hash: str = "h1") -> DoneCheck:
    return DoneCheck(StateView(root, "main"), f"p:{task_id}", text_hash)


def test_done_is_up_to_date_and_each_way_of_not_being_done_says_why(git_repo: Path):
    head = subprocess.run(
        ["git", "-C", str(git_repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    off_main = "0" * 40
    _record(git_repo, TaskState("p", "1", state="done", task_hash="h1", merge_commit=head))
    _record(git_repo, TaskState("p", "2", state="done", task_hash="h1", merge_commit=off_main))
    _record(git_repo, TaskState("p", "3", state="blocked", task_hash="h1", reason="needs a key"))

    done = _check(git_repo, "1")
    assert done() and done.recorded_done()
    assert repr(done) == "hive: p:1 is done"
    assert not _check(git_repo, "1", "h2")()
    assert repr(_check(git_repo, "1", "h2")) == "hive: p:1 is not done: its text in the plan changed"

    left = _check(git_repo, "2")
    assert not left() and left.recorded_done()  # the state files alone say done; main does not
    assert repr(left) == "hive: p:2 is not done: its merge commit is no longer on main"
    assert repr(_check(git_repo, "3")) == "hive: p:3 is not done: it is blocked: needs a key"
    assert repr(_check(git_repo, "4")) == "hive: p:4 is not done: it has not run yet"
