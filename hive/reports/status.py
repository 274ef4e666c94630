"""`hive status`: every task's state and why, as records (rendered by the CLI)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive import executors
from hive.errors import HiveError
from hive.executors import AgentRef
from hive.executors.standing import next_step, standing
from hive.lifecycle import ORDER, Progress, Resume, State, TaskType, progress, shown_state
from hive.output import duration, first_line, log_size
from hive.plan import discovered
from hive.project import Project, load_project
from hive.reports import skipped
from hive.sandbox import network
from hive.store import agent_signals, questions, queue, usage
from hive.store.files import FileLock
from hive.store.names import task_key
from hive.store.paths import Paths
from hive.store.questions import Question, asked_lines
from hive.store.queue import CHECKING, FAILED, PASSED, PENDING
from hive.store.state import StateStore, TaskState


@dataclass(frozen=True)
class TaskStatus:
    plan: str
    id: str
    title: str
    state: str
    reason: str = ""
    attempt: int = 0
    worker: str = ""
    worktree: str = ""
    session: str = ""
    branch: str = ""
    commit: str = ""
    files: tuple[str, ...] = ()
    runner_pid: int | None = None
    agent_alive: bool = False
    elapsed: float | None = None
    idle: float | None = None
    stuck: bool = False
    draft: bool = False
    output_tail: str = ""
    resume_at: float | None = None  # paused: when it goes on
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None  # None: tokens were used at a price nobody knew
    type: str = "auto"  # the task's Type (`gate` for a hard-stop gate)
    node: str = ""  # the host its agent runs on (a remote executor)
    notes: tuple[dict[str, Any], ...] = ()  # its agents' `hive note`s ({attempt, time, text}), oldest first
    skipped_because: tuple[str, ...] = ()  # planned, but waits for these stopped tasks (reports.skipped)
    question: str = ""  # what its agent asks and waits on the answer to (`hive ask`)
    options: tuple[str, ...] = ()  # the answers it offers to choose from
    details: str = ""  # what it said the human needs to know
    answer_command: str = ""  # the exact command that answers it
    refused: int = 0  # connections its sandbox's proxy refused (`[sandbox] network = "allowlist"`)
    refused_hosts: tuple[str, ...] = ()  # ... to these host:port, each once, first refused first
    queue_position: int = 0  # its place in the merge queue (1: next to reach main), 0: not in it
    queue: str = ""  # what it does there
    # the reviews of its change ({round, attempt, by, reviewer, verdict, text, at, seconds}), oldest first
    reviews: tuple[dict[str, Any], ...] = ()
    answer: str = ""  # a checkpoint's or gate's answer ("approved", "choice: SQLite", "done")
    pr: int = 0  # its pull request's number (pull-request mode), 0: none
    pr_url: str = ""  # ... and its page on the forge
    forge_ignored: tuple[str, ...] = ()  # what people without write access wrote on it: shown here, given to no agent

    @property
    def key(self) -> str:
        return task_key(self.plan, self.id)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def collect(
    root: Path, project: Project | None = None, states: Mapping[str, TaskState] | None = None, only: str = ""
) -> list[TaskStatus]:
    """`project` and `states`, when the caller has just read them (the dashboard), are not read again;
    `only`: one task's key, for its row alone (its page on the dashboard)."""
    project = project or load_project(root, strict=False)
    paths = Paths(root)
    executor = executors.executor(project.config.executor, project.config, root)
    states = StateStore(paths).read_all() if states is None else states
    rows = []
    now = time.time()
    cannot_ask = ""  # why the executor cannot be asked about running agents (a Ray cluster that is down)
    queued = merge_queue(paths, project.config.max_checks, project.config.merge_batch)
    for plan in project.plans.plans:
        if only and not only.startswith(f"{plan.name}:"):
            continue
        shown = {t.id: shown_state(s, t.text_hash) for t in plan.tasks if (s := states.get(plan.key(t.id)))}
        skips = skipped.skips(plan, shown) if plan.approved else {}
        noted = agent_signals.notes_of(paths, ((plan.name, t.id) for t in plan.tasks if t.id in shown))
        asking = questions.waiting_questions(paths, ((plan.name, t.id) for t in plan.tasks if t.id in shown))
        for task in plan.tasks:
            if only and plan.key(task.id) != only:
                continue
            st = states.get(plan.key(task.id))
            skip = skips.get(task.id)
            why = skip.waits_for if skip else ()
            if st is None:
                rows.append(
                    TaskStatus(
                        plan.name,
                        task.id,
                        task.title,
                        State.PLANNED,
                        skip.reason if skip else "",
                        draft=not plan.approved,
                        type=task.type,
                        skipped_because=why,
                    )
                )
                continue
            notes = tuple(noted.get((plan.name, task.id), ()))
            running = st.state == State.IN_PROGRESS
            holder = FileLock(paths.claim_lock(plan.name, task.id)).holder() if running else None
            alive, where = False, None
            if running and not cannot_ask:
                try:
                    alive = executor.agent(AgentRef.of(root, st)).alive(thorough=True)
                    where = standing(paths, executor, st)
                except HiveError as e:  # what the state says is all there is to show
                    cannot_ask = f"cannot tell how its agent is: {e}"
            signalled = where.signal if where else None
            log = paths.log_file(plan.name, task.id)
            idle = now - log.stat().st_mtime if running and not signalled and log_size(log) > st.log_offset else None
            state = shown_state(st, task.text_hash)
            reason = next_step(where, st.session, executor.kind) if where and not holder else st.reason
            reason = cannot_ask if running and cannot_ask else reason
            reason = skip.reason if skip else reason
            used = usage.task_totals(st).as_json()
            asked = asking.get((plan.name, task.id)) if state in (State.IN_PROGRESS, State.AWAITING_HUMAN) else None
            if asked is not None:  # its agent waits for its human (or ended, told to, until the answer)
                state, reason = State.AWAITING_HUMAN, f"asks: {asked.text}"
            elif state == State.AWAITING_HUMAN and st.resume == Resume.ANSWER:
                reason = "answered — its next attempt goes on with the answer (run `doit` if no run is going on)"
            rows.append(
                TaskStatus(
                    plan.name,
                    task.id,
                    task.title,
                    state,
                    reason,
                    st.attempt,
                    st.worker,
                    st.worktree if running or _kept(paths.root, st.worktree) else "",
                    st.session if alive else "",
                    st.branch,
                    st.merge_commit,
                    st.files,
                    holder,
                    alive,
                    now - st.started_at if running and st.started_at else None,
                    idle,
                    idle is not None and idle > project.config.stuck_threshold,
                    not plan.approved,
                    st.output_tail if st.state in (State.FAILED, State.BLOCKED) else "",
                    st.resume_at if st.state == State.PAUSED else None,
                    **used,
                    type=task.type,
                    node=st.node if running else "",
                    notes=notes,
                    skipped_because=why,
                    **_question(plan.key(task.id), asked),
                    **_refused(paths.refused_file(plan.name, task.id)),
                    **(queued.get(plan.key(task.id), {}) if running else {}),
                    reviews=tuple(r.shown() for r in st.reviews),
                    answer=st.answer if task.is_checkpoint else "",
                    pr=st.pr,
                    pr_url=st.pr_url,
                    forge_ignored=st.forge_ignored,
                )
            )
    return rows


