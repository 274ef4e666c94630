"""An attempt's commits back from its sandbox: a sandboxed agent commits into a git directory of
its own (hive.sandbox.gitdir); once it is done, Hive brings those commits into the task's branch
(before Hive reads either) and the private directory goes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hive.engine import hold
from hive.engine.task import TaskContext
from hive.output import say
from hive.plan import discovered
from hive.sandbox import gitdir
from hive.store import agent_signals, names
from hive.store.files import NotAFile
from hive.store.state import TaskState


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
