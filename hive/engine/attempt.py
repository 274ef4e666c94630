"""Starting one attempt of a task (worktree, brief, agent through the executor) and watching it."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive import agent_clis, agentshim, logcap, notify
from hive.adapters import git, worktrees
from hive.adapters.proc import SCRUBBED_ENV
from hive.agent_clis import reader
from hive.crashsafe import crash_point
from hive.engine import hold, review
from hive.engine.brief import (
    ContextInput,
    Resolve,
    continuation,
    decisions_so_far,
    prompt,
    render_context,
)
from hive.engine.limits import AttemptMeter, task_budget_left
from hive.engine.supervise import Hooks, Watch, wait
from hive.engine.task import TaskContext, Worker
from hive.engine.taskenv import teardown_of, variables
from hive.errors import HiveError
from hive.executors import AgentRef, Checkout, Launch
from hive.lifecycle import Outcome, Resume, State
from hive.output import clean_tail, duration, say
from hive.plan import discovered
from hive.reports.dependencies import dependency_results
from hive.sandbox import gitdir, policy
from hive.store import agent_signals, names, questions
from hive.store.files import NotAFile, atomic_write
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
    log = h.paths.log_file(plan, tid)
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
        log_offset=logcap.section(log, f"{h.key} attempt {attempt} ({worker.id})", h.cfg.log_max_mb * logcap.MB),
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
    argv = _command(h, st, brief)
    unset: tuple[str, ...] = SCRUBBED_ENV
    beside: tuple[str, ...] = ()
    # made here (h.sandboxed), or by the host that runs it (a remote executor, unless mode = "off")
    remote_sandbox = caps.remote_checkout and h.cfg.sandbox_mode != "off"
    rules = _sandbox_rules(h, env) if h.sandboxed or remote_sandbox else None
    if rules is not None and h.sandboxed:
        # the branch starts at main (a sha, known) or at the last attempt's commits (asked)
        tip = base if start_point == base else git.rev_parse(root, start_point)
        confined = _in_sandbox(h, st, wt, argv, {st.branch: tip, h.cfg.main_branch: base}, rules)
        argv, env, unset = [*confined.prefix, *argv], {**env, **confined.env}, unset + confined.unset
        beside = confined.beside
    agent = h.executor.start(
        Launch(
            AgentRef.of(h.root, st),
            argv,
            env,
            wt,
            log,
            h.paths.exit_file(plan, tid, attempt),
            h.paths.env_file(plan, tid, attempt),
            brief,
            unset=unset,
            checkout=checkout,
            sandbox=rules if caps.remote_checkout else None,  # its host makes the sandbox there
            beside=beside,
            log_cap=h.cfg.log_max_mb * logcap.MB,
        )
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
    return st


def _sandbox_rules(h: TaskContext, env: dict[str, str]) -> policy.Rules:
    """What its agent's sandbox allows: what its CLI must write and reach, and the variables
    Hive sets for it (`env`); a script's, only what `[sandbox]` says."""
    if h.is_script:
        return policy.rules(h.cfg)
    profile = h.profile()
    return policy.agent_rules(h.cfg, profile.state_paths, agent_clis.reach(profile, {**os.environ, **env}), env)


def _in_sandbox(
    h: TaskContext, st: TaskState, wt: Path, argv: list[str], refs: dict[str, str], rules: policy.Rules
) -> policy.Confined:
    """How `argv` runs in the attempt's sandbox here, committing into its own git directory
    (with `refs`: its branch, and main)."""
    private = h.paths.private_gitdir(h.plan_name, h.task.id, st.attempt)
    shown = gitdir.create(private, wt, st.branch, refs, h.paths.excludes_file(h.plan_name, h.task.id, st.attempt))
    attempt = policy.Attempt(h.paths, h.plan_name, h.task.id, st.attempt, wt, tuple(argv), shown, private)
    return policy.agent(rules, attempt)


@dataclass(frozen=True)
class Brought:
    """What bringing an attempt's commits back found wrong ("": nothing)."""

    bad: str = ""  # its private git directory holds what is not git's (the attempt fails: BAD_FILE)
    held: str = ""  # its commits add files over [merge] max_file_mb: not brought back, kept for a human