def merge_queue(paths: Paths, max_checks: int, batch: int = 1) -> dict[str, dict[str, Any]]:
    """task key -> its place in the merge queue and what it does there (store/queue.py)."""
    entries = queue.regroup(queue.living(queue.load(paths.queue)))
    slots = {FileLock(paths.check_slot(n)).holder() for n in range(1, max_checks + 1)}
    out = {}
    position = {e.key: n for n, e in enumerate(entries, 1)}
    for group in queue.groups(entries):
        for e in group:
            n = position[e.key]
            if len(group) > 1:
                doing = _in_batch(entries, group, e, batch)
            else:
                doing = _alone(entries, e, batch, checking=not max_checks or FileLock(Path(e.claim)).holder() in slots)
            out[e.key] = {"queue_position": n, "queue": f"merge queue #{n} of {len(entries)}: {doing}"}
    return out


def _on(entries: list[queue.Entry], key: str) -> str:
    ahead = [a.key for a in queue.ahead(entries, key)]
    return f"on top of {', '.join(ahead)}" if ahead else "on main"


def _alone(entries: list[queue.Entry], e: queue.Entry, batch: int, checking: bool) -> str:
    """What a task that is a group of its own does in the queue."""
    ahead = [a.key for a in queue.ahead(entries, e.key)]
    on = _on(entries, e.key)
    if not e.built:
        return "waiting for the task ahead to be built"
    if e.checks == CHECKING:
        return f"verifying {on}" + _bisecting(entries, e, batch)
    if e.checks == PENDING:
        waits = queue.waits_to_start(entries, e.key, batch)
        return waits or (f"verifying {on}" if checking else "waiting for a check slot")
    if e.checks == FAILED:
        return f"its checks failed {on}; final once {', '.join(ahead)} pass theirs"
    return f"verified {on}; " + (f"waiting for {ahead[-1]}" if ahead else "reaching main")


