"""doit's command line, read once the way Hive needs it: does it run tasks or only look at
them, which tasks or plans it names, how many workers (`-n N`) of which kind (`-P`). doit
gives a dodo file and its reporter no access to the options it parsed, so Hive reads argv;
the loader, the start-of-run checks and the reconcile all ask this one reading."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# doit's commands that run no task (`doit list` must keep working on a machine without
# the agents, e.g. to look at a run's state).
NOT_RUNNING = frozenset({"list", "info", "clean", "forget", "ignore", "dumpdb", "help", "tabcompletion", "reset-dep"})
_LOADER_OPTIONS = frozenset({"-f", "--file", "-d", "--dir"})  # may come before the command, with a value
_LOADER_FLAGS = frozenset({"-k", "--seek-file"})
# the options of `doit run` (doit 0.37) that take a value as the next word
_VALUED = frozenset(
    {"-v", "--verbosity", "-r", "--reporter", "-o", "--output-file", "--failure-verbosity"}
    | {"--db-file", "--backend", "--check_file_uptodate"}
)
_PROCESSES = re.compile(r"(?:-n|--process)=?(\d*)")
_PARALLEL = re.compile(r"(?:-P|--parallel-type)=?(\w*)")


@dataclass(frozen=True)
class DoitArgs:
    command: str  # "run" when the line names no doit command (`doit`, `doit -n 2`, `doit auth:3`)
    names: tuple[str, ...] = ()  # the tasks and plans it names (`auth`, `auth:3`, patterns)
    processes: int = 0  # N of `-n N` (0: not asked)
    parallel_type: str = ""  # `-P process|thread` ("" when not given)

    @property
    def runs_tasks(self) -> bool:
        return self.command not in NOT_RUNNING


def parse(argv: Sequence[str]) -> DoitArgs:
    """`argv` as doit gets it, without the program name (sys.argv[1:])."""
    words = _without_loader_options(argv)
    command = "run"
    if words and not words[0].startswith("-") and ("=" not in words[0]) and (":" not in words[0]):
        if words[0] in NOT_RUNNING or words[0] in ("run", "strace", "auto"):
            command, words = words[0], words[1:]
    names: list[str] = []
    processes, parallel = 0, ""
    i = 0
    while i < len(words):
        word = words[i]
        value = words[i + 1] if i + 1 < len(words) else ""
        if m := _PROCESSES.fullmatch(word):
            processes = int(m.group(1) or (value if value.isdigit() else 0))
            i += 1 if m.group(1) or not value.isdigit() else 2
            continue
        if m := _PARALLEL.fullmatch(word):
            parallel = m.group(1) or value
            i += 1 if m.group(1) else 2
            continue
        if word in _VALUED:
            i += 2
            continue
        if not word.startswith("-") and "=" not in word:
            names.append(word)
        i += 1
    return DoitArgs(command, tuple(names), processes, parallel)


def _without_loader_options(argv: Sequence[str]) -> list[str]:
    """argv without the loader options and `name=value` variables doit takes first."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _LOADER_OPTIONS:
            skip = True
        elif not arg.startswith("-") and "=" in arg:
            continue
        elif not out and (arg in _LOADER_FLAGS or arg.startswith(("--file=", "--dir="))):
            continue
        else:
            out.append(arg)
    return out
