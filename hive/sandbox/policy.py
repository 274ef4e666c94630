"""What one attempt's agent may reach (`[sandbox]`), and whether a run sandboxes at all."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import hive
from hive.sandbox import bwrap
from hive.settings.config import Config
from hive.store.paths import Paths

TMP = Path("/tmp")


def sandboxed(config: Config, remote: bool) -> bool:
    """Do this run's agents run in the sandbox? (`preflight` has refused the run, or said
    why not, where the answer is no against the user's wish.)"""
    return config.sandbox_mode != "off" and not remote and not bwrap.unavailable()


def preflight(config: Config, remote: bool) -> tuple[list[str], list[str]]:
    """(problems that stop the run, warnings for it) before anything starts."""
    if config.sandbox_mode == "off":
        return [], []
    why = "the Ray executor does not sandbox its agents yet" if remote else bwrap.unavailable()
    if not why:
        return [], []
    if config.sandbox_mode == "on":
        return [f'[sandbox] mode = "on", but {why}; agents would run with all your rights'], []
    return [], [f'warning: agents run without a sandbox: {why} ([sandbox] mode = "auto")']


@dataclass(frozen=True)
class Attempt:
    """What the sandbox of one attempt is made of."""

    paths: Paths
    plan: str
    task_id: str
    attempt: int
    worktree: Path
    argv: tuple[str, ...]
    state_paths: tuple[str, ...]  # its profile's (`~` = home)
    gitfile: Path | None = None  # shown as the worktree's `.git` (its private git directory's)
    private_gitdir: Path | None = None


def view(config: Config, a: Attempt) -> bwrap.View:
    """Writable: its checkout, its private git directory, its attempt's signal folder, its
    task's notes file and questions folder, its plan's discovered folder, its CLI's state and
    `[sandbox] writable`. Hidden: `[sandbox] hide`. Everything else read-only; /tmp private,
    with what it must run (Hive, Python, the CLI, the repository) bound back read-only."""
    p = a.paths
    signals = p.signal_dir(a.plan, a.task_id, a.attempt)
    questions = p.questions_dir(a.plan, a.task_id)
    discovered = p.discovered_dir(a.plan)
    for folder in (signals, questions, discovered):
        folder.mkdir(parents=True, exist_ok=True)
    notes = p.notes_file(a.plan, a.task_id)
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.touch()
    own = [a.worktree, signals, questions, discovered, notes]
    if a.private_gitdir is not None:
        own.append(a.private_gitdir)
    extra = _existing(a.state_paths + config.sandbox_writable)
    files = ((a.gitfile, a.worktree / ".git"),) if a.gitfile is not None else ()
    return bwrap.View(
        readable=_readable(p.root, a.argv),
        writable=tuple(own + extra),
        files=files,
        hidden=tuple(_home(config.sandbox_hide)),
    )


def check_sandbox(config: Config, root: Path, worktree: Path, remote: bool) -> tuple[str, ...]:
    """What a check (Verify, test_command) or `[worktrees] teardown` in `worktree` runs inside:
    the sandbox's command line, ending in `--`; nothing when the run is not sandboxed."""
    return tuple(bwrap.command(check_view(config, root, worktree), [])) if sandboxed(config, remote) else ()


def check_view(config: Config, root: Path, worktree: Path) -> bwrap.View:
    """A Verify or test_command on the merged result, or a teardown, runs code the agent may have
    written: it writes only the task's checkout, a private /tmp and `[sandbox] writable` (a
    teardown that stops the agent's services needs what they needed, the Docker socket say), and
    sees what an agent sees."""
    return bwrap.View(
        readable=_readable(root, ("bash",)),
        writable=(worktree, *_existing(config.sandbox_writable)),
        hidden=tuple(_home(config.sandbox_hide)),
    )


def _readable(root: Path, argv: tuple[str, ...]) -> tuple[Path, ...]:
    """What it runs from that lies in /tmp, to bind back read-only into its own /tmp."""
    return _outermost(path for path in _needed(root, argv) if _under_tmp(path))


def _needed(root: Path, argv: tuple[str, ...]) -> Iterable[Path]:
    """What an agent runs from, wherever it is installed: the repository (its `.hive/bin/hive`,
    main's objects), the home of its CLI, Python and Hive, every PATH entry, and the files
    its command line names (a script, the brief)."""
    yield root
    yield Path.home()
    yield Path(sys.prefix)
    yield Path(sys.base_prefix)
    yield Path(hive.__file__).resolve().parent.parent
    yield Path(os.path.realpath(sys.executable)).parent.parent
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry:
            yield Path(entry)
            yield Path(os.path.realpath(entry)).parent
    program = shutil.which(argv[0]) if argv else None
    if program:
        yield Path(os.path.realpath(program)).parent.parent
    for arg in argv[1:]:
        if arg.startswith("/") and os.path.exists(arg):
            yield Path(arg).parent


def _existing(paths: Iterable[str]) -> list[Path]:
    """Those that exist (bubblewrap binds only what does); one written as a folder (a trailing
    `/`, as the profiles' `state_paths` write theirs) is made if missing: a CLI run the first
    time in the sandbox could not make it in the read-only home."""
    out = []
    for raw in paths:
        path = _home([raw])[0]
        if raw.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        if path.exists():
            out.append(path)
    return out


def _home(paths: Iterable[str]) -> list[Path]:
    return [Path(os.path.expanduser(path)) for path in paths]


def _under_tmp(path: Path) -> bool:
    """Only what lies under /tmp needs binding back (the sandbox's /tmp is its own)."""
    try:
        return Path(os.path.realpath(path)).is_relative_to(TMP) or path.is_relative_to(TMP)
    except ValueError:
        return False


def _outermost(paths: Iterable[Path]) -> tuple[Path, ...]:
    """Each path once, and none inside another (one bind covers it)."""
    unique = sorted({Path(os.path.abspath(p)) for p in paths if p != TMP})
    out: list[Path] = []
    for path in unique:
        if not any(path.is_relative_to(kept) for kept in out):
            out.append(path)
    return tuple(out)