def _in_batch(entries: list[queue.Entry], group: list[queue.Entry], e: queue.Entry, batch: int) -> str:
    """What a task in a batch of several does in the queue: its leader's part, or waiting on it."""
    leader, first = group[-1], group[0]
    together = f"{queue.span(group)} together (batch of {len(group)})"
    if leader.checks == FAILED:
        if e.key != leader.key:
            return f"bisecting: in the batch {leader.key} failed"
        return f"bisecting: {together} failed its checks; halves are verified once everything ahead has passed"
    if leader.checks == PASSED:
        ahead = [a.key for a in queue.ahead(entries, first.key)]
        if e.key != first.key:
            return f"verified in the batch of {leader.key}; reaching main with {first.key}"
        return f"verified {together} {_on(entries, first.key)}; " + (
            f"waiting for {ahead[-1]}" if ahead else "reaching main"
        )
    if e.key != leader.key:
        return f"in the batch {leader.key} verifies"
    if leader.checks == CHECKING:
        return f"verifying {together} {_on(entries, first.key)}" + _bisecting(entries, leader, batch)
    return queue.waits_to_start(entries, leader.key, batch) or f"to verify {together}: waiting for a check slot"


def _bisecting(entries: list[queue.Entry], leader: queue.Entry, batch: int) -> str:
    """` (bisecting ...)` for a group checking just ahead of a failed batch's rest: with batches,
    a failure waits behind a group only when a bisection made that group of its first half."""
    after = entries[entries.index(leader) + 1 :]
    if batch <= 1 or not after:
        return ""
    failed = queue.group_of(entries, after[0].key)[-1]
    return f" (bisecting the batch of {failed.key})" if failed.checks == FAILED else ""


def _refused(path: Path) -> dict[str, Any]:
    """What its sandbox refused to let its agents and checks reach (`hive.sandbox.network`)."""
    refused = network.refusals(path)
    hosts = (f"{r.get('host')}:{r.get('port')}" for r in refused)
    return {"refused": len(refused), "refused_hosts": tuple(dict.fromkeys(hosts))} if refused else {}


def _question(key: str, asked: Question | None) -> dict[str, Any]:
    if asked is None:
        return {}
    return {
        "question": asked.text,
        "options": asked.options,
        "details": asked.details,
        "answer_command": questions.answer_command(key, asked),
    }


def _kept(root: Path, worktree: str) -> bool:
    """A worktree that is still on this machine: a blocked task's, kept for the human, or a
    failed one's, kept for its next attempt (a done task's is removed once merged)."""
    return bool(worktree) and (root / worktree).is_dir()


def totals(rows: list[TaskStatus]) -> dict[str, Any]:
    """Tokens and cost over every task (what `--json` calls totals)."""
    known = all(r.cost_usd is not None for r in rows if r.tokens_in or r.tokens_out)
    return {
        "tokens_in": sum(r.tokens_in for r in rows),
        "tokens_out": sum(r.tokens_out for r in rows),
        "cost_usd": round(sum(r.cost_usd or 0.0 for r in rows), 6) if known else None,
    }


def plan_progress(rows: list[TaskStatus]) -> Progress:
    """The approved plans' progress, counted as the checkpoint report counts it."""
    return progress((r.type, r.state) for r in rows if not r.draft)


def counts(rows: list[TaskStatus]) -> dict[str, int]:
    out: dict[str, int] = {str(s): 0 for s in ORDER}
    for r in rows:
        out[r.state] = out.get(r.state, 0) + 1
    return out


def discovered_items(root: Path) -> list[dict[str, Any]]:
    return [
        {"key": d.key, "title": d.title, "details": d.details, "discovered_from": d.discovered_from}
        for d in discovered.pending(Paths(root))
    ]


def render_errors(errors: Sequence[str]) -> str:
    """An approved plan that does not parse, left out of what follows; `doit` refuses it."""
    lines = ["An approved plan does not parse; it is left out below and `doit` will not start until it is fixed:"]
    return "\n".join(lines + [f"  {line}" for line in errors]) + "\n"


def render_discovered(items: list[dict[str, Any]]) -> str:
    if not items:
        return ""
    lines = ["", "Discovered work waiting for your review (it never runs unapproved):"]
    for d in items:
        lines.append(
            f"  {d['key']}  {d['title']}  (from {d['discovered_from']}) — `hive approve {d['key']}` adds it "
            f'to the plan; `hive approve {d["key"]} --reject "why"` discards it'
        )
    return "\n".join(lines)


def _headline(rows: list[TaskStatus], width: int) -> str:
    """A bar and counts over the approved plans' tasks (each plan's own when there are
    several), the same N/M a checkpoint report shows."""
    shown = plan_progress(rows)
    if not shown.total:
        return "no approved plan: `hive approve plans/<file>.md` to run one"
    filled = round(width * shown.done / shown.total)
    skipping = sum(1 for r in rows if r.skipped_because and not r.draft and r.type != TaskType.GATE)
    tally = {str(s): shown.states.count(State(s)) for s in ORDER if s != "done"}
    tally[State.PLANNED] -= skipping  # a skipped task is planned, and shown as its rows show it
    tally["skipped"] = skipping
    others = "  ".join(f"{n} {s}" for s, n in tally.items() if n)
    line = f"[{'#' * filled}{'-' * (width - filled)}] {shown} done  {others}".rstrip()
    plans = sorted({r.plan for r in rows if not r.draft})
    if len(plans) > 1:
        line += "  (" + ", ".join(f"{p} {plan_progress([r for r in rows if r.plan == p])}" for p in plans) + ")"
    return line


