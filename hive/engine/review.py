"""Reviewing a task's change before it merges (issue 39): once its checks pass, on the exact
merged result the merge queue would publish, a fresh agent of the task's reviewer profile reads
the change (sandboxed like any agent, in the task's checkout at that commit; what it writes there
is thrown away) and says `hive done` (it merges) or `hive changes --reason "…"` (its author tries
again, the review in its brief). A reviewer that crashes, times out or says neither is tried once
more; then the task waits for a human. Every review — an agent's or a human's (`hive changes
plan:ID`) — is kept in the task's state (`TaskState.reviews`, a `hive.reviews.Review`) and is a
`reviewed` event; an agent's is written by the merge step's recorder, the task's one writer.

A review runs inside the merge step, off the merge lock and in a check slot, as the checks do
(engine/merge calls `Reviewer`). A run killed while one runs finds it again next time: its
verdict if it gave one meanwhile, else its agent if it still runs (watched again), else it starts
anew. A verdict is recorded once: a merge built again on a new main, for the same branch commit,
keeps the approval its change got."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive import agent_clis
from hive.adapters import git
from hive.agent_clis import reader
from hive.agent_clis.profile import AgentProfile
from hive.agent_clis.stream import Usage
from hive.engine import launch
from hive.engine.limits import model_of
from hive.engine.merge import ReviewAsk, Reviewed
from hive.engine.supervise import Hooks, Watch, wait
from hive.engine.task import TaskContext, Worker
from hive.executors import AgentRef
from hive.lifecycle import Kind
from hive.output import first_line, prefixed, say
from hive.plan.model import NO_REVIEW
from hive.render import render
from hive.reviews import By, Review, Verdict
from hive.sandbox import gitdir, policy
from hive.store import agent_signals, names
from hive.store.files import atomic_write
from hive.store.state import TaskState
from hive.store.usage import attempt_entry, task_totals, usd

TRIES = 2  # a review that failed (crashed, timed out, said neither) is tried once more
DIFF_SHOWN = 200_000  # bytes of the diff in a reviewer's brief (it can ask git for the rest)
OUTPUT_SHOWN = 3000  # characters of each check's output


def reviewer_of(h: TaskContext) -> str:
    """The profile that reviews the task's change ("": none): its own `**Review:**`, else its
    plan's `review:`, else `[merge] review`; `none` at any of them: none."""
    for said in (h.task.review, h.job.plan.review, h.cfg.review):
        if said:
            return "" if said == NO_REVIEW else said
    return ""


@dataclass(frozen=True)
class _Try:
    """One reviewer agent: its names and files."""

    name: str  # unique to it (its session, signal folder, exit file, brief)
    number: int  # its HIVE_ATTEMPT: attempt × 1000 + round × 10 + try (its processes are found by it)
    signal: Path
    exit_file: Path


