"""Hive's on-disk task state: `.hive/state/<plan>/<ID>.json`, one file per task,
written whole and atomically under a lock, every change appended to
`.hive/events.jsonl`. This — not doit's database — is what says a task is done."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from hive.crashsafe import uninterruptible
from hive.errors import HiveError
from hive.lifecycle import INTERRUPTED, TRANSITIONS, Ended, Resume, State
from hive.reviews import CheckRun, Review
from hive.store.files import append_line, atomic_write, locked
from hive.store.names import task_key
from hive.store.paths import Paths


class HistoryEntry(TypedDict, total=False):
    """How one attempt ended (TaskState.history), as the state file keeps it."""

    attempt: int
    outcome: str  # the state it ended in, or a lifecycle.Ended
    reason: str  # for people
    branch: str
    base: str
    worker: str
    log_offset: int
    started_at: float
    finished_at: float
    usage: dict[str, Any]  # its tokens and cost (store.usage)
    check_output: str  # what the check that failed it printed (outcome check_failed)
    held: str  # why its change waits for a human (outcome held: engine/hold.py)
    ci_report: str  # its PR's failed checks, as its author's next brief shows them (outcome ci_failed)


# fields renamed since 0.1, so state written by an older Hive reads the same
_RENAMED = {"pane_pid": "agent_token", "attempts": "attempts_used"}


# A done task opened again (edited, or `hive retry --force`) is a new piece of work: in
# pull-request mode a new PR, whose rounds are counted afresh (engine/pullrequest.py).
NEW_PR: dict[str, Any] = {
    "pr": 0,
    "pr_url": "",
    "pr_pushed": "",
    "pr_merging": "",
    "pr_person": False,
    "pr_told": False,
    "ci_rounds": 0,
    "issue_said": "",
}


@dataclass(frozen=True)
class TaskState:
    plan: str
    id: str
    state: State = State.PLANNED
    attempt: int = 0  # number of the latest attempt (names, signals, logs)
    attempts_used: int = 0  # attempts that count against max_attempts
    reason: str = ""
    task_hash: str = ""
    worker: str = ""
    pid: int = 0
    session: str = ""
    worktree: str = ""
    branch: str = ""
    base: str = ""  # main's commit the attempt started from
    agent_token: int = 0  # the executor's handle on the running agent (executors.AgentRef)
    node: str = ""  # the host it runs on, when the executor runs agents elsewhere
    log_offset: int = 0
    started_at: float = 0.0
    updated_at: float = 0.0
    merge_commit: str = ""
    merging: str = ""  # a merge commit being published to main (intent record)
    files: tuple[str, ...] = ()
    output_tail: str = ""
    resume: Resume = Resume.NOTHING
    answer: str = ""  # a human's answer to this checkpoint ("approved", "choice: B", ...)
    feedback: str = ""  # a human's --reject text, for this task's next attempt
    permanent: bool = False  # its failure cannot be fixed by retrying: the run holds it
    resume_at: float = 0.0  # paused (rate-limited) until then
    pauses: int = 0  # rate limits in a row (the back-off grows with them)
    usage: dict[str, Any] = field(default_factory=dict)  # the running attempt's tokens and cost (usage.py)
    # each run of its checks in its latest merge step: the merge queue verifies a task again when
    # what was ahead of it changed, or to bisect a batch that failed (engine/merge)
    checks: tuple[CheckRun, ...] = ()
    reviews: tuple[Review, ...] = ()  # every review of its change, oldest first (engine/review.py)
    history: tuple[HistoryEntry, ...] = field(default=())
    # its superseded attempts' branches (commits not in main) that Hive kept and has told of once
    kept_branches: tuple[str, ...] = ()
    # pull-request mode (engine/pullrequest.py): its PR, the commit Hive last pushed to its branch,
    # the head a merge through the API was asked for (the intent), the reviews and comments read
    # on the forge already (each once: given to its author, or taken as a command), what people
    # without write access wrote (shown, never given), whether it waits for a person now (a review,
    # a decision) rather than for CI, whether a person was told it waits for a review, and the CI
    # rounds sent back so far
    pr: int = 0
    pr_url: str = ""
    pr_pushed: str = ""
    pr_merging: str = ""
    forge_read: tuple[int, ...] = ()
    forge_ignored: tuple[str, ...] = ()
    pr_person: bool = False
    pr_posted: int = 0  # its reviews (of `reviews`) posted on the PR so far
    pr_told: bool = False
    ci_rounds: int = 0
    # its issue on the forge (a plan drafted from issues, engine/issues.py): the one status comment
    # Hive keeps there and what it says now, and since when its comments may answer a checkpoint
    # (`forge_read` and `forge_ignored` hold the comments read there as well)
    issue_comment: int = 0
    issue_said: str = ""
    forge_since: float = 0.0

    @property
    def key(self) -> str:
        return task_key(self.plan, self.id)

    @property
    def only_merge(self) -> bool:
        """The agent's work is on `branch`: what is left to do is merging it."""
        return self.resume in (Resume.MERGE, Resume.MERGING)

    def to_json(self) -> str:
        # its fields as they are (json writes tuples and dicts alike): dataclasses.asdict copied
        # each history entry and usage deeply, at every one of a task's state changes
        data = {name: getattr(self, name) for name in _FIELDS} | {
            "checks": [c.to_json() for c in self.checks],
            "reviews": [r.to_json() for r in self.reviews],
        }
        return json.dumps(data, indent=1, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskState:
        if not isinstance(data, dict):
            raise TypeError(f"a state file holds a JSON object, not {type(data).__name__}")
        values = {_RENAMED.get(k, k): v for k, v in data.items()}
        values = {k: v for k, v in values.items() if k in _FIELDS}
        values["state"] = State(values.get("state", State.PLANNED))  # ValueError: not a state
        values["resume"] = Resume(values.get("resume", Resume.NOTHING))
        values["files"] = tuple(values.get("files", ()))
        values["history"] = tuple(values.get("history", ()))
        values["checks"] = tuple(CheckRun.from_json(c) for c in values.get("checks", ()))
        values["reviews"] = tuple(Review.from_json(r) for r in values.get("reviews", ()))
        values["kept_branches"] = tuple(values.get("kept_branches", ()))
        values["forge_read"] = tuple(values.get("forge_read", ()))
        values["forge_ignored"] = tuple(values.get("forge_ignored", ()))
        return cls(**values)


_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskState))  # read 10,000 times by a long plan's run


