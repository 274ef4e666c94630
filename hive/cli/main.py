"""The `hive` command: thin wrappers that parse arguments, call one core
function, print, and return an exit code. Only what doit has no verb for."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from hive import crashsafe
from hive.errors import HiveError, at_the_edge

EXIT_USER_ERROR = 3
EXIT_INTERNAL = 4


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    crashsafe.install()
    try:
        code = args.func(args) or 0
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # `hive status --json | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return crashsafe.exit_code(crashsafe.stopped_by())
    except Exception as e:  # noqa: BLE001 — the one error edge: user errors plainly, bugs to the log
        failure = at_the_edge(e, _debug_log(), f"hive {' '.join(sys.argv[1:])}")
        if failure.bug:
            print(f"hive: {failure.message}", file=sys.stderr)
            return EXIT_INTERNAL
        for line in failure.message.splitlines():
            print(f"hive: error: {line}", file=sys.stderr)
        return EXIT_USER_ERROR


def _root() -> Path:
    from hive.store.paths import find_root

    return find_root()


def _debug_log() -> Path:
    """Where a bug's traceback goes: the repo's `.hive/hive.log` (an agent's command
    names its repo in HIVE_ROOT), else the current directory's."""
    from hive.store.paths import Paths, find_root

    try:
        root = Path(os.environ["HIVE_ROOT"]) if os.environ.get("HIVE_ROOT") else find_root()
    except HiveError:
        root = Path.cwd()
    return Paths(root).debug_log


# -- commands --------------------------------------------------------------
def cmd_init(args: argparse.Namespace) -> int:
    from hive.cli.init import init

    root, done = init(Path.cwd())
    for line in done or ["already set up; nothing to do"]:
        print(f"hive: {line}")
    print(f"hive: ready in {root}: write a plan in plans/, `hive approve plans/<file>.md`, then `doit`")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from hive.cli.demo import run_demo

    return run_demo(Path(args.dir).resolve() if args.dir else None, args.workers)


def cmd_signal(args: argparse.Namespace) -> int:
    from hive.lifecycle import SIGNALS
    from hive.store import agent_signals

    who = agent_signals.AgentIdentity.from_env()
    if agent_signals.send(who, SIGNALS[args.command], args.reason or ""):
        print(f"hive: {who.key} signalled {args.command}; Hive takes it from here — stop now.")
    else:
        print(f"hive: {who.key} attempt {who.attempt} had already signalled; this one is ignored.")
    return 0


def cmd_note(args: argparse.Namespace) -> int:
    from hive.store import agent_signals

    who = agent_signals.AgentIdentity.from_env()
    agent_signals.add_note(who, " ".join(args.text))
    print(f"hive: note recorded for {who.key}")
    return 0


def cmd_discover(args: argparse.Namespace) -> int:
    from hive.plan import discovered
    from hive.store import agent_signals

    key = discovered.file_item(agent_signals.AgentIdentity.from_env(), args.title, args.details or "")
    print(f"hive: recorded {key} for a human to review; it does not run unless they approve it. Go on with your task.")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from hive.reports import status

    root = _root()
    rows = status.collect(root)
    found = status.discovered_items(root)
    if args.json:
        print(
            json.dumps(
                {"counts": status.counts(rows), "tasks": [r.to_json() for r in rows], "discovered": found}, indent=2
            )
        )
    else:
        print(status.render(rows) if rows else "no plans yet: write one in plans/ (see README)")
        if found:
            print(status.render_discovered(found))
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    from hive.store.names import parse_key
    from hive.store.paths import Paths

    plan, task_id = parse_key(args.task)
    log = Paths(_root()).log_file(plan, task_id)
    if not log.exists():
        raise HiveError(f"no log for {args.task} yet (it has not started)")
    argv = ["tail", "-n", str(args.lines), *(["-F"] if args.follow else []), str(log)]
    os.execvp(argv[0], argv)
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    from hive.executors import executor
    from hive.settings.config import load_repo_config
    from hive.store.names import parse_key
    from hive.store.paths import Paths
    from hive.store.state import StateStore

    plan, task_id = parse_key(args.task)
    root = _root()
    st = StateStore(Paths(root)).read(plan, task_id)
    agents = executor(load_repo_config(root).executor)
    if st.state != "in_progress" or st.session not in agents.names():
        raise HiveError(f"{args.task} has no running agent (it is {st.state}); see `hive logs {args.task}`")
    return agents.attach(st.session, replace_process=True)