class Reviewer:
    """The review step of one task's merge (engine/merge.py calls it with what to review)."""

    def __init__(self, h: TaskContext, worker: Worker, profile: str) -> None:
        self.h, self.worker, self.profile = h, worker, h.cfg.agents[profile]
        self.log_offset = 0  # where the latest reviewer's output starts in the task's log (set as it starts)

    def __call__(self, ask: ReviewAsk) -> Reviewed:
        h = self.h
        st = h.read()
        kept = _kept(st, ask.branch)
        if kept is not None:  # this very change's verdict, recorded before a restart
            return Reviewed(kept.verdict, kept.text)
        round_ = len(st.reviews) + 1
        why = ""
        for number in range(1, TRIES + 1):
            began = time.time()
            verdict, text, usage = self._try(st, ask, round_, number)
            if verdict != Verdict.FAILED:
                return self._verdict(st, verdict, text, began, usage, ask.branch)
            why = text
            say(
                f"{h.key}: its review {round_} failed ({first_line(text)})"
                + ("; trying it again" if number < TRIES else "")
            )
        return self._verdict(st, Verdict.FAILED, why, began, {}, ask.branch)

    def _verdict(
        self, st: TaskState, verdict: Verdict, text: str, began: float, usage: dict[str, Any], branch: str
    ) -> Reviewed:
        """The verdict, with the review the merge step records (the task's one writer)."""
        record = Review.new(st.reviews, st.attempt, verdict, text, self.profile.name, began, usage, branch)
        return Reviewed(verdict, text, record)

    def _try(self, st: TaskState, ask: ReviewAsk, round_: int, number: int) -> tuple[Verdict, str, dict[str, Any]]:
        """One reviewer agent's verdict: (APPROVED | CHANGES | FAILED, its words or why it failed, usage)."""
        h = self.h
        name = names.review_name(h.plan_name, h.task.id, st.attempt, round_, number)
        t = _Try(
            name,
            _number(st.attempt, round_, number),
            h.paths.review_dir(h.plan_name, h.task.id, st.attempt, round_, number) / "signal.json",
            h.paths.hive / "run" / f"{name}.exit",
        )
        wt = Path(ask.worktree)
        # named for the review alone (not its worker): a run that comes back on another worker finds it
        ref = AgentRef(str(h.root), h.key, t.number, f"hive-{name}")
        agent = h.executor.agent(ref)
        found = agent_signals.read(t.signal, review=True)
        if found is None and h.executor.locate(ref.name) is None:
            if t.signal.parent.exists():  # started by a run that stopped, and gone since without a verdict
                agent.stop(h.cfg.stop_patience, True, prefixed(say, f"{h.key} review"))
                return Verdict.FAILED, "its agent was gone when the run came back to it, without a verdict", {}
            agent = self._start(st, ask, t, ref, round_, wt)
        meter = _Meter(h, self.profile)
        if found is not None:  # it gave its verdict while no run watched
            kind, reason = found.kind, found.reason
        else:
            watched = wait(self._watch(agent, t, meter), Hooks())
            kind, reason = watched.kind, watched.reason or watched.output_tail
        agent.stop(h.cfg.stop_patience, True, prefixed(say, f"{h.key} review"))
        _throw_away(wt, ask.merged)
        gitdir.remove(h.paths.hive / "gitdirs" / t.name)
        if kind == Kind.DONE:
            return Verdict.APPROVED, reason, meter.entry
        if kind == Kind.CHANGES and reason.strip():
            return Verdict.CHANGES, reason, meter.entry
        if kind == Kind.CHANGES:
            return Verdict.FAILED, "it asked for changes without saying which", meter.entry
        return Verdict.FAILED, reason or f"its agent ended ({kind}) without a verdict", meter.entry

    def _start(self, st: TaskState, ask: ReviewAsk, t: _Try, ref: AgentRef, round_: int, wt: Path) -> Any:
        h = self.h
        _throw_away(wt, ask.merged)  # what the checks left in the checkout
        brief = h.paths.hive / "contexts" / f"{t.name}.md"
        atomic_write(brief, self._brief(st, ask, round_))
        argv = self.profile.argv(_prompt(h.key, str(brief), h.hive_command), str(brief))
        own = {agent_signals.REVIEW_VARIABLE: t.name, **dict(self.profile.env)}
        env = launch.agent_env(h, self.worker.number, wt, t.number, t.signal, own)
        t.signal.parent.mkdir(parents=True, exist_ok=True)
        self.log_offset = launch.log_section(h, f"{h.key} review {round_} ({self.profile.name})")
        say(f"{h.key}: review {round_} started — agent {self.profile.name} reads its change ({ask.merged[:10]})")
        env_file = h.paths.hive / "run" / f"{t.name}.env"
        sandbox = self._sandbox(st, ask, t, env) if h.sandboxed else None
        return launch.start(h, launch.Start(ref, argv, env, wt, brief, t.exit_file, env_file, sandbox=sandbox))

    def _sandbox(self, st: TaskState, ask: ReviewAsk, t: _Try, env: dict[str, str]) -> launch.Sandbox:
        """Its sandbox: it writes the checkout (thrown away after), its own folder for its verdict
        and a git directory of its own at the merge commit; it reaches its CLI's hosts."""
        h = self.h
        reach = agent_clis.reach(self.profile, {**os.environ, **env})
        return launch.Sandbox(
            policy.agent_rules(h.cfg, self.profile.state_paths, reach, env),
            h.paths.hive / "gitdirs" / t.name,
            {st.branch: ask.merged, h.cfg.main_name: ask.base},
            h.paths.excludes_file(h.plan_name, h.task.id, st.attempt),
            own=(t.signal.parent,),
            name=t.name,
        )

    def _watch(self, agent: Any, t: _Try, meter: _Meter) -> Watch:
        h = self.h
        return Watch(
            agent=agent,
            signal_path=t.signal,
            exit_file=t.exit_file,
            stop_file=h.paths.hive / "signals" / f"{t.name}.stop",
            log_path=h.paths.log_file(h.plan_name, h.task.id),
            log_offset=self.log_offset,
            started_at=time.time(),
            timeout=h.task.timeout or h.cfg.task_timeout,
            stuck_threshold=h.cfg.stuck_threshold,
            grace=h.cfg.spawn_grace_period,
            exit_zero_is_done=False,
            stall_patterns=self.profile.stall_patterns,
            reader=reader(self.profile.stream),
            meter=meter,
            command=self.profile.command[0],
            linger=self.profile.linger,
            poll=h.executor.capabilities.poll,
            naps=h.executor.capabilities.naps,
            review=True,
        )

    def _brief(self, st: TaskState, ask: ReviewAsk, round_: int) -> str:
        h = self.h
        diff = git.git(h.root, "diff", "--no-color", ask.base, ask.merged, check=False).stdout
        notes = [n for n in agent_signals.notes(h.paths, h.plan_name, h.task.id) if n.get("attempt") == st.attempt]
        return render(
            "review.md.j2",
            key=h.key,
            round=round_,
            task=h.task,
            plan=h.job.plan,
            main_branch=h.cfg.main_name,
            merged=ask.merged,
            base=ask.base,
            files=git.changed_files(h.root, ask.base, ask.merged),
            diff=diff[:DIFF_SHOWN],
            cut=max(0, len(diff) - DIFF_SHOWN),
            checks=[(c.label, c.command, c.output[-OUTPUT_SHOWN:]) for c in ask.checks],
            notes=notes[-10:],
            reviews=st.reviews,
            hive=h.hive_command,
        )


