"""What one attempt's agent may reach (`[sandbox]`), and whether a run sandboxes at all."""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import hive
from hive.adapters import proc
from hive.agent_clis.base import Reach
from hive.sandbox import bwrap, network
from hive.settings.config import Config
from hive.store.paths import Paths

TMP = Path("/tmp")
# Variables that look like credentials: a sandboxed agent or check does not get them from your
# environment (its CLI's own, `[agents.X] env` and `[sandbox] pass_env` excepted). Names, not
# values, decide; the toolchain's variables (JAVA_HOME, VIRTUAL_ENV, …) stay, as its tests need them.
SECRETS = (
    "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*_KEY", "*_KEY_*", "*APIKEY*", "*CREDENTIAL*",
    "*_PAT", "*_AUTH", "AWS_*", "AZURE_*", "VAULT_*", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "KUBECONFIG",
)  # fmt: skip


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
class Confined:
    """How a program runs in its sandbox: `prefix` + its argv, with `env` added to its
    environment and `unset` taken from it."""

    prefix: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()

    def run(self, command: str, cwd: Path, env: dict[str, str], timeout: float) -> proc.Result:
        """A command the user wrote (a check), run this way (`bash -c`, Hive's environment)."""
        return proc.run_users_command(command, cwd, {**env, **self.env}, timeout, self.prefix, self.unset)


UNCONFINED = Confined()  # as the user's own commands run without a sandbox


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


def agent(config: Config, a: Attempt, reach: Reach, env: Mapping[str, str]) -> Confined:
    """An attempt's agent (or script) in its sandbox: it reaches `[sandbox] allow`, its CLI's
    hosts (`reach`) and the model servers its environment `env` names; it keeps its CLI's
    variables, those Hive sets for it (`env`) and `[sandbox] pass_env`."""
    environ = {**os.environ, **env}
    allow = (*config.sandbox_allow, *reach.hosts, *network.hosts_in(environ))
    name = str(a.paths.signal_dir(a.plan, a.task_id, a.attempt))
    way = network.way(config.sandbox_network, allow, name, a.paths.refused_file(a.plan, a.task_id))
    keep = (*reach.env, *env, *config.sandbox_pass_env)
    return _confined(view(config, a, way), way, keep)


def check(config: Config, paths: Paths, key: tuple[str, str], worktree: Path, remote: bool) -> Confined:
    """A Verify, test_command or `[worktrees] teardown` of task `key` (plan, id) in `worktree`,
    when the run's agents (on another host if `remote`) are sandboxed: it runs code the agent
    may have written, so it writes only that checkout, `[sandbox] writable` and a private /tmp,
    sees what an agent sees, and reaches only `[sandbox] allow`."""
    if not sandboxed(config, remote):
        return UNCONFINED
    name = f"check {worktree}"
    way = network.way(config.sandbox_network, config.sandbox_allow, name, paths.refused_file(*key))
    return _confined(check_view(config, paths.root, worktree, way), way, config.sandbox_pass_env)


def _confined(v: bwrap.View, way: network.Way, keep: Iterable[str]) -> Confined:
    prefix = way.outside() + bwrap.command(v, way.inside())
    return Confined(tuple(prefix), way.environment(), withheld(os.environ, keep))


def withheld(environ: Mapping[str, str], keep: Iterable[str]) -> tuple[str, ...]:
    """The variables of `environ` a sandboxed program does not get: those that look like
    credentials (SECRETS), unless `keep` (names or patterns) lets them through."""
    kept = tuple(keep)
    return tuple(sorted(k for k in environ if _matches(k, SECRETS) and not _matches(k, kept)))


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name.upper(), pattern.upper()) for pattern in patterns)


def view(config: Config, a: Attempt, way: network.Way) -> bwrap.View:
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
        files=files + way.binds(),
        hidden=_hidden(config),
        network=not way.isolated,
    )


def check_view(config: Config, root: Path, worktree: Path, way: network.Way) -> bwrap.View:
    """What a check sees: the task's checkout and `[sandbox] writable` (a teardown that stops
    the agent's services needs what they needed), what an agent sees besides."""
    return bwrap.View(
        readable=_readable(root, ("bash",)),
        writable=(worktree, *_existing(config.sandbox_writable)),
        files=way.binds(),
        hidden=_hidden(config),
        network=not way.isolated,
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


def _hidden(config: Config) -> tuple[Path, ...]:
    """`[sandbox] hide`, but for what `writable` names itself (the Docker socket a teardown needs)."""
    writable = set(_home(config.sandbox_writable))
    return tuple(path for path in _home(config.sandbox_hide) if path not in writable)


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
