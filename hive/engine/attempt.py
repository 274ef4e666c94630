"""Starting one attempt of a task (worktree, brief, agent through the executor) and watching it."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from hive import agent_clis, notify
from hive.adapters import git, worktrees
from hive.agent_clis import reader
from hive.crashsafe import crash_point
from hive.engine import launch, review
from hive.engine.brief import (
    ContextInput,
    Resolve,
    continuation,
    decisions_so_far,
    prompt,
    render_context,
)
from hive.engine.bringback import bring_back, drop_private_gitdirs
from hive.engine.limits import AttemptMeter, task_budget_left
from hive.engine.supervise import Hooks, Watch, wait
from hive.engine.task import TaskContext, Worker
from hive.engine.taskenv import teardown_of
from hive.errors import HiveError
from hive.executors import AgentRef, Checkout
from hive.lifecycle import Outcome, Resume, State
from hive.output import clean_tail, duration, say
from hive.reports.dependencies import dependency_results
from hive.sandbox import policy
from hive.store import names, questions
from hive.store.files import atomic_write
from hive.store.questions import Question
from hive.store.state import TaskState


def start(h: TaskContext, st: TaskState, worker: Worker) -> TaskState:
    root, attempt = h.root, st.attempt + 1
    base = git.rev_parse(root, h.main_ref)
    spare = spare_for(h, worker)
    retire_worktree(h, st, spare)
    caps = h.executor.capabilities
    start_point = _continue_from(h, st, base)
    resolve = _resolve(h, st, start_point, base)
    plan, tid = h.plan_name, h.task.id
    wt = h.executor.worktree_base(root, h.cfg.worktree_base) / names.worktree_dir(worker.id, plan, tid, attempt)
    # Recorded before anything is created, so a crash at any later line leaves a
    # record that names what to resume or clean up.
    st = h.update(
        (State.PLANNED, State.FAILED, State.PAUSED, State.AWAITING_HUMAN),
        state=State.IN_PROGRESS,
        attempt=attempt,
        attempts_used=st.attempts_used + 1,
        worker=worker.id,
        pid=os.getpid(),
        session=names.session(worker.id, plan, tid, attempt),
        worktree=str(wt),
        branch=names.branch(plan, tid, attempt),
        base=base,
        started_at=time.time(),
        reason="",
        task_hash=h.task.text_hash,
        agent_token=0,
        node="",
        merging="",
        output_tail="",
        resume="",
        permanent=False,
        resume_at=0.0,
        usage={},
        log_offset=launch.log_section(h, f"{h.key} attempt {attempt} ({worker.id})"),
    )
    crash_point("after-claim")
    drop_private_gitdirs(h, attempt)
    review.end_reviewers(h)  # one a stopped run left, before a human sent the task back
    # a host elsewhere makes the agent's checkout (the spare serves merges here)
    if caps.remote_checkout or spare is None or not worktrees.reuse(root, spare, wt, st.branch, start_point):
        worktrees.create(root, wt, st.branch, start_point)
    crash_point("after-worktree-add")
    env = _agent_env(h, st, wt, worker)
    brief = _brief(h, st, wt, resolve)
    copied = worktrees.copy_files(root, wt, h.cfg.worktree_copy)
    excludes = h.paths.excludes_file(plan, tid, attempt)
    ignored = [] if h.is_script else list(h.profile().ignore)
    worktrees.set_excludes(root, wt, excludes, [brief.name, *copied, *ignored])
    if h.cfg.worktree_setup and not caps.remote_checkout:  # a host elsewhere runs it in its own checkout
        # sandboxed as a check is: a next attempt's checkout holds what the last agent wrote
        # (a package.json whose install scripts `npm ci` runs)
        inside = policy.check(h.cfg, h.paths, (plan, tid), wt)
        setup = inside.run(h.cfg.worktree_setup, wt, env, h.cfg.task_timeout)
        if setup.code != 0:
            raise HiveError(
                f"worktree setup command failed (exit {setup.code}): {h.cfg.worktree_setup}\n"
                f"{clean_tail(setup.output, 15)}"
            )
        worktrees.set_excludes(root, wt, excludes, [brief.name, *copied, *ignored, *worktrees.untracked(wt)])
    checkout = (
        Checkout(
            root,
            st.branch,
            files=(brief.name, *copied),
            hidden=(brief.name,) if git.tracked(wt, brief.name) else (),
            excludes=(brief.name, *copied, *ignored),
            setup=h.cfg.worktree_setup,
            setup_timeout=h.cfg.task_timeout,
        )
        if caps.remote_checkout  # only a host elsewhere rebuilds the worktree: no git call for it here
        else None
    )
    # made here (h.sandboxed), or by the host that runs it (a remote executor, unless mode = "off")
    remote_sandbox = caps.remote_checkout and h.cfg.sandbox_mode != "off"
    rules = _sandbox_rules(h, env) if h.sandboxed or remote_sandbox else None
    sandbox = None
    if rules is not None and h.sandboxed:
        # the branch starts at main (a sha, known) or at the last attempt's commits (asked)
        tip = base if start_point == base else git.rev_parse(root, start_point)
        sandbox = launch.Sandbox(
            rules,
            h.paths.private_gitdir(plan, tid, attempt),
            {st.branch: tip, h.cfg.main_name: base},
            excludes,
            attempt=policy.Attempt(h.paths, plan, tid, attempt, wt, ()),
        )
    agent = launch.start(
        h,
        launch.Start(
            AgentRef.of(h.root, st),
            _command(h, st, brief),
            env,
            wt,
            brief,
            h.paths.exit_file(plan, tid, attempt),
            h.paths.env_file(plan, tid, attempt),
            sandbox=sandbox,
            checkout=checkout,
            remote_rules=rules if caps.remote_checkout else None,  # its host makes the sandbox there
        ),
    )
    # the clocks (spawn grace, timeout) start now: a remote executor may have queued it for a free host
    started: dict[str, Any] = {"started_at": time.time()} if caps.remote_checkout else {}
    st = h.update((State.IN_PROGRESS,), agent_token=agent.ref.token, node=agent.host(), event="spawned", **started)
    crash_point("after-spawn")
    what = "script" if h.is_script else f"agent {h.profile().name}"
    where = f" on {st.node}" if st.node else ""
    say(
        f"{h.key}: attempt {attempt} started — {what} in {h.executor.kind} session {st.session}{where} "
        f"(`hive attach {h.key}`), worktree {h.rel(wt)}"
    )
    if h.cfg.pr_mode and h.job.plan.issues:  # its issue says so (engine/issues.py)
        from hive.engine import issues

        st = issues.tell(h, st, f"attempt {attempt} started ({what})")
    return st


def _sandbox_rules(h: TaskContext, env: dict[str, str]) -> policy.Rules:
    """What its agent's sandbox allows: what its CLI must write and reach, and the variables
    Hive sets for it (`env`); a script's, only what `[sandbox]` says."""
    if h.is_script:
        return policy.rules(h.cfg)
    profile = h.profile()
    return policy.agent_rules(h.cfg, profile.state_paths, agent_clis.reach(profile, {**os.environ, **env}), env)


