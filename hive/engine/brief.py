"""An agent's brief (its context file): what goes into it — the task, its
dependencies' results, the plan's decisions, and on a re-attempt what the earlier
attempts committed, noted and printed — rendered from `hive/templates/context.md.j2`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive import logcap
from hive.adapters import git
from hive.lifecycle import SIGNALS, Ended, Kind, TaskType
from hive.output import clean_tail
from hive.plan.model import Plan
from hive.render import render
from hive.reports.dependencies import DependencyResult
from hive.reviews import Review, Verdict
from hive.store import agent_signals
from hive.store.paths import Paths
from hive.store.questions import Question
from hive.store.state import HistoryEntry, StateStore, TaskState


@dataclass(frozen=True)
class Continuation:
    history: tuple[HistoryEntry, ...] = ()
    commits: tuple[str, ...] = ()
    notes: tuple[dict[str, Any], ...] = ()
    log_tail: str = ""
    feedback: str = ""
    failed_check: str = ""  # what the Verify / test_command that failed the last attempt printed
    ci_report: str = ""  # what its PR's CI said, when CI on the forge sent the last attempt back
    ci_round: int = 0
    pr: int = 0
    reviews: tuple[Review, ...] = ()  # the reviews that sent the earlier attempts back (engine/review.py)


@dataclass(frozen=True)
class Resolve:
    """A resolve attempt: the last merge into main conflicted."""

    files: tuple[str, ...] = ()
    main_commits: tuple[str, ...] = ()  # "<hash> <subject> (files)", newest first


@dataclass(frozen=True)
class ContextInput:
    key: str
    attempt: int
    branch: str
    main_branch: str
    context_file: str
    task: object
    plan: object
    dependencies: tuple[DependencyResult, ...] = ()
    continuation: Continuation | None = None
    project_instructions: str = ""
    decisions: tuple[str, ...] = ()
    hive: str = "hive"  # `hive` by its absolute path: a login shell (codex's `bash -lc`) resets PATH
    resolve: Resolve | None = None
    questions: tuple[Question, ...] = ()  # what the task's agents asked their human so far, and the answers
    can_ask: bool = True  # `hive ask` reaches a human from where the agent runs
    protected: tuple[str, ...] = ()  # what its change may not touch without a human ([merge] protect)
    max_file_mb: int = 0  # nor add a file bigger than this (0: no limit)
    pull_request_to: str = ""  # pull-request mode: the forge branch its PR targets ("" in local mode)


def render_context(ci: ContextInput) -> str:
    return render("context.md.j2", **{k: getattr(ci, k) for k in ContextInput.__dataclass_fields__})


def prompt(key: str, title: str, context_path: str, hive: str = "hive") -> str:
    """The short instruction given on the agent's command line ({prompt})."""
    others = " / ".join(f"`hive {verb} --reason ...`" for verb, kind in SIGNALS.items() if kind != Kind.DONE)
    return (
        f"You are working on task {key} ({title}) in this git worktree. Read {context_path} now: "
        f"it is your complete brief. Do the task, commit with git, then run `hive done` (or {others}); "
        f"if `hive` is not found, it is `{hive}`."
    )


def continuation(paths: Paths, root: Path, st: TaskState) -> Continuation:
    commits = tuple(git.log_oneline(root, f"{st.base}..refs/heads/{st.branch}")) if st.base else ()
    notes = tuple(n for n in agent_signals.notes(paths, st.plan, st.id) if n.get("attempt", 0) < st.attempt)
    return Continuation(
        history=tuple(h for h in st.history if h.get("attempt", 0) < st.attempt),
        commits=commits,
        notes=notes[-10:],
        log_tail=_previous_output(paths, st),
        feedback=st.feedback,
        failed_check=_failed_check(st),
        ci_report=_ci_report(st),
        ci_round=st.ci_rounds,
        pr=st.pr,
        reviews=tuple(r for r in st.reviews if r.verdict == Verdict.CHANGES and r.attempt < st.attempt),
    )


def _failed_check(st: TaskState) -> str:
    """What the check that failed the last attempt printed, if a check failed it."""
    previous = [h for h in st.history if h.get("attempt", 0) < st.attempt and h.get("outcome") != Ended.REOPENED]
    last = previous[-1] if previous else {}
    return str(last.get("check_output", "")) if last.get("outcome") == Ended.CHECK_FAILED else ""


def _ci_report(st: TaskState) -> str:
    """The failed checks of its PR, when CI on the forge sent its last attempt back."""
    previous = [h for h in st.history if h.get("attempt", 0) < st.attempt and h.get("outcome") != Ended.REOPENED]
    last = previous[-1] if previous else {}
    return str(last.get("ci_report", "")) if last.get("outcome") == Ended.CI_FAILED else ""


def decisions_so_far(store: StateStore, plan: Plan) -> tuple[str, ...]:
    """Humans' answers to this plan's checkpoints, for every later agent."""
    out = []
    for t in plan.tasks:
        if t.is_checkpoint and t.type != TaskType.GATE:
            answer = store.read(plan.name, t.id).answer
            if answer:
                out.append(f"{plan.key(t.id)} ({t.title}): {answer}")
    return tuple(out)


def _previous_output(paths: Paths, st: TaskState) -> str:
    previous = [h for h in st.history if h.get("attempt", 0) < st.attempt]
    if not previous:
        return ""
    start = int(previous[-1].get("log_offset", 0))
    end = st.log_offset or None
    log = paths.log_file(st.plan, st.id)
    # its last 30000 bytes (offsets are the log's logical ones: hive.logcap)
    data = logcap.read(log, max(start, end - 30000), end) if end else logcap.tail(log, 30000, since=start)
    text = data[-30000:].decode(errors="replace")
    # the slice ends where this attempt's output starts: after the header Hive wrote for it
    header = text.rfind("\n===== hive: ")
    return clean_tail(text[:header] if header >= 0 else text, 40)
