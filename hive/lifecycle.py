"""A task's lifecycle in one place: the states it can be in, the ways an attempt
can end (outcomes, some of them signalled by the agent), and one table that says
what each outcome leads to. Adding a signal is one row in OUTCOMES plus a line in
the brief's template; the CLI verbs, the signal files, the runner and the reports
all read this table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class TaskType(StrEnum):
    """What a task is (its `**Type:**`; a gate is one Hive adds)."""

    AUTO = "auto"  # an agent does it
    SCRIPT = "script"  # its first fenced code block runs instead of an agent
    HUMAN_VERIFY = "checkpoint:human-verify"
    DECISION = "checkpoint:decision"
    HUMAN_ACTION = "checkpoint:human-action"
    GATE = "gate"  # a hard stop Hive adds (plan.gates): not work, never counted as a task

    @property
    def is_checkpoint(self) -> bool:
        """Waits for a human."""
        return self.startswith("checkpoint:") or self is TaskType.GATE


class Resume(StrEnum):
    """What is left of a task whose agent finished (TaskState.resume)."""

    NOTHING = ""
    MERGE = "merge"  # merge its branch (a human's go-ahead: what its worktree holds is committed first)
    # Hive's merge step is under way: the branch holds all the work, and anything else in the
    # worktree was left by an interrupted merge (never committed)
    MERGING = "merging"
    RESOLVE = "resolve"  # its merge conflicted with main: the next attempt merges main into its branch
    REVIEW = "review"  # `auto_merge = false`: verified, waiting for a human's `hive approve` to merge
    # its agent asked a question (`hive ask`) and ended before the answer came: once
    # `hive answer` gives it, the next attempt goes on with every question and answer
    ANSWER = "answer"
    # verified, but its change does what a task may not do on its own (engine/hold.py: Hive's own
    # files, a huge file): `hive approve` merges it as it is, `hive retry` runs it again
    HELD = "held"
    # pull-request mode: its PR is open on the forge (TaskState.pr); a run follows it until it is merged
    PR = "pr"


class State(StrEnum):
    PLANNED = "planned"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    FAILED = "failed"
    BLOCKED = "blocked"
    TOO_BIG = "too_big"
    AWAITING_HUMAN = "awaiting_human"
    PAUSED = "paused"  # rate-limited: waits until its resume_at, then goes on by itself


# Which state may follow which (a re-opened task goes back to planned).
TRANSITIONS: dict[State, frozenset[State]] = {
    State.PLANNED: frozenset({State.IN_PROGRESS, State.AWAITING_HUMAN, State.PLANNED}),
    State.IN_PROGRESS: frozenset(
        {State.DONE, State.FAILED, State.BLOCKED, State.TOO_BIG, State.AWAITING_HUMAN, State.IN_PROGRESS, State.PAUSED}
    ),
    # a task's open PR (pull-request mode) waits in awaiting_human, or paused by the forge's rate
    # limit; what the forge says then ends it (done, blocked) or starts its author again (failed)
    State.PAUSED: frozenset(
        {State.IN_PROGRESS, State.PLANNED, State.PAUSED, State.AWAITING_HUMAN, State.DONE, State.FAILED, State.BLOCKED}
    ),
    State.FAILED: frozenset({State.PLANNED, State.IN_PROGRESS, State.FAILED}),
    State.BLOCKED: frozenset({State.PLANNED, State.BLOCKED}),
    State.TOO_BIG: frozenset({State.PLANNED, State.TOO_BIG}),
    State.AWAITING_HUMAN: frozenset(
        {State.PLANNED, State.DONE, State.AWAITING_HUMAN, State.IN_PROGRESS, State.FAILED, State.BLOCKED, State.PAUSED}
    ),
    State.DONE: frozenset({State.PLANNED, State.DONE}),
}


@dataclass(frozen=True)
class StateInfo:
    icon: str
    order: int  # where `hive status` lists it (what needs a look first)
    stops: bool = False  # the run stops here until a human acts
    retried: bool = False  # the runner starts another attempt while attempts remain
    retryable: bool = False  # `hive retry` re-opens it
    hint: str = ""  # what the human does next ({key} is the task)


# in the order the execution report counts them
STATES: dict[State, StateInfo] = {
    State.DONE: StateInfo("✅", 7),
    State.FAILED: StateInfo(
        "❌",
        4,
        retried=True,
        retryable=True,
        hint="`hive retry {key}` after fixing the cause (logs: `hive logs {key}`)",
    ),
    State.BLOCKED: StateInfo("⛔", 3, stops=True, retryable=True, hint="resolve it, then `hive retry {key}`"),
    State.TOO_BIG: StateInfo(
        "🪓", 5, stops=True, retryable=True, hint="`hive plan --split {key}` splits it, or `hive retry {key}`"
    ),
    State.AWAITING_HUMAN: StateInfo("⏸", 2, stops=True),
    State.PAUSED: StateInfo("💤", 1, hint="rate-limited: `doit` goes on by itself at its resume time"),
    State.IN_PROGRESS: StateInfo("⏳", 0),
    State.PLANNED: StateInfo("·", 6),
}
ORDER = tuple(sorted(STATES, key=lambda s: STATES[s].order))
STOPS = tuple(s for s in State if STATES[s].stops)  # the states a run stops at until a human acts
RETRYABLE = tuple(s for s in State if STATES[s].retryable)


class Ended(StrEnum):
    """How an attempt ended, where its state alone does not say it: a history entry's
    `outcome` (else the state it ended in). A fact for the code and the next attempt's
    brief; the entry's reason is text for people and is never parsed."""

    INTERRUPTED = "interrupted"  # its orchestrator died (or its host): it does not count
    REOPENED = "reopened"  # a human or a changed plan re-opened the task after it
    CHECK_FAILED = "check_failed"  # it said done, but Verify / test_command failed on the merged result
    CONFLICT = "conflict"  # it said done, but merging into main conflicted: a resolve attempt follows
    HELD = "held"  # it said done, but its change waits for a human (engine/hold.py; the entry's `held` says why)
    CHANGES = "changes"  # it said done and passed its checks, but its review asked for changes (TaskState.reviews)
    PROPOSED = "proposed"  # it said done, passed its checks here, and went to the forge as a pull request
    CI_FAILED = "ci_failed"  # its PR's CI failed on the forge: the entry's `ci_report` says how (not counted)