def bring_back(h: TaskContext, st: TaskState, approved: bool = False, keep_big: bool = False) -> Brought:
    """A sandboxed attempt's commits, from its own git directory into its branch (before
    Hive touches either), then its private directory is gone: the attempt is over. What it
    discovered is filed in its plan's folder. Nothing is brought back from a directory holding
    what git must not read (a FIFO, a symbolic link...: `bad`), nor files over [merge]
    max_file_mb unless a human `approved` them (`held`: its directory is kept with `keep_big`,
    for `hive approve` to take them; else they are dropped, and said so)."""
    who = agent_signals.AgentIdentity(h.root, h.plan_name, h.task.id, st.attempt)
    if discovered.take_found(who):
        say(f"{h.key}: filed what its agent discovered (`hive status` lists it for your review)")
    private = h.paths.private_gitdir(h.plan_name, h.task.id, st.attempt)
    if not private.exists():
        return Brought()
    found = Brought()
    if st.worktree and st.branch:
        limit = None if approved else h.cfg.max_file_bytes
        try:
            said = gitdir.bring_back(h.root, Path(st.worktree), private, st.branch, limit)
            if said:
                say(f"{h.key}: {said}")
        except NotAFile as e:
            # kept until its failure is recorded and the next attempt starts (drop_private_gitdirs):
            # a run killed before then must find it bad again, not find nothing and merge the rest
            found = Brought(bad=f"its private git directory holds {_inside(e.path, private)}, which is {e.what}")
            say(f"{h.key}: its commits were not brought back: {found.bad}")
            return found
        except gitdir.TooBig as e:
            found = Brought(held=hold.reason((), e.files, h.cfg.max_file_mb))
            if keep_big:
                return found
            say(f"{h.key}: its commits were not brought back: they {found.held}")
    gitdir.remove(private)
    return found


def drop_private_gitdirs(h: TaskContext, below: int) -> None:
    """The private git directories of the task's attempts before `below` that are left: those
    `bring_back` kept as the evidence of a failure (a FIFO in them), or of an attempt cut short."""
    folder = h.paths.private_gitdir(h.plan_name, h.task.id, 1).parent
    prefix = names.stem(h.plan_name, h.task.id) + "-a"
    try:
        left = [n for n in os.listdir(folder) if n.startswith(prefix)]
    except FileNotFoundError:
        return
    for name in left:
        number = name[len(prefix) :].removesuffix(".gitfile")
        if number.isdigit() and int(number) < below:
            gitdir.remove(folder / f"{prefix}{number}")


def _inside(path: Path, folder: Path) -> str:
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


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
            main_branch=h.cfg.main_branch,
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
        )
    )
    worktrees.place_context(wt, name, text, tracked=original is not None)
    atomic_write(h.paths.context_copy(h.plan_name, h.task.id, st.attempt), text)
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
    ceilings = [str(wt.parent), *filter(None, os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep))]
    env = {
        **variables(h.plan_name, h.task.id, h.root, worker.number),  # the Ray executor ships these to its node
        "HIVE_ATTEMPT": str(st.attempt),
        "HIVE_WORKTREE": str(wt),
        agentshim.SIGNAL_FILE: str(h.paths.signal_file(h.plan_name, h.task.id, st.attempt)),  # `hive done` writes here
        "PATH": f"{agent_signals.ensure_shim(h.paths)}{os.pathsep}{os.environ.get('PATH', '')}",
        # the agent's own git never looks above its worktree: with the worktree's .git gone
        # (deleted under it), `git add -A` found the user's checkout around worktrees/ and
        # staged every change of theirs (seen in the soak)
        "GIT_CEILING_DIRECTORIES": os.pathsep.join(ceilings),
    }
    if not h.executor.capabilities.remote_checkout:
        # `hive ask` waits this long; on a host elsewhere its question would not reach this
        # machine's human (not shipped yet), so there it says to use `hive blocked`
        env["HIVE_ASK_WAIT"] = f"{h.cfg.ask_wait:g}"
    if not h.is_script:
        env.update(dict(h.profile().env))
    return env


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
    return wait(w, Hooks(stuck=lambda idle: _stuck(h, idle), question=lambda q: _question(h, q)))


def _question(h: TaskContext, q: Question) -> None:
    """Its agent asked its human (its clocks stop), or has its answer (they go on)."""
    if q.answered:
        h.update(None, event=f"answered: question {q.number}")
        say(f"{h.key}: answered — its agent goes on")
        return
    h.update(None, event=f"asked: {q.text}")
    options = f" (options: {', '.join(q.options)})" if q.options else ""
    say(f"{h.key}: its agent asks: {q.text}{options} — answer with `{questions.answer_command(h.key, q)}`")
    notify.question(h, q)


def _stuck(h: TaskContext, idle: float) -> None:
    h.update(None, event=f"stuck: no output for {duration(idle)}")
    say(f"{h.key}: no output for {duration(idle)} (stuck_threshold) — check it with `hive attach {h.key}`")