def end_reviewers(h: TaskContext) -> None:
    """Stop what is left of the task's reviewers: one a run stopped while it reviewed, whose task
    then went another way (a human merged it, or sent it back) before a run came back to it."""
    folder = h.paths.hive / "signals"
    prefix = names.stem(h.plan_name, h.task.id) + "-a"
    try:
        left = [n for n in os.listdir(folder) if n.startswith(prefix) and _REVIEW.search(n)]
    except FileNotFoundError:
        return
    for name in left:
        m = _REVIEW.search(name)
        assert m is not None
        number = _number(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if h.executor.locate(f"hive-{name}") is not None:
            h.executor.agent(AgentRef(str(h.root), h.key, number, f"hive-{name}")).stop(
                h.cfg.stop_patience, True, prefixed(say, f"{h.key} review")
            )


_REVIEW = re.compile(r"-a(\d+)-r(\d+)t(\d+)$")  # names.review_name's ending


def _number(attempt: int, round_: int, number: int) -> int:
    """A reviewer's HIVE_ATTEMPT, by which its processes are found: attempt × 1000 + round × 10 + try."""
    return attempt * 1000 + round_ * 10 + number


def _kept(st: TaskState, branch: str) -> Review | None:
    """The verdict this attempt's change already got, if a review of this very branch commit was
    recorded (a run stopped after it: a verdict is recorded once)."""
    return next(
        (r for r in reversed(st.reviews) if r.attempt == st.attempt and r.branch == branch and r.by == By.AGENT),
        None,
    )


def _throw_away(wt: Path, merged: str) -> None:
    """The checkout back to the merge commit, without what a check or a reviewer wrote there."""
    git.checkout(wt, merged, detach=True, force=True)
    git.clean(wt)


def _prompt(key: str, brief: str, hive: str) -> str:
    return (
        f"You are reviewing the change of task {key} in this directory. Read {brief} now: it is your "
        f'complete brief. Then run `hive done --reason "..."` to approve it or `hive changes --reason "..."` '
        f"to send it back; if `hive` is not found, it is `{hive}`."
    )


class _Meter:
    """A reviewer's usage, kept for its review's record (its cost counts in the task's budget)."""

    def __init__(self, h: TaskContext, profile: AgentProfile) -> None:
        self.h, self.model = h, model_of(profile)
        self.entry: dict[str, Any] = {}

    def record(self, usage: Usage) -> str | None:
        """Keep it; say why the reviewer must stop: the task's `[budget] task_usd`, which its
        reviews spend from too."""
        h = self.h
        model = usage.model or self.model
        self.entry = attempt_entry(
            usage.tokens_in, usage.tokens_out, usage.cli_cost_usd, model, h.cfg.prices, usage.by_model
        )
        cap = h.cfg.budget_task_usd
        spent = task_totals(h.read()).cost_usd + float(self.entry.get("cost_usd") or 0.0)
        if cap and spent >= cap:
            return f"budget reached for this task ({usd(spent)} of {usd(cap)}, [budget] task_usd)"
        return None