# The reason a failed attempt records when its orchestrator died: it does not count.
INTERRUPTED = Ended.INTERRUPTED.value
FREE_INTERRUPTIONS = 3  # attempts in a row that end interrupted without counting against max_attempts


class Kind(StrEnum):
    """How one attempt ended."""

    DONE = "done"
    BLOCKED = "blocked"
    TOO_BIG = "too_big"
    STOPPED = "stopped"
    CRASHED = "crashed"
    SPAWN_FAILED = "spawn_failed"
    TIMEOUT = "timeout"
    SCRIPT_FAILED = "script_failed"
    AGENT_ERROR = "agent_error"  # the CLI reported a failure that retrying cannot fix
    RATE_LIMITED = "rate_limited"
    OVER_BUDGET = "over_budget"
    LOST = "lost"  # the host it ran on (or the executor's hold on it) went away: not its fault
    ASKED = "asked"  # it asked a question (`hive ask`) and ended, as told, before the answer came
    # it left a file Hive reads (its signal, its private git directory) that is not one: a FIFO,
    # a symbolic link, a device, a huge file (store.files.read_untrusted; issue 37)
    BAD_FILE = "bad_file"
    # a reviewer's verdict that the change must change (`hive changes`): engine/review.py; an
    # author's attempt never ends so (its `hive changes` is not a signal of its own)
    CHANGES = "changes"


class Worktree(StrEnum):
    """What happens to the attempt's worktree."""

    MERGE = "merge"  # its branch is verified and merged
    KEEP = "keep"  # kept for the human, as it is
    REMOVE_IF_CLEAN = "remove_if_clean"  # removed unless it holds uncommitted work
    RETIRE = "retire"  # leftovers committed to its branch (the next attempt builds on them)


