"""The local executor: each agent in its own tmux session on this machine (Hive's
own tmux server, so agents never mix with the user's sessions). The only code that
uses the tmux adapter; processes are found through /proc (`adapters.procfs`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from hive.adapters import proc, procfs, tmux
from hive.errors import HiveError
from hive.executors.base import AgentRef, Launch, Report, T
from hive.executors.tmux import PLUGIN
from hive.logcap import Chunk


class TmuxExecutor:
    kind = PLUGIN.kind
    capabilities = PLUGIN.capabilities

    # every executor is made with (options, root); tmux has no settings of its own
    def __init__(self, options: Mapping[str, object] | None = None, root: Path | None = None) -> None:  # noqa: ARG002
        self.root = (root or Path.cwd()).resolve()  # no settings of its own

    def environment(self) -> dict[str, str]:
        # `hive` commands an agent runs (stop, attach, status) reach the same server
        return {"HIVE_TMUX_SOCKET": tmux.socket()}

    def worktree_base(self, root: Path, configured: str) -> Path:
        return root / configured

    def start(self, launch: Launch) -> TmuxAgent:
        """The agent gets the environment of the process that asks for it (the user's
        `doit`), whatever the tmux server was started with."""
        env = proc.clean_env({**launch.env, **self.environment()}, drop=launch.unset)
        program = tmux.Program(launch.argv, env, launch.env_file, launch.beside, launch.confined)
        pid = tmux.new_session(
            launch.name,
            launch.cwd,
            program,
            launch.log,
            launch.exit_file,
            keep=not launch.close_on_exit,
            log_cap=launch.log_cap,
        )
        return TmuxAgent(replace(launch.agent, token=pid))

    def agent(self, ref: AgentRef) -> TmuxAgent:
        return TmuxAgent(ref)

    def locate(self, name: str) -> int | None:
        pane = tmux.pane(name) if name else None
        if pane is not None and not pane.dead and procfs.pid_alive(pane.pid):
            return pane.pid
        return None

    def names(self) -> list[str]:
        return tmux.sessions()

    def on_hosts(self, fn: Callable[[Path], T]) -> dict[str, T | HiveError]:
        return {"": fn(self.root)}

    def tidy(self) -> list[str]:
        return []  # sessions are closed one by one; the server ends with its last one

    def shutdown(self) -> None:
        tmux.kill_server()


@dataclass(frozen=True)
class TmuxAgent:
    """An agent in its tmux session on this machine: the session is named `ref.name`, its
    pane's process is `ref.token`."""

    ref: AgentRef

    def alive(self, thorough: bool = False) -> bool:
        if not procfs.pid_alive(self.ref.token):
            return False
        if not thorough:
            return True
        # tmux is the backstop where /proc cannot tell a zombie pane process
        pane = tmux.pane(self.ref.name)
        return pane is not None and not pane.dead

    def nap(self, seconds: float) -> None:
        time.sleep(seconds)

    def gone(self) -> str:
        return ""  # this machine does not go away under its agents

    def host(self) -> str:
        return ""

    def output(self, since: int = 0) -> Chunk | None:  # noqa: ARG002 — the protocol's
        return None  # the task's log here is the whole output

    def screen(self, lines: int) -> str:
        return tmux.capture(self.ref.name, lines)

    def stop(self, patience: float, finished: bool, report: Report) -> str:
        """An agent is more than its pane's process: one that traps SIGINT outlives the
        pane's shell with ppid 1, so its processes are found by the environment Hive
        gave the attempt, and "stopped" means none of them is left."""
        ref = self.ref
        mark = procfs.AgentMark(ref.root, ref.task, ref.attempt, ref.token)
        survivors = procfs.stop_in_stages(mark, procfs.stages(patience, finished), report, quiet_first=finished)
        tmux.kill_session(ref.name)
        if not survivors:
            return ""
        listed = ",".join(map(str, sorted(survivors)))
        return (
            f"processes {sorted(survivors)} of its agent survived SIGKILL; look at them with "
            f"`ps -o pid,stat,args -p {listed}`"
        )

    def close(self) -> None:
        tmux.kill_session(self.ref.name)

    def attach_argv(self) -> list[str]:
        return tmux.attach_argv(self.ref.name)

    def attach(self, replace_process: bool = False, hint: str = "") -> int:
        return tmux.attach(self.ref.name, replace_process, hint)