def cmd_retry(args: argparse.Namespace) -> int:
    from hive.cli.retry import retry

    print(f"hive: {retry(_root(), args.task, force=args.force)}")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from hive.cli.stop import stop

    count = stop(_root(), args.task, lambda line: print(f"hive: {line}", flush=True))
    if not count:
        print("hive: no agent is running")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from hive.cli import plan
    from hive.settings.config import load_repo_config

    root = _root()
    config = load_repo_config(root)
    session = plan.start(root, " ".join(args.goal), config)
    print(
        f"hive: planning agent ({config.planner}) started in tmux session {session.session}; "
        f"it will write {session.plan_file.relative_to(root)}",
        flush=True,
    )
    plan.interact(session)
    for line in plan.check(root, session, config):
        print(f"hive: {line}")
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from hive.cli.cleanup import cleanup

    for line in cleanup(_root(), force=args.force) or ["nothing to clean up"]:
        print(f"hive: {line}")
    return 0


def cmd_approve(args: argparse.Namespace) -> int:
    from hive.cli.approve import approve_plan, approve_task
    from hive.settings.config import load_repo_config

    root = _root()
    if args.target.endswith(".md") or Path(args.target).is_file():
        if args.choice or args.done or args.reject is not None or args.task:
            raise HiveError("--choice, --done, --reject and --task answer a checkpoint (plan:ID), not a plan file")
        print(f"hive: {approve_plan(Path(args.target).resolve(), load_repo_config(root))}")
    else:
        print(f"hive: {approve_task(root, args.target, args.choice, args.done, args.reject, args.task)}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hive",
        description="Run a markdown plan of coding tasks with LLM agents. "
        "`doit` runs the plan; `hive` does what doit has no verb for.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, func, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(func=func)
        return sp

    add("init", cmd_init, "set up this git repo for Hive (dodo.py, plans/, .hive/config.toml)")
    d = add("demo", cmd_demo, "run the example plan end to end in a scratch git repo (no LLM needed)")
    d.add_argument("--dir", help="directory for the scratch repo (default: a new temp dir)")
    d.add_argument("-n", "--workers", type=int, default=1, help="run with doit -n N")
    from hive.lifecycle import OUTCOMES, SIGNALS

    for verb, kind in SIGNALS.items():
        rule = OUTCOMES[kind]
        s = add(verb, cmd_signal, f"(agents) signal that {rule.help}")
        s.add_argument("--reason", "-r", required=rule.reason_required, help="one line for the human")
    n = add("note", cmd_note, "(agents) record progress for the next attempt and the report")
    n.add_argument("text", nargs="+")
    dv = add("discover", cmd_discover, "(agents) file work found on the way, for a human to approve into the plan")
    dv.add_argument("title")
    dv.add_argument("--details", "-d", help="what and why")
    s = add("status", cmd_status, "every task's state and why")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    lg = add("logs", cmd_logs, "show a task's agent output")
    lg.add_argument("task")
    lg.add_argument("-f", "--follow", action="store_true")
    lg.add_argument("-n", "--lines", type=int, default=80)
    a = add("attach", cmd_attach, "attach to a running agent's tmux session")
    a.add_argument("task")
    r = add("retry", cmd_retry, "re-open a failed, blocked or too_big task")
    r.add_argument("task")
    r.add_argument("--force", action="store_true", help="also re-open a done task")
    pl = add("plan", cmd_plan, "plan with an interactive agent; it writes plans/<goal>.md as a draft")
    pl.add_argument("goal", nargs="+")
    cl = add("cleanup", cmd_cleanup, "remove worktrees, branches and sessions that finished tasks left behind")
    cl.add_argument(
        "--force",
        action="store_true",
        help="also remove unmerged leftovers (too_big worktrees, worktrees no task uses)",
    )
    st = add("stop", cmd_stop, "stop running agents in stages (SIGINT, SIGTERM, SIGKILL)")
    st.add_argument("task", nargs="?", help="<plan>:<ID> (default: every running agent)")
    ap = add("approve", cmd_approve, "approve a plan file (validates it first) or answer a checkpoint")
    ap.add_argument("target", help="plans/<file>.md, or <plan>:<ID> of a checkpoint, gate or reviewed task")
    ap.add_argument("--choice", help="a decision checkpoint's chosen option")
    ap.add_argument("--done", action="store_true", help="a human-action checkpoint's step is done")
    ap.add_argument("--reject", metavar="TEXT", help="what is wrong: re-opens the task before the checkpoint")
    ap.add_argument("--task", help="with --reject, which task to re-open when the checkpoint has several")
    return p