def start_merge_only(h: TaskContext, st: TaskState, worker: Worker) -> TaskState:
    """`hive retry` / `hive approve` of a merge: the work is on the branch; only merge."""
    say(f"{h.key}: merging branch {st.branch}")
    # resume stays set until it is merged: a run stopped half-way merges again next time
    st = h.update(
        (State.PLANNED, State.IN_PROGRESS, State.FAILED),
        state=State.IN_PROGRESS,
        worker=worker.id,
        pid=os.getpid(),
        attempts_used=st.attempts_used + (st.state == State.FAILED),
        resume=Resume.MERGING if st.resume == Resume.MERGING else Resume.MERGE,
        reason="merging its branch",
    )
    return worktree_for_merge(h, st, worker.id, spare_for(h, worker))[0]


def sound(h: TaskContext, wt: Path) -> bool:
    """Is `wt` a worktree Hive may run git in? If not, it is cleared away (and said)."""
    note = worktrees.clear_if_broken(h.root, wt)
    if note:
        say(f"{h.key}: {note}")
    return note is None


def worktree_for_merge(h: TaskContext, st: TaskState, worker: str, spare: Path | None = None) -> tuple[TaskState, Path]:
    """The attempt's worktree if it is sound; else (deleted, made on another host, or half-made)
    a checkout of its branch — the worker's `spare` moved to it, or a fresh one — which holds
    every commit the agent made (and the state that records it)."""
    wt = Path(st.worktree) if st.worktree else None
    if wt is not None and sound(h, wt):
        return st, wt
    wt = h.executor.worktree_base(h.root, h.cfg.worktree_base) / names.worktree_dir(
        worker, h.plan_name, h.task.id, st.attempt
    )
    if not (wt.exists() and sound(h, wt)):  # sound() clears a half-made one away
        say(f"{h.key}: no usable worktree; merging from a fresh checkout of branch {st.branch}")
        st = h.update((State.IN_PROGRESS,), worktree=str(wt))
        git.worktree_prune(h.root)  # a deleted worktree still "has the branch checked out" until pruned
        # the branch at its own tip: switching to it moves nothing
        if spare is None or not worktrees.reuse(h.root, spare, wt, st.branch, f"refs/heads/{st.branch}"):
            worktrees.checkout_existing(h.root, wt, st.branch)
    return st, wt


