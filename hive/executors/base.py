"""The executor seam: where and how an attempt's agent process runs.

The engine decides *what* runs (argv, environment, worktree, brief) and *when* it
is finished (signals, deadlines); an executor only starts it, says whether it is
still there, shows its screen, stops it and tells a human how to watch it. Shaped
after tox 4's `execute/api.py`: one protocol, one module per implementation, a
registry keyed by `[executor] kind`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from hive.errors import HiveError
from hive.logcap import DEFAULT_CAP, Chunk
from hive.settings.schema import Key
from hive.store.state import TaskState

if TYPE_CHECKING:
    from hive.sandbox.policy import Rules

T = TypeVar("T")

Report = Callable[[str], None]


LOCAL_POLL = 0.025  # an agent on this machine is looked at this often: a signal is seen within it


@dataclass(frozen=True)
class Capabilities:
    """What the engine, the loader and `hive doctor` need to know of an executor, as data
    (snakemake's executor `CommonSettings`): they read this record, never the executor's kind."""

    # Agents run on other hosts, each in a checkout rebuilt there from `Launch.checkout`
    # ([worktrees] setup runs there; the attempt's clocks start once a host takes it);
    # else in the worktree Hive made here.
    remote_checkout: bool = False
    # Its client library cannot live through a fork: doit's workers run as threads.
    threads_only: bool = False
    # tmux on this machine runs the agents (`hive doctor` checks it here).
    local_tmux: bool = False
    # Seconds between two looks at a running attempt.
    poll: float = LOCAL_POLL
    # Between two looks the engine waits in `Executor.nap`, which the host's news cut short,
    # rather than on its own clock.
    naps: bool = False


@dataclass(frozen=True)
class Plugin:
    """One executor as the registry (`hive.executors.EXECUTORS`) knows it, without loading it."""

    kind: str  # `[executor] kind`
    factory: str  # "module:Class", imported only when chosen (a remote executor's client is an extra)
    capabilities: Capabilities
    keys: tuple[Key, ...] = ()  # its own `[executor]` settings besides `kind`
    about: str = ""  # one line for the configuration reference


@dataclass(frozen=True)
class Checkout:
    """What a host without the controller's filesystem needs to rebuild the attempt's
    worktree (a local executor runs the agent in `Launch.cwd` itself and ignores it)."""

    root: Path  # the controller's repository
    branch: str  # the attempt's branch, made at its start point in `root`
    files: tuple[str, ...] = ()  # what Hive placed in the worktree (brief, copied files), relative to it
    hidden: tuple[str, ...] = ()  # those the project tracks: hidden from git (skip-worktree)
    excludes: tuple[str, ...] = ()  # never committed there
    setup: str = ""  # [worktrees] setup, run there before the agent
    setup_timeout: float = 3600.0


@dataclass(frozen=True)
class AgentRef:
    """What the state store keeps about a started agent: enough for any executor
    to find it again, from this run or the next."""

    root: str
    task: str
    attempt: int
    name: str
    token: int = 0  # the executor's own handle (tmux: the pane's process)

    @classmethod
    def of(cls, root: Path, st: TaskState) -> AgentRef:
        return cls(str(root), st.key, st.attempt, st.session, st.agent_token)

    @classmethod
    def named(cls, root: Path, name: str) -> AgentRef:
        """An agent known by its name alone: a leftover no task records, or the planner."""
        return cls(str(root), "", 0, name)


@dataclass(frozen=True)
class Launch:
    """One agent process to start."""

    agent: AgentRef  # who it is (its token is the executor's to give)
    argv: list[str]
    env: dict[str, str]  # Hive's variables for the agent, on top of the environment `doit` runs in
    cwd: Path  # the attempt's worktree
    log: Path  # every byte of its output is appended here
    exit_file: Path  # its exit status is written here as it ends
    env_file: Path  # where the executor may put the environment on its way to the agent (0600, removed at start)
    brief: Path | None = None  # the context file it reads (an executor on another host ships it)
    unset: tuple[str, ...] = ()  # variables of ours the agent must not inherit
    # A human's terminal is on it (`hive plan`): it ends with the agent, so the terminal
    # comes back by itself; otherwise it is kept after the agent ends, for its last words.
    close_on_exit: bool = False
    checkout: Checkout | None = None
    # With `remote_checkout`: what the sandbox its host makes allows (hive.sandbox.policy), or
    # None for none. (A local executor's argv is already the sandbox's command line.)
    sandbox: Rules | None = None
    # What to start beside it (its sandbox's proxy): hive.adapters.envexec.beside
    beside: tuple[str, ...] = ()
    # argv is bubblewrap's command line (its sandbox's), which can take the environment itself
    confined: bool = False
    # Its log keeps the first and the last this many bytes of its output ([logs] max_mb)
    log_cap: int = DEFAULT_CAP

    @property
    def name(self) -> str:
        """Unique per attempt; also what `hive attach` targets."""
        return self.agent.name


class Agent(Protocol):
    """One attempt's agent as its executor holds it: what `Executor.start` returns, and what
    `Executor.agent` finds again from the AgentRef the state store kept (this run's or an
    earlier run's). Everything the engine and the `hive` verbs do with a running agent."""

    ref: AgentRef

    def alive(self, thorough: bool = False) -> bool:
        """Cheap enough to ask every poll; `thorough` also asks the executor's service."""
        ...

    def nap(self, seconds: float) -> None:
        """Wait `seconds` between two looks at a remote agent, or less if its host reports
        news meanwhile (the engine's clock sleeps for a local one)."""
        ...

    def gone(self) -> str:
        """Why an agent that is no longer alive ended without a word from it: the host it
        ran on, or the executor's hold on it, went away ("" if it simply ended)."""
        ...

    def host(self) -> str:
        """Where the agent runs, for humans ("" for this machine)."""
        ...

    def output(self, since: int = 0) -> Chunk | None:
        """The attempt's output from byte `since` on (its log's logical offset there: a log
        whose middle was cut starts again at its marker), as the host running it holds it now
        (None when the task's log on this machine is that output)."""
        ...

    def screen(self, lines: int) -> str:
        """What the agent's terminal shows now (empty if nothing is left of it)."""
        ...

    def stop(self, patience: float, finished: bool, report: Report) -> str:
        """Stop every process of the agent in stages (`finished`: it ended by itself, so
        hang up on it; else interrupt it first so it may save its work), then close it.
        Returns "" when nothing of it is left, else what survived and how to look at it."""
        ...

    def close(self) -> None:
        """Close what an ended agent left (a terminal kept for its last words)."""
        ...

    def attach_argv(self) -> list[str]:
        """The command a human runs to watch the agent."""
        ...

    def attach(self, replace_process: bool = False, hint: str = "") -> int:
        """Put the user's terminal on the agent; `hint`: a line shown with it the whole time."""
        ...


class Executor(Protocol):
    """Where agents run. Per agent, everything goes through the `Agent` it hands out."""

    kind: str
    capabilities: Capabilities

    def environment(self) -> dict[str, str]:
        """Variables an agent needs to reach this executor (added to every Launch)."""
        ...

    def worktree_base(self, root: Path, configured: str) -> Path:
        """Where attempts' worktrees live."""
        ...

    def start(self, launch: Launch) -> Agent:
        """Start the agent; its `ref.token` is what the state store records."""
        ...

    def agent(self, ref: AgentRef) -> Agent:
        """The agent `ref` names, whether or not anything of it still runs."""
        ...

    def locate(self, name: str) -> int | None:
        """The token of the live agent called `name`, or None if nothing of it runs."""
        ...

    def names(self) -> list[str]:
        """Every agent this executor holds, running or kept (leftover detection)."""
        ...

    def on_hosts(self, fn: Callable[[Path], T]) -> dict[str, T | HiveError]:
        """`fn(folder the agents work below there)`'s answer on every host that runs agents
        ("" for this machine), or why that host could not answer: what `hive doctor` checks
        where the agents will run."""
        ...

    def tidy(self) -> list[str]:
        """End what the executor keeps for this project between runs, once none of its agents
        runs (`hive cleanup`); a line for each thing ended."""
        ...

    def shutdown(self) -> None:
        """End the executor's own service (the demo's private tmux server)."""
        ...
