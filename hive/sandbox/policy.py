"""What one attempt's agent may reach (`[sandbox]`), and whether a run sandboxes at all."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
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


def sandboxed(config: Config) -> bool:
    """Do the agents, scripts and checks this machine runs go in the sandbox? (`preflight` has
    refused the run, or said why not, where the answer is no against the user's wish.)"""
    return config.sandbox_mode != "off" and not bwrap.unavailable()


def preflight(config: Config) -> tuple[list[str], list[str]]:
    """(problems that stop the run, warnings for it) before anything starts. (A Ray node checks
    its own bubblewrap as it starts an agent there.)"""
    if config.sandbox_mode == "off":
        return [], []
    why = bwrap.unavailable()
    if not why:
        return [], []
    if config.sandbox_mode == "on":
        return [f'[sandbox] mode = "on", but {why}; agents would run with all your rights'], []
    return [], [f'warning: agents run without a sandbox: {why} ([sandbox] mode = "auto")']


@dataclass(frozen=True)
class Confined:
    """How a program runs in its sandbox: `prefix` + its argv, with `env` added to its
    environment and `unset` taken from it; with an allowlist, its proxy either runs it
    (`outside` + prefix + argv: a check's) or is started beside it (`beside`: an agent's, off its
    way, by the log's writer of its tmux pane; hive.adapters.envexec's options)."""

    prefix: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    outside: tuple[str, ...] = ()
    beside: tuple[str, ...] = ()

    def argv(self, program: Iterable[str]) -> list[str]:
        """`program` run in the sandbox under its own proxy."""
        return [*self.outside, *self.prefix, *program]

    def run(self, command: str, cwd: Path, env: dict[str, str], timeout: float) -> proc.Result:
        """A command the user wrote (a check), run this way (`bash -c`, Hive's environment)."""
        prefix = (*self.outside, *self.prefix)
        return proc.run_users_command(command, cwd, {**env, **self.env}, timeout, prefix, self.unset)


UNCONFINED = Confined()  # as the user's own commands run without a sandbox


@dataclass(frozen=True)
class Rules:
    """What one sandbox allows, as plain data: decided where the run is, and built into a
    sandbox on the machine that runs the program (a Ray node builds its agents' from it)."""

    required: bool  # `mode = "on"`: without bubblewrap it does not run at all
    writable: tuple[str, ...]  # besides its own folders (`~` = home; ending in `/`: made if missing)
    hide: tuple[str, ...]
    network: str  # `[sandbox] network` (schema.SANDBOX_NETWORKS)
    allow: tuple[str, ...]  # hosts, with "allowlist"
    keep: tuple[str, ...]  # variables (patterns) it keeps although they look like secrets


def rules(config: Config) -> Rules:
    """A check's or a script's: `[sandbox] allow` and `pass_env` only."""
    return Rules(
        required=config.sandbox_mode == "on",
        writable=config.sandbox_writable,
        hide=tuple(path for path in config.sandbox_hide if path not in config.sandbox_writable),
        network=config.sandbox_network,
        allow=config.sandbox_allow,
        keep=config.sandbox_pass_env,
    )


def agent_rules(config: Config, state_paths: tuple[str, ...], reach: Reach, env: Mapping[str, str]) -> Rules:
    """An agent's: besides, it writes its CLI's `state_paths`, reaches its CLI's hosts (`reach`)
    and the model servers its environment names, and keeps its CLI's variables and those Hive
    sets for it (`env`)."""
    r = rules(config)
    hosts = (*reach.hosts, *network.hosts_in({**os.environ, **env}))
    return replace(r, writable=(*state_paths, *r.writable), allow=(*r.allow, *hosts), keep=(*reach.env, *env, *r.keep))


@dataclass(frozen=True)
class Box:
    """Where one sandbox stands on the machine that runs it."""

    root: Path  # what it runs from: a repository (its `.hive/bin/hive`, its objects)
    argv: tuple[str, ...]  # what it runs (its program and files are bound back if under /tmp)
    own: tuple[Path, ...]  # what it writes: its checkout and folders of its own
    name: str  # unique to it (its proxy's socket)
    refused: Path  # where its proxy records what it refused
    files: tuple[tuple[Path, Path], ...] = ()  # (source, target): shown read-only at target
    moved: tuple[tuple[Path, Path], ...] = ()  # (source, target): a folder of its own shown at target


def confine(r: Rules, box: Box) -> Confined:
    """How a program runs in the sandbox `r` allows, at `box`."""
    view, way = layout(r, box)
    prefix = bwrap.command(view, way.inside())
    unset = withheld(os.environ, r.keep)
    return Confined(tuple(prefix), way.environment(), unset, tuple(way.outside()), tuple(way.beside()))


def layout(r: Rules, box: Box) -> tuple[bwrap.View, network.Way]:
    """What the sandbox `r` allows at `box` sees, and its way out."""
    way = network.way(r.network, r.allow, box.name, box.refused)
    view = bwrap.View(
        readable=_readable(box.root, box.argv),
        writable=(*box.own, *_existing(r.writable)),
        moved=box.moved,
        files=box.files + way.binds(),
        hidden=tuple(_home(r.hide)),
        network=not way.isolated,
    )
    return view, way


@dataclass(frozen=True)
class Attempt:
    """An attempt's sandbox on this machine."""

    paths: Paths
    plan: str
    task_id: str
    attempt: int
    worktree: Path
    argv: tuple[str, ...]
    gitfile: Path | None = None  # shown as the worktree's `.git` (its private git directory's)
    private_gitdir: Path | None = None


def agent(r: Rules, a: Attempt) -> Confined:
    """An attempt's agent (or script): it writes its checkout, its private git directory, its
    attempt's signal folder, its task's notes file and questions folder, and what `r` adds;
    what it discovers goes to a folder of its own, shown where its plan's discovered items
    are (Hive files them, `found`: it cannot touch the others'). Everything else read-only,
    `r.hide` hidden, /tmp private, with what it must run (Hive, Python, the CLI, the
    repository) bound back."""
    return confine(r, attempt_box(a))


def attempt_box(a: Attempt) -> Box:
    """Where an attempt's sandbox stands (its folders made, so that they can be bound)."""
    p = a.paths
    signals = p.signal_dir(a.plan, a.task_id, a.attempt)
    questions = p.questions_dir(a.plan, a.task_id)
    found = p.found_dir(a.plan, a.task_id, a.attempt)
    for folder in (signals, questions, found, p.discovered_dir(a.plan)):
        folder.mkdir(parents=True, exist_ok=True)
    notes = p.notes_file(a.plan, a.task_id)
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.touch()
    own: tuple[Path, ...] = (a.worktree, signals, questions, notes)
    own += (a.private_gitdir,) if a.private_gitdir is not None else ()
    files = ((a.gitfile, a.worktree / ".git"),) if a.gitfile is not None else ()
    moved = ((found, p.discovered_dir(a.plan)),)
    return Box(p.root, a.argv, own, str(signals), p.refused_file(a.plan, a.task_id), files, moved)


def check(config: Config, paths: Paths, key: tuple[str, str], worktree: Path) -> Confined:
    """A Verify, test_command or `[worktrees] teardown` of task `key` (plan, id) in `worktree`,
    when this machine sandboxes: it runs code the agent may have written, so it writes only
    that checkout, `[sandbox] writable` and a private /tmp, sees what an agent sees, and
    reaches only `[sandbox] allow`."""
    if not sandboxed(config):
        return UNCONFINED
    box = Box(paths.root, ("bash",), (worktree,), f"check {worktree}", paths.refused_file(*key))
    return confine(rules(config), box)


def withheld(environ: Mapping[str, str], keep: Iterable[str]) -> tuple[str, ...]:
    """The variables of `environ` a sandboxed program does not get: those that look like
    credentials (SECRETS), unless `keep` (names or patterns) lets them through."""
    secret, kept = _patterns(SECRETS), _patterns(tuple(keep))
    return tuple(sorted(k for k in environ if secret.match(k.upper()) and not kept.match(k.upper())))


@functools.cache
def _patterns(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One expression for shell-style `patterns` (of upper-case names), made once: every
    attempt asks it of each variable of the environment."""
    return re.compile("|".join(fnmatch.translate(p.upper()) for p in patterns) or "(?!)")


def _readable(root: Path, argv: tuple[str, ...]) -> tuple[Path, ...]:
    """What it runs from that lies in /tmp, to bind back read-only into its own /tmp."""
    return _outermost(path for path in (*_installed(Path.home(), os.environ.get("PATH", "")), *_named(root, argv)))


@functools.cache
def _installed(home: Path, path: str) -> tuple[Path, ...]:
    """What every agent runs from, wherever it is installed, of it under /tmp: the home of its
    CLI, Python and Hive, every PATH entry. The same for every attempt of a run, so found once
    (a few hundred realpath calls otherwise on each attempt's way)."""
    found = [home, Path(sys.prefix), Path(sys.base_prefix), Path(hive.__file__).resolve().parent.parent]
    found.append(Path(os.path.realpath(sys.executable)).parent.parent)
    for entry in path.split(os.pathsep):
        if entry:
            found += [Path(entry), Path(os.path.realpath(entry)).parent]
    return tuple(p for p in found if _under_tmp(p))


def _named(root: Path, argv: tuple[str, ...]) -> Iterable[Path]:
    """What this one runs from, of it under /tmp: the repository (its `.hive/bin/hive`, main's
    objects), its program with its interpreter, and the files its command line names (a
    script, the brief)."""
    named = [root]
    program = shutil.which(argv[0], path=os.environ.get("PATH")) if argv else None
    if program:
        named += program_home(program)
        interpreter = shebang(program)
        if interpreter:
            named += program_home(interpreter)
    named += [Path(arg).parent for arg in argv[1:] if arg.startswith("/") and os.path.exists(arg)]
    return [p for p in named if _under_tmp(p)]


def program_home(program: str) -> list[Path]:
    """What a program needs beside it: its folder, and the prefix it is installed in
    (`…/bin/claude` → `…`), but never all of /tmp (`/tmp/tools/agent.sh` → `/tmp/tools`:
    its program bound back, issue 43)."""
    real = Path(os.path.realpath(program))
    return [p for p in (real.parent, real.parent.parent) if p != TMP and p != Path("/")]


def shebang(program: str) -> str:
    """The interpreter a script's `#!` line names (`#!/usr/bin/env X` names env; X is found
    by PATH, which is bound already); "" for a binary or an unreadable file."""
    try:
        with open(program, "rb") as f:
            first = f.read(256).split(b"\n", 1)[0]
    except OSError:
        return ""
    if not first.startswith(b"#!"):
        return ""
    words = first[2:].decode(errors="replace").split()
    return words[0] if words and words[0].startswith("/") else ""


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
