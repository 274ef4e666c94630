"""The planning agent's session, as `hive plan` and `hive plan --split` start it: the
config's planner profile in tmux on this machine (the LOCAL executor: it talks with the
human at this terminal, whatever runs the tasks), attached to the user's terminal when
there is one; and what to say when it ended without writing its file."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from hive.adapters.proc import AGENT_SCRUBBED
from hive.agent_clis.profile import stall_match
from hive.engine.supervise import SYSTEM_CLOCK, exit_status
from hive.errors import HiveError
from hive.executors import LOCAL, Agent, AgentRef, Launch, executor
from hive.output import shown_line
from hive.settings.config import Config
from hive.store.agent_signals import ensure_shim
from hive.store.paths import Paths


@dataclass(frozen=True)
class PlanningSession:
    root: Path
    slug: str
    plan_file: Path
    session: str
    brief: Path
    executor: str
    stall_patterns: tuple[str, ...] = ()

    def running(self) -> bool:
        return executor(self.executor).locate(self.session) is not None

    def agent(self) -> Agent:
        return executor(self.executor).agent(AgentRef.named(self.root, self.session))


def launch(root: Path, slug: str, target: Path, prompt: str, config: Config) -> PlanningSession:
    """Start the planner profile on the brief already written for `slug`, to write `target`."""
    paths = Paths(root)
    brief = paths.planning_file(slug, "brief")
    profile = config.agents[config.planner]
    session = f"hive-plan-{slug}"
    env = {
        "HIVE_ROOT": str(root),
        "PATH": f"{ensure_shim(paths)}{os.pathsep}{os.environ.get('PATH', '')}",
        **dict(profile.env),
    }
    # the planner talks with the human at this terminal: always here, whatever runs the tasks
    executor(LOCAL).start(
        Launch(
            AgentRef.named(root, session),
            profile.argv(prompt, str(brief)),
            env,
            root,
            paths.planning_file(slug, "log"),
            paths.planning_file(slug, "exit"),
            paths.planning_file(slug, "env"),
            brief,
            unset=AGENT_SCRUBBED,
            close_on_exit=True,
        )
    )
    return PlanningSession(root, slug, target, session, brief, LOCAL, profile.stall_patterns)


def interact(s: PlanningSession) -> None:
    """Attach the user's terminal to the planning agent, or wait for it to finish.
    The session ends with the agent (`close_on_exit`), so an attached terminal comes
    back by itself. Without a terminal nobody can answer a first-run prompt: one on
    screen ends it."""
    planner = s.agent()
    if sys.stdin.isatty() and sys.stdout.isatty():
        if s.running():  # an agent that died at once left no session to attach to
            hint = "hive: you are back here when it exits (C-b d leaves it running in the background)"
            print(hint, flush=True)
            planner.attach(hint=hint)
        return
    while s.running():
        stall = stall_match(s.stall_patterns, planner.screen(50))
        if stall:
            planner.close()
            raise HiveError(
                f"the planning agent is waiting at a prompt ({stall!r}) and there is no terminal to answer it: "
                f"run `hive plan` in a terminal, or answer it once by running the agent by hand (`hive doctor` checks)"
            )
        time.sleep(0.2)


def ended(root: Path, s: PlanningSession) -> str:
    status = exit_status(Paths(root).planning_file(s.slug, "exit"), SYSTEM_CLOCK, patience=0.5)
    return "ended" if status is None else f"exited with status {status}"


def last_words(root: Path, s: PlanningSession, count: int = 5) -> list[str]:
    """The end of the agent's output (as its terminal showed it), and where the rest is."""
    log = Paths(root).planning_file(s.slug, "log")
    try:
        text = log.read_bytes()[-20000:].decode(errors="replace")
    except OSError:
        return []
    shown = [line for line in (shown_line(raw).rstrip() for raw in text.split("\n")) if line.strip()][-count:]
    return [*(f"  | {line}" for line in shown), f"its whole output: {log.relative_to(root)}"]
