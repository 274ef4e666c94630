"""hive/dodo/reconcile.py at scale: a finished task with nothing left behind costs no
lock and no git call (a 10,000-task run's start; bench/scale.py measures it); and what it
says of a leftover session."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from hive.adapters import git
from hive.dodo.reconcile import _leftovers, _worth_a_look
from hive.executors import AgentRef
from hive.settings.config import Config
from hive.store.state import TaskState


def test_only_tasks_with_something_left_behind_are_looked_at(tmp_path: Path):
    history = ({"attempt": 1, "branch": "hive/p-1-a1"},)
    done = TaskState("p", "1", state="done", branch="hive/p-1-a1", session="s1", history=history)
    assert not _worth_a_look(done, sessions=set(), branches=set())
    assert _worth_a_look(done, sessions={"s1"}, branches=set())  # its terminal is still open
    assert _worth_a_look(done, sessions=set(), branches={"hive/p-1-a1"})  # its branch is still there
    kept = tmp_path / "wt"
    kept.mkdir()
    assert _worth_a_look(TaskState("p", "1", state="done", worktree=str(kept)), set(), set())
    assert _worth_a_look(TaskState("p", "1", state="in_progress"), set(), set())
    assert not _worth_a_look(TaskState("p", "1", state="failed", session="s2"), set(), set())


def test_merged_commits_are_found_in_one_call_even_without_a_time_window(tmp_path: Path):
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    (tmp_path / "a").write_text("a")
    subprocess.run(["git", "-C", str(tmp_path), "add", "a"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qm", "a"], check=True)
    head = git.rev_parse(tmp_path, "refs/heads/main")
    assert head in git.first_parent_since(tmp_path, "refs/heads/main", -86400)  # state written with no time
    assert head in git.first_parent_since(tmp_path, "refs/heads/main", time.time() - 86400)
    assert head not in git.first_parent_since(tmp_path, "refs/heads/main", time.time() + 86400)


class _Remote:
    """An executor whose leftover attempt no node holds (Ray: its node died): nothing to attach to."""

    kind = "ray"

    def worktree_base(self, root: Path, configured: str) -> Path:
        return root / configured

    def agent(self, ref: AgentRef) -> _RemoteAgent:
        return _RemoteAgent(ref)


@dataclass
class _RemoteAgent:
    ref: AgentRef

    def attach_argv(self) -> list[str]:
        name = self.ref.name
        return [] if name.endswith("a1") else ["ssh", "-t", "10.0.0.7", "tmux", "attach-session", "-t", name]


def test_a_leftover_session_says_how_to_look_at_it_only_where_it_can_be(git_repo: Path):
    sessions = {"hive-w3-p-4-abc123-a1", "hive-w1-p-5-def456-a2"}
    notes = _leftovers(git_repo, Config(), _Remote(), {}, sessions)  # type: ignore[arg-type]
    assert notes == [
        "leftover ray session hive-w1-p-5-def456-a2 (no task uses it): look with "
        "`ssh -t 10.0.0.7 tmux attach-session -t hive-w1-p-5-def456-a2`, end it with `hive cleanup`",
        "leftover ray session hive-w3-p-4-abc123-a1 (no task uses it): end it with `hive cleanup`",
    ]