@dataclass(frozen=True)
class Rule:
    state: State  # the state the attempt ends in
    worktree: Worktree
    ended_by_itself: bool  # it finished (hang up on it) rather than being stopped (interrupt it first)
    reason: str = "{reason}"  # the recorded reason; {reason} is the agent's or the watcher's, {key} the task
    verb: str = ""  # the `hive <verb>` an agent runs to signal it ("" = not a signal)
    help: str = ""  # that verb's help
    reason_required: bool = False
    permanent: bool = False  # never retried by the run: a human fixes the cause, then `hive retry`
    counts: bool = True  # counts against max_attempts

    @property
    def retried(self) -> bool:
        return STATES[self.state].retried and not self.permanent


OUTCOMES: dict[Kind, Rule] = {
    Kind.DONE: Rule(State.DONE, Worktree.MERGE, True, verb="done", help="the task is complete and committed"),
    Kind.BLOCKED: Rule(
        State.BLOCKED,
        Worktree.KEEP,
        True,
        "blocked: {reason}",
        verb="blocked",
        help="the agent cannot go on without a human",
        reason_required=True,
    ),
    Kind.TOO_BIG: Rule(
        State.TOO_BIG,
        Worktree.REMOVE_IF_CLEAN,
        True,
        "too big: {reason}",
        verb="too-big",
        help="the task must be split",
        reason_required=True,
    ),
    # a human's `hive stop`: held (blocked) until they say `hive retry`, never retried by itself
    Kind.STOPPED: Rule(
        State.BLOCKED, Worktree.KEEP, False, "stopped by `hive stop`; `hive retry {key}` to run it again"
    ),
    Kind.CRASHED: Rule(State.FAILED, Worktree.RETIRE, True),
    Kind.SCRIPT_FAILED: Rule(State.FAILED, Worktree.RETIRE, True),
    Kind.SPAWN_FAILED: Rule(State.FAILED, Worktree.RETIRE, False),
    Kind.TIMEOUT: Rule(State.FAILED, Worktree.RETIRE, False),
    Kind.AGENT_ERROR: Rule(State.FAILED, Worktree.RETIRE, False, permanent=True),
    Kind.OVER_BUDGET: Rule(State.FAILED, Worktree.RETIRE, False, permanent=True),
    Kind.RATE_LIMITED: Rule(State.PAUSED, Worktree.RETIRE, False, counts=False),
    # what it committed is kept; the next attempt starts once the question is answered
    Kind.ASKED: Rule(State.AWAITING_HUMAN, Worktree.RETIRE, True, "asked: {reason}", counts=False),
    # an agent that plants traps for Hive is not given another go: a human looks first
    Kind.BAD_FILE: Rule(State.FAILED, Worktree.RETIRE, False, permanent=True),
    # a reviewer's verb (REVIEW_SIGNALS), not an author's: its rule is the reviewer's watch's
    Kind.CHANGES: Rule(State.FAILED, Worktree.KEEP, True, "changes: {reason}", permanent=True),
    # like an orchestrator that died: the next attempt goes on from what was shipped back
    Kind.LOST: Rule(State.FAILED, Worktree.RETIRE, False, INTERRUPTED + ": {reason}", counts=False),
}
SIGNALS: dict[str, Kind] = {rule.verb: kind for kind, rule in OUTCOMES.items() if rule.verb}
# What a reviewer (engine/review.py) says of the change it read: `hive done` (it merges) or
# `hive changes --reason "what must change"` (its author tries again, told why)
REVIEW_SIGNALS: dict[str, Kind] = {"done": Kind.DONE, "changes": Kind.CHANGES}


