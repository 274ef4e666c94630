"""Is a plan's task done? Read once per process from Hive's state files and main's history:
done is lifecycle.verdict (recorded done for the task's current text, its merge commit on
main). doit's `uptodate` checks, `doit list` and `hive doctor` all ask this view."""

from __future__ import annotations

from pathlib import Path

from hive.lifecycle import State, Verdict, verdict
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState


class StateView:
    """Read-only view of every task's state, read once per process: `doit list
    --status` on 1,000 tasks costs one directory walk and one `git rev-list`."""

    def __init__(self, root: Path, main_branch: str) -> None:
        self.root, self.main_branch = root, main_branch
        self.main_ref = f"refs/heads/{main_branch}"
        self._states: dict[str, TaskState] | None = None
        self._on_main: set[str] | None = None

    def states(self) -> dict[str, TaskState]:
        if self._states is None:
            self._states = StateStore(Paths(self.root)).read_all()
        return self._states

    def get(self, key: str) -> TaskState | None:
        return self.states().get(key)

    def merged(self, commit: str) -> bool:
        from hive.adapters import git  # a run's checks only: `doit list` never needs git

        if self._on_main is None:
            done = [s for s in self.states().values() if s.state == State.DONE and s.merge_commit]
            since = min((s.updated_at for s in done), default=0) - 86400
            self._on_main = git.first_parent_since(self.root, self.main_ref, since) if done else set()
        return commit in self._on_main or git.is_ancestor(self.root, commit, self.main_ref)

    def verdict(self, key: str, text_hash: str) -> Verdict:
        return verdict(self.get(key), text_hash, self.merged, self.main_branch)