def _usage(tokens_in: int, tokens_out: int, cost: float | None) -> str:
    return usage.described(usage.Totals(tokens_in, tokens_out, cost or 0.0, cost is not None))


def render(rows: list[TaskStatus], width: int = 30) -> str:
    lines = [_headline(rows, width)]
    spent = totals(rows)
    if spent["tokens_in"] or spent["tokens_out"]:
        lines[0] += "  " + _usage(spent["tokens_in"], spent["tokens_out"], spent["cost_usd"])
    key_w = max([len(r.key) for r in rows] + [4])
    for r in sorted(rows, key=lambda r: (ORDER.index(r.state) if r.state in ORDER else 9, r.plan)):
        state = ("skipped" if r.skipped_because else r.state) + (" (draft)" if r.draft else "")
        lines.append(f"  {r.key:<{key_w}}  {state:<15} {r.title[:50]:<50}  {_detail(r)}".rstrip())
        if r.question:
            asked = asked_lines(r.question, r.details, r.options, r.answer_command)[1:]  # the row says what it asks
            lines += [f"  {'':<{key_w}}    {line.strip()}" for line in asked]
        if r.queue:
            lines.append(f"  {'':<{key_w}}    {r.queue}")
        if r.refused:
            hosts = ", ".join(r.refused_hosts[:5]) + (", …" if len(r.refused_hosts) > 5 else "")
            lines.append(f"  {'':<{key_w}}    sandbox refused {r.refused} connection(s) to {hosts} ([sandbox] allow)")
        if r.reviews:  # the latest review of its change (engine/review.py)
            last = r.reviews[-1]
            by = "you" if last.get("by") == "human" else last.get("reviewer", "")
            said = first_line(str(last.get("text", "")))[:100]
            lines.append(
                f"  {'':<{key_w}}    review {last.get('round')} by {by}: {last.get('verdict')}"
                + (f" — {said}" if said else "")
            )
        if r.pr:
            lines.append(f"  {'':<{key_w}}    PR #{r.pr}: {r.pr_url}")
        for ignored in r.forge_ignored[-5:]:  # untrusted: shown to the human, never given to an agent
            lines.append(f"  {'':<{key_w}}    ignored on the forge: {ignored}")
        if r.notes:  # the last thing its agent said of where it is (`hive note`)
            lines.append(f"  {'':<{key_w}}    note: {shown_note(r.notes[-1])}")
        if r.output_tail:
            lines += [f"  {'':<{key_w}}    | {line}" for line in r.output_tail.splitlines()[-3:]]
    return "\n".join(lines)


def _detail(r: TaskStatus) -> str:
    """What a task's row says after its title."""
    detail = r.reason.strip().splitlines()[0] if r.reason.strip() else ""
    if r.state == State.IN_PROGRESS:
        extra = [f"worker {r.worker}", f"attempt {r.attempt}"] + ([f"on node {r.node}"] if r.node else [])
        if r.elapsed is not None:
            extra.append(f"running {duration(r.elapsed)}")
        if r.idle is not None:
            extra.append(f"last output {duration(r.idle)} ago" + (" — STUCK?" if r.stuck else ""))
        if r.session:
            extra.append(f"`hive attach {r.key}`")
        detail = ", ".join(extra) + (f" — {detail}" if detail else "")
    elif r.state == State.DONE and r.answer:  # a checkpoint or gate changes no file: its answer is its news
        detail = f"answered: {r.answer}"
    elif r.state == State.DONE and r.commit:
        detail = f"merged {r.commit[:10]}, {len(r.files)} file(s)"
    elif r.state in (State.BLOCKED, State.FAILED) and r.worktree:
        detail += f" (work kept in {r.worktree})"
    elif r.state == State.PAUSED and r.resume_at:
        detail = f"resumes at {time.strftime('%H:%M:%S', time.localtime(r.resume_at))} — {detail}"
    if r.tokens_in or r.tokens_out:
        detail += f"  [{_usage(r.tokens_in, r.tokens_out, r.cost_usd)}]"
    return detail


def shown_note(note: Mapping[str, Any], width: int = 100) -> str:
    """One `hive note` on one line: its text's first line (cut at `width`), and its attempt."""
    text = str(note.get("text", "")).strip()
    line = text.splitlines()[0] if text else ""
    line = line if len(line) <= width else line[: width - 1] + "…"
    return f"{line} (attempt {note.get('attempt', '?')})"