def spare_for(h: TaskContext, worker: Worker) -> Path | None:
    """Where `worker` keeps a finished task's checkout for its next task (`[worktrees] reuse`),
    or for its next merge when agents work on other hosts; None if reuse is off. Only the
    process that holds the worker's slot touches it."""
    if not h.cfg.worktree_reuse:
        return None
    return h.executor.worktree_base(h.root, h.cfg.worktree_base) / names.spare_dir(worker.id)


def retire_worktree(h: TaskContext, st: TaskState, spare: Path | None = None) -> None:
    """A previous attempt's worktree: its leftovers are committed to its branch (the
    next attempt starts from there), then it is removed (or kept as the worker's `spare`).
    One that is not sound (a checkout that never completed) holds no work and is only
    cleared away."""
    wt = Path(st.worktree) if st.worktree else None
    bring_back(h, st)  # before anything reads its branch or commits its leftovers
    if wt is None or not sound(h, wt):
        return
    worktrees.restore_branch(wt, st.branch)
    worktrees.retire_context(wt, h.context_name())
    try:
        worktrees.salvage(wt, f"hive: unfinished work of {h.key} attempt {st.attempt}", h.cfg.max_file_bytes)
    except worktrees.Oversized as e:
        say(f"{h.key}: what attempt {st.attempt} left uncommitted is not committed: {e} (over [merge] max_file_mb)")
    note = worktrees.remove_if_clean(h.root, wt, teardown_of(h), spare)
    if note:
        say(f"{h.key}: {note}")


def _continue_from(h: TaskContext, st: TaskState, base: str) -> str:
    """A new attempt builds on the commits of the last attempt that made any (a script is
    deterministic and starts afresh). The last attempt's branch first; an attempt stopped
    before its branch was made (a Ctrl-C or kill -9 just after its claim) has none, and the one
    before it holds the work — each attempt's branch holds those before it."""
    if h.is_script:
        return base
    tried = [st.branch, *(a.get("branch", "") for a in reversed(st.history))]
    for branch in dict.fromkeys(b for b in tried if b):
        if git.branch_exists(h.root, branch):
            return base if git.is_ancestor(h.root, f"refs/heads/{branch}", base) else f"refs/heads/{branch}"
    return base


def _resolve(h: TaskContext, st: TaskState, start_point: str, main: str) -> Resolve | None:
    """For an attempt after a merge conflict: which files conflicted, and what main
    did since the branch left it."""
    if st.resume != Resume.RESOLVE or start_point == main:
        return None
    fork = git.merge_base(h.root, start_point, main)
    return Resolve(files=st.files, main_commits=tuple(git.log_with_files(h.root, f"{fork}..{main}")))


def _brief(h: TaskContext, st: TaskState, wt: Path, resolve: Resolve | None = None) -> Path:
    name = h.context_name()
    original = worktrees.tracked_text(wt, name)
    text = render_context(
        ContextInput(
            key=h.key,
            attempt=st.attempt,
            branch=st.branch,
            main_branch=h.cfg.main_name,  # pull-request mode: the forge's base, as last fetched
            context_file=name,
            task=h.task,
            plan=h.job.plan,
            dependencies=dependency_results(h.store, h.job.plan, h.task),
            continuation=continuation(h.paths, h.root, st) if st.attempt > 1 else None,
            decisions=decisions_so_far(h.store, h.job.plan),
            project_instructions=original or "",
            hive=h.hive_command,
            resolve=resolve,
            questions=tuple(questions.load(h.paths, h.plan_name, h.task.id)),
            can_ask=not h.executor.capabilities.remote_checkout,
            protected=h.cfg.protected,
            max_file_mb=h.cfg.max_file_mb,
            pull_request_to=h.cfg.base_branch if h.cfg.pr_mode else "",
        )
    )
    worktrees.place_context(wt, name, text, tracked=original is not None)
    atomic_write(h.paths.context_copy(h.plan_name, h.task.id, st.attempt), text, durable=False)
    return wt / name


