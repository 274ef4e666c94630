"""Starting an agent Hive runs for a task — an author's attempt (or a resolve attempt after a
conflict), a reviewer — in one place: the environment it gets, its sandbox, its log's header and its
start through the executor (tmux here, a Ray node elsewhere). Written twice before, the reviewer's
copy had drifted (its GIT_CEILING_DIRECTORIES dropped the user's own entries: issue 44)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from hive import agentshim, logcap
from hive.adapters.proc import AGENT_SCRUBBED
from hive.engine.task import TaskContext
from hive.engine.taskenv import variables
from hive.executors import Agent, AgentRef, Checkout, Launch
from hive.sandbox import gitdir, policy
from hive.store import agent_signals


def agent_env(
    h: TaskContext, worker: int, worktree: Path, number: int, signal: Path, own: Mapping[str, str] | None = None
) -> dict[str, str]:
    """What every agent of task `h` is told, whichever it is: the task's variables (its ports for
    worker number `worker`), its HIVE_ATTEMPT `number`, its worktree, where its `hive done` goes
    (`signal`), `hive` on its PATH, and a git that never looks above its worktree; then `own`
    (its profile's `env`, what its role adds), which wins."""
    ceilings = [str(worktree.parent), *filter(None, os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep))]
    return {
        **variables(h.plan_name, h.task.id, h.root, worker),  # the Ray executor ships these to its node
        "HIVE_ATTEMPT": str(number),
        "HIVE_WORKTREE": str(worktree),
        agentshim.SIGNAL_FILE: str(signal),  # `hive done` writes here
        "PATH": f"{agent_signals.ensure_shim(h.paths)}{os.pathsep}{os.environ.get('PATH', '')}",
        # the agent's own git never looks above its worktree: with the worktree's .git gone
        # (deleted under it), `git add -A` found the user's checkout around worktrees/ and
        # staged every change of theirs (seen in the soak)
        "GIT_CEILING_DIRECTORIES": os.pathsep.join(ceilings),
        **dict(own or {}),
    }


@dataclass(frozen=True)
class Sandbox:
    """Where an agent's sandbox stands here: its rules, and the box around it. Its checkout gets a
    git directory of its own (`private`) holding `refs`, shown as the checkout's `.git`."""

    rules: policy.Rules
    private: Path
    refs: Mapping[str, str]  # branch -> commit
    excludes: Path  # the checkout's excludes, copied into its git directory
    own: tuple[Path, ...] = ()  # what it writes besides its checkout and its git directory
    name: str = ""  # unique to it (its proxy's socket); "" for an attempt's (policy.attempt_box names it)
    attempt: policy.Attempt | None = None  # an author's attempt: its signal, questions, notes, found folders


@dataclass(frozen=True)
class Start:
    """One agent to start for task `h`."""

    ref: AgentRef
    argv: list[str]
    env: dict[str, str]  # agent_env's, and what its executor must pass on
    worktree: Path
    brief: Path
    exit_file: Path
    env_file: Path
    sandbox: Sandbox | None = None  # made here; None: unsandboxed, or made by a host elsewhere
    checkout: Checkout | None = None  # a host elsewhere makes its checkout
    remote_rules: policy.Rules | None = None  # ... and its sandbox, with these rules
    unset: tuple[str, ...] = field(default=AGENT_SCRUBBED)


def log_section(h: TaskContext, title: str) -> int:
    """A header in the task's log for the agent about to start (`hive logs` shows where each
    attempt and review begins); returns where its output starts."""
    return logcap.section(h.paths.log_file(h.plan_name, h.task.id), title, h.cfg.log_max_mb * logcap.MB)


def start(h: TaskContext, s: Start) -> Agent:
    """Start it, in its sandbox if it has one, its output appended to the task's log."""
    argv, env, unset = s.argv, s.env, s.unset
    beside: tuple[str, ...] = ()
    if s.sandbox is not None:
        confined = _confine(h, s, s.sandbox)
        argv, env, beside = [*confined.prefix, *argv], {**env, **confined.env}, confined.beside
        unset = (*unset, *confined.unset)
    log, cap = h.paths.log_file(h.plan_name, h.task.id), h.cfg.log_max_mb * logcap.MB
    launch = Launch(
        s.ref,
        argv,
        env,
        s.worktree,
        log,
        s.exit_file,
        s.env_file,
        s.brief,
        unset=unset,
        checkout=s.checkout,
        sandbox=s.remote_rules,
        beside=beside,
        confined=s.sandbox is not None,
        log_cap=cap,
    )
    return h.executor.start(launch)


def _confine(h: TaskContext, s: Start, box: Sandbox) -> policy.Confined:
    """Its checkout committing into a git directory of its own, then the sandbox's command line."""
    branch = next(iter(box.refs))
    shown = gitdir.create(box.private, s.worktree, branch, dict(box.refs), box.excludes)
    if box.attempt is not None:
        attempt = replace(box.attempt, argv=tuple(s.argv), gitfile=shown, private_gitdir=box.private)
        return policy.agent(box.rules, attempt)
    own = (s.worktree, *box.own, box.private)
    where = policy.Box(
        h.root,
        tuple(s.argv),
        own,
        box.name,
        h.paths.refused_file(h.plan_name, h.task.id),
        ((shown, s.worktree / ".git"),),
    )
    return policy.confine(box.rules, where)
