"""`hive plan "goal"`: an interactive planning agent in tmux (attached to the
user's terminal when there is one) that writes `plans/<slug>.md` as a draft,
which Hive then validates."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from hive.adapters.proc import SCRUBBED_ENV
from hive.agent_clis.profile import stall_match
from hive.engine.supervise import SYSTEM_CLOCK, exit_status
from hive.errors import HiveError
from hive.executors import LOCAL, Agent, AgentRef, Launch, executor
from hive.output import shown_line
from hive.plan.graph import load_plan
from hive.project import load_repo_config
from hive.render import render
from hive.settings.config import Config
from hive.store import names
from hive.store.agent_signals import ensure_shim
from hive.store.files import atomic_write
from hive.store.paths import Paths, find_root

_STATUS_APPROVED = re.compile(r"^(status\s*:\s*)approved\s*$", re.MULTILINE)


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


def start(root: Path, goal: str, config: Config) -> PlanningSession:
    paths = Paths(root)
    slug = names.slug(goal, 40).lower()
    plan_file, n = paths.plans / f"{slug}.md", 2
    while plan_file.exists():
        plan_file, n = paths.plans / f"{slug}-{n}.md", n + 1
    slug = plan_file.stem
    brief = paths.planning_file(slug, "brief")
    existing = sorted(str(p.relative_to(root)) for p in paths.plans.glob("*.md"))
    atomic_write(
        brief,
        render(
            "planning.md.j2", goal=goal, root=root, slug=slug, existing=existing, plan_file=plan_file.relative_to(root)
        ),
    )
    prompt = f'Read {brief} and follow it: plan "{goal}" with me and write {plan_file.relative_to(root)}.'
    return launch(root, slug, plan_file, prompt, config)


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
            unset=SCRUBBED_ENV,
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
            print("hive: you are back here when it exits (C-b d leaves it running in the background)", flush=True)
            planner.attach()
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


def check(root: Path, s: PlanningSession, config: Config) -> list[str]:
    """What the agent wrote, validated; returns lines for the user, or raises HiveError
    when planning gave no valid plan (the agent died, wrote nothing or an invalid plan)."""
    rel = s.plan_file.relative_to(root)
    running = s.running()
    if not running:
        s.agent().close()
    if not s.plan_file.exists():
        if running:
            return [
                f"the planning agent is still running (`{' '.join(s.agent().attach_argv())}` "
                f"to go back to it); when it has written {rel}, review it and `hive approve {rel}`"
            ]
        raise HiveError(f"the planning agent {ended(root, s)} without writing {rel}", *last_words(root, s))
    text = s.plan_file.read_bytes().decode("utf-8")
    lines = []
    if _STATUS_APPROVED.search(text):
        atomic_write(s.plan_file, _STATUS_APPROVED.sub(lambda m: f"{m.group(1)}draft", text, count=1))
        lines.append(f"{rel} said `status: approved`; set it back to draft — only you approve plans")
    plan, _, problems = load_plan(s.plan_file, config)
    if problems:
        raise HiveError(
            *lines,
            *problems,
            f"{rel} is not a valid plan; fix the problems above (or ask the agent to), then `hive approve {rel}`",
        )
    lines += [f"warning: {w}" for w in plan.warnings]
    return lines + [f"{rel}: a valid draft with {len(plan.tasks)} tasks. Review it, then `hive approve {rel}`."]


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


def run(args: argparse.Namespace) -> int:
    if bool(args.goal) == bool(args.split):
        raise HiveError(
            'hive plan needs a goal or --split, not both: `hive plan "Add OAuth login"` writes a new plan; '
            "`hive plan --split auth:3` splits a task an agent said is too big"
        )
    if args.split:
        from hive.cli import split

        return split.run(args)
    root = find_root()
    config = load_repo_config(root)
    session = start(root, " ".join(args.goal), config)
    print(
        f"hive: planning agent ({config.planner}) started in tmux session {session.session}; "
        f"it will write {session.plan_file.relative_to(root)}",
        flush=True,
    )
    interact(session)
    for line in check(root, session, config):
        print(f"hive: {line}")
    return 0