class StateStore:
    """Read and change task states. Every change is a read-modify-write under one
    lock, so a claim is a compare-and-swap even across processes."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._lock = paths.state_lock

    def read(self, plan: str, task_id: str) -> TaskState:
        path = self.paths.state_file(plan, task_id)
        try:
            return TaskState.from_dict(json.loads(path.read_text()))
        except FileNotFoundError:
            return TaskState(plan, task_id)
        except (ValueError, TypeError) as e:  # JSONDecodeError is a ValueError
            raise HiveError(f"{path}: unreadable state ({e}); move the file away to reset this task") from None

    def read_all(self) -> dict[str, TaskState]:
        """Every recorded task state, keyed `plan:ID` (one directory walk)."""
        out = {}
        if self.paths.state.is_dir():
            for plan_dir in self.paths.state.iterdir():
                for f in plan_dir.glob("*.json"):
                    try:
                        st = TaskState.from_dict(json.loads(f.read_text()))
                    except (OSError, ValueError, TypeError):
                        continue
                    out[st.key] = st
        return out

    def update(
        self,
        plan: str,
        task_id: str,
        *,
        expect: tuple[State, ...] | None = None,
        event: str = "",
        details: Mapping[str, object] | None = None,
        **changes: Any,
    ) -> TaskState:
        """Apply `changes`; if `expect` is given the current state must be one of
        them, else `StaleState` is raised and nothing is written. `details`: more of what
        happened, in its event's line."""
        with uninterruptible(), locked(self._lock):  # the state file and its event line go together
            old = self.read(plan, task_id)
            if expect is not None and old.state not in expect:
                raise StaleState(old)
            new = dataclasses.replace(old, updated_at=time.time(), **changes)
            if new.state not in TRANSITIONS[State(old.state)]:
                raise ValueError(f"{old.key}: {old.state} → {new.state} is not a valid transition")
            atomic_write(self.paths.state_file(plan, task_id), new.to_json())
            if event or new.state != old.state:
                self._event(old, new, event, details or {})
            return new

    def close_attempt(
        self,
        st: TaskState,
        state: State,
        reason: str,
        *,
        expect: tuple[State, ...] | None = None,
        outcome: str = "",
        event: str = "",
        **changes: Any,
    ) -> TaskState:
        """End the attempt `st` in `state`, keeping its story in the history (what
        continuation briefs and the report tell): `outcome` (lifecycle.Ended) where the
        state alone does not say how it ended. A failed check's output (`output_tail`) is
        kept in the entry: the task's own output_tail is replaced by the next attempt."""
        check_output = changes.get("output_tail", "") if outcome == Ended.CHECK_FAILED else ""
        entry = history_entry(st, outcome or state, reason, check_output)
        held = changes.pop("held", "")
        if held:
            entry["held"] = held
        ci_report = changes.pop("ci_report", "")
        if ci_report:
            entry["ci_report"] = ci_report
        changes.setdefault("usage", {})  # now in the history entry: counted once
        return self.update(
            st.plan,
            st.id,
            expect=expect,
            event=event,
            state=state,
            reason=reason,
            history=st.history + (entry,),
            **changes,
        )

    def mark_interrupted(self, st: TaskState) -> TaskState:
        """Its agent is gone and no run holds it: the attempt was interrupted (an
        orchestrator crash), which does not count against max_attempts."""
        return self.close_attempt(
            st,
            State.FAILED,
            INTERRUPTED,
            expect=(State.IN_PROGRESS,),
            outcome=INTERRUPTED,
            attempts_used=max(st.attempts_used - 1, 0),
            event="interrupted: its agent is gone and no run held it",
        )

    def mark(self, st: TaskState, event: str) -> None:
        """An event line alone, for a step of an attempt that changes nothing in its state (its
        merge's checks began): the state file is not rewritten, so a mark costs no fsync."""
        with locked(self._lock):
            self._event(st, st, event, {})

    def _event(self, old: TaskState, new: TaskState, event: str, details: Mapping[str, object]) -> None:
        record = {
            "time": round(time.time(), 3),
            "task": new.key,
            "from": old.state,
            "to": new.state,
            "attempt": new.attempt,
            "event": event or new.state,
            "reason": new.reason,
            "pid": os.getpid(),
            **details,
        }
        append_line(self.paths.events, json.dumps(record))