def _command(h: TaskContext, st: TaskState, brief: Path) -> list[str]:
    if h.is_script:
        script = h.paths.script_file(h.plan_name, h.task.id, st.attempt)
        atomic_write(script, h.task.script)
        return ["bash", "-e", str(script)]
    profile = h.profile()
    argv = profile.argv(prompt(h.key, h.task.title, str(brief), h.hive_command), str(brief))
    left = task_budget_left(h, st)
    return argv + (profile.budget_argv(left) if left is not None else [])


def _agent_env(h: TaskContext, st: TaskState, wt: Path, worker: Worker) -> dict[str, str]:
    own: dict[str, str] = {}
    if not h.executor.capabilities.remote_checkout:
        # `hive ask` waits this long; on a host elsewhere its question would not reach this
        # machine's human (not shipped yet), so there it says to use `hive blocked`
        own["HIVE_ASK_WAIT"] = f"{h.cfg.ask_wait:g}"
    if not h.is_script:
        own.update(dict(h.profile().env))
    signal = h.paths.signal_file(h.plan_name, h.task.id, st.attempt)
    return launch.agent_env(h, worker.number, wt, st.attempt, signal, own)


def watch(h: TaskContext, st: TaskState) -> Outcome:
    profile = None if h.is_script else h.profile()
    plan, tid = h.plan_name, h.task.id
    w = Watch(
        agent=h.agent(st),
        signal_path=h.paths.signal_file(plan, tid, st.attempt),
        exit_file=h.paths.exit_file(plan, tid, st.attempt),
        stop_file=h.paths.stop_file(plan, tid, st.attempt),
        log_path=h.paths.log_file(plan, tid),
        log_offset=st.log_offset,
        started_at=st.started_at,
        timeout=h.task.timeout or h.cfg.task_timeout,
        stuck_threshold=h.cfg.stuck_threshold,
        grace=None if profile is None else h.cfg.spawn_grace_period,
        exit_zero_is_done=bool(profile and profile.exit_zero_is_done),
        stall_patterns=profile.stall_patterns if profile else (),
        reader=reader(profile.stream) if profile else None,
        meter=AttemptMeter(h) if profile else None,
        command=profile.command[0] if profile else "",
        linger=profile.linger if profile else 0.0,
        poll=h.executor.capabilities.poll,
        naps=h.executor.capabilities.naps,
        attempt=st.attempt,
        questions=lambda: questions.load(h.paths, plan, tid),
    )
    hooks = Hooks(stuck=lambda idle: _stuck(h, idle), question=lambda q: _question(h, q))
    if h.cfg.pr_mode:  # its questions are on the forge too: answered there by `/answer`
        from hive.engine import issues  # the forge's client loads in pull-request mode only

        hooks = dataclasses.replace(hooks, waiting=issues.poller(h))
    return wait(w, hooks)


def _question(h: TaskContext, q: Question) -> None:
    """Its agent asked its human (its clocks stop), or has its answer (they go on)."""
    if q.answered:
        h.update(None, event=f"answered: question {q.number}")
        say(f"{h.key}: answered — its agent goes on")
        if h.cfg.pr_mode:
            from hive.engine import issues

            issues.answered(h, q)
        return
    h.update(None, event=f"asked: {q.text}")
    options = f" (options: {', '.join(q.options)})" if q.options else ""
    say(f"{h.key}: its agent asks: {q.text}{options} — answer with `{questions.answer_command(h.key, q)}`")
    notify.question(h, q)
    if h.cfg.pr_mode:
        from hive.engine import issues

        issues.ask(h, h.read(), q)


def _stuck(h: TaskContext, idle: float) -> None:
    h.update(None, event=f"stuck: no output for {duration(idle)}")
    say(f"{h.key}: no output for {duration(idle)} (stuck_threshold) — check it with `hive attach {h.key}`")