@dataclass(frozen=True)
class Outcome:
    kind: Kind
    reason: str = ""
    output_tail: str = ""
    resume_at: float = 0.0  # RATE_LIMITED: when the limit resets, if the CLI said (0 = back off)
    approved: bool = False  # DONE: a human approved this branch (`hive approve`): merge it without a review

    @property
    def rule(self) -> Rule:
        return OUTCOMES[self.kind]

    def recorded_reason(self, key: str) -> str:
        if self.rule.reason == "{reason}":
            return self.reason
        return self.rule.reason.format(reason=self.reason or "no reason given", key=key)

    @property
    def history_outcome(self) -> str:
        """How its attempt reads in the task's history ("" = by the state it ends in)."""
        return INTERRUPTED if self.kind == Kind.LOST else ""

    def counts(self, history: tuple[Mapping[str, object], ...]) -> bool:
        """Whether its attempt uses up one of max_attempts. One whose host went away does
        not, unless the attempts before it were interrupted FREE_INTERRUPTIONS times in a
        row: a task whose node dies under it every time must not retry forever."""
        if self.rule.counts or self.kind != Kind.LOST:
            return self.rule.counts
        streak = 0
        for entry in reversed(history):
            if entry.get("outcome") != INTERRUPTED:
                break
            streak += 1
        return streak >= FREE_INTERRUPTIONS


class Recorded(Protocol):
    """What the verdicts below read of a task's recorded state (store.state.TaskState is one):
    the bottom floor names what it needs, and imports nothing of the store above it (issue 44)."""

    @property
    def state(self) -> str: ...
    @property
    def task_hash(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def merge_commit(self) -> str: ...


def shown_state(st: Recorded, text_hash: str) -> State:
    """The state of a task whose plan text now hashes to `text_hash`: a finished task
    whose text changed is pending again (a running one stays running)."""
    if st.task_hash in ("", text_hash) or st.state == State.IN_PROGRESS:
        return State(st.state)
    return State.PLANNED


@dataclass(frozen=True)
class Progress:
    """How far a plan (or several) is, counted the same way by every report."""

    states: tuple[State, ...]  # the shown state of each task that counts

    @property
    def done(self) -> int:
        return self.states.count(State.DONE)

    @property
    def total(self) -> int:
        return len(self.states)

    def __str__(self) -> str:
        return f"{self.done}/{self.total}"


def progress(tasks: Iterable[tuple[str, str]]) -> Progress:
    """Progress over `tasks`, (task type, shown state) pairs: the tasks written in the
    plan count, gates do not (a gate is a stop Hive adds, not work) — the checkpoint
    report said 2/4 where `hive status` said 2/6 while each counted its own way."""
    return Progress(tuple(State(state) for kind, state in tasks if kind != TaskType.GATE))


class NotDone(StrEnum):
    """Why a task is not done (Verdict.why_not)."""

    NEVER_RAN = "never_ran"  # no state recorded for it
    TEXT_CHANGED = "text_changed"  # it finished or is held for a text the plan no longer has: it runs again
    MERGE_LEFT_MAIN = "merge_left_main"  # recorded done, but its merge commit is not on main: it runs again
    UNFINISHED = "unfinished"  # planned, running, held or failed: its state says how far it is


OUTDATED = frozenset({NotDone.TEXT_CHANGED, NotDone.MERGE_LEFT_MAIN})


@dataclass(frozen=True)
class Verdict:
    """Is a task done, and if not, why not: the one answer to both (doit's
    DependencyStatus is the model). `why_not` is the fact code reads; `reason` is
    the sentence people read, never parsed."""

    why_not: NotDone | None = None
    reason: str = ""

    @property
    def done(self) -> bool:
        return self.why_not is None

    @property
    def outdated(self) -> str:
        """Why a finished or held task must run again ("" = it need not)."""
        return self.reason if self.why_not in OUTDATED else ""


def verdict(
    st: Recorded | None, text_hash: str, on_main: Callable[[str], bool] | None, main_branch: str = "main"
) -> Verdict:
    """The one definition of done: recorded done for the task's current text, with its
    merge commit on main (not checked when `on_main` is None: a summary without git)."""
    if st is None:
        return Verdict(NotDone.NEVER_RAN, "it has not run yet")
    if st.state != State.PLANNED and shown_state(st, text_hash) == State.PLANNED:
        return Verdict(NotDone.TEXT_CHANGED, "its text in the plan changed")
    if st.state != State.DONE:
        return Verdict(NotDone.UNFINISHED, f"it is {st.state}" + (f": {st.reason}" if st.reason else ""))
    if on_main is not None and not (st.merge_commit and on_main(st.merge_commit)):
        return Verdict(NotDone.MERGE_LEFT_MAIN, f"its merge commit is no longer on {main_branch}")
    return Verdict()