def history_entry(st: TaskState, outcome: str, reason: str, check_output: str = "") -> HistoryEntry:
    """How one attempt ended, kept for continuation context and the report."""
    return {
        **({"check_output": check_output} if check_output else {}),
        "attempt": st.attempt,
        "outcome": outcome,
        "reason": reason,
        "branch": st.branch,
        "base": st.base,
        "worker": st.worker,
        "log_offset": st.log_offset,
        "started_at": round(st.started_at, 3),
        "finished_at": round(time.time(), 3),
        **({"usage": dict(st.usage)} if st.usage else {}),
    }


class StateCache:
    """`StateStore.read_all` for a reader that reads every state again and again (the dashboard, at
    each change): a state file is parsed again only when it was replaced (its inode, size or
    modification time differ), so a change costs one file, not the whole plan."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._seen: dict[str, tuple[tuple[int, int, int], TaskState | None]] = {}

    def read_all(self) -> dict[str, TaskState]:
        out: dict[str, TaskState] = {}
        seen: dict[str, tuple[tuple[int, int, int], TaskState | None]] = {}
        for entry in _entries(str(self.paths.state)):
            if not entry.is_dir():
                continue
            for f in _entries(entry.path):
                if f.name.startswith(".") or not f.name.endswith(".json"):
                    continue  # an atomic write's temp file
                try:
                    stat = f.stat()
                except OSError:
                    continue
                stamp = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
                before = self._seen.get(f.path)
                st = before[1] if before and before[0] == stamp else _parsed(f.path)
                seen[f.path] = (stamp, st)
                if st is not None:
                    out[st.key] = st
        self._seen = seen
        return out


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []


def _parsed(path: str) -> TaskState | None:
    try:
        with open(path) as f:
            return TaskState.from_dict(json.loads(f.read()))
    except (OSError, ValueError, TypeError):
        return None


class StaleState(Exception):
    """A compare-and-swap found the task in another state than expected."""

    def __init__(self, current: TaskState) -> None:
        self.current = current
        super().__init__(f"{current.key} is {current.state}")
