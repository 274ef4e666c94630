"""The `hive` command: parse the arguments, hand them to the verb's module in
`hive/cli/` (`run(args)`), and be the one error edge. Only what doit has no verb for."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from hive import crashsafe
from hive.buglog import at_the_edge
from hive.errors import HiveError

AGENT_VERBS = frozenset({"done", "blocked", "too-big", "note", "discover", "changes", "ask"})
EXIT_USER_ERROR = 3
EXIT_INTERNAL = 4
_TRUE = ("1", "yes", "true", "on")  # what doit takes as true in DOIT_SEEK_FILE


def main(argv: list[str] | None = None) -> int:
    with _safe_output():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)  # `--version` and `--help` print (and exit) here
    except BrokenPipeError:  # `hive --version | head -1`
        return _reader_gone()
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    crashsafe.install()
    try:
        code = _verb(args.func)(args) or 0
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # `hive status --json | head`
        return _reader_gone()
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


@contextlib.contextmanager
def _safe_output() -> Iterator[None]:
    """Everything a verb prints passes through one sanitiser (hive.output.safe): text an agent
    wrote cannot drive the user's terminal (issue 44). `hive logs --raw` writes the bytes as
    logged to the buffer beneath, as asked."""
    from hive.output import SafeStream

    before = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeStream.over(sys.stdout), SafeStream.over(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = before


def _reader_gone() -> int:
    """The reader of our output closed it (it has what it wanted): leave quietly, and never
    write to the closed pipe again (Python's last flush would print a traceback)."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def doit_hint(root: Path) -> list[str]:
    """`doit` looks for dodo.py only in the current directory, and reads its own
    settings (doit.cfg, pyproject.toml) only from there too, so Hive cannot make a
    plain `doit` work from a subdirectory; a verb that ends with "run `doit`" says
    what works there instead."""
    here = Path.cwd().resolve()
    if here == root or (here / "dodo.py").exists() or os.environ.get("DOIT_SEEK_FILE", "").lower() in _TRUE:
        return []
    return [
        "you are in a subdirectory: run `doit -k` (plain `doit` looks for dodo.py only in the current "
        "directory; `export DOIT_SEEK_FILE=1` makes it look in the parents too)"
    ]


def _debug_log() -> Path:
    """Where a bug's traceback goes: the repo's `.hive/hive.log` (an agent's command
    names its repo in HIVE_ROOT), else the current directory's."""
    from hive.store.paths import Paths, find_root

    try:
        root = Path(os.environ["HIVE_ROOT"]) if os.environ.get("HIVE_ROOT") else find_root()
    except HiveError:
        root = Path.cwd()
    return Paths(root).debug_log


def _verb(where: str) -> Callable[[argparse.Namespace], int]:
    """`module:function` in hive.cli, imported only when that verb runs: `hive done`,
    which every agent calls, loads nothing else."""
    module, _, function = where.partition(":")
    verb: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(f"hive.cli.{module}"), function)
    return verb


class _Version(argparse.Action):
    """`hive --version`: asks git and tmux for theirs only when it is given."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        from hive import about

        print(about.report())
        parser.exit()


class _Grouped(argparse.HelpFormatter):
    """`hive --help` lists the verbs people use first, then, under their own heading, those
    agents run (issue 43: the agents' came first)."""

    _agents_said = False

    def _format_action(self, action: argparse.Action) -> str:
        text = super()._format_action(action)
        if action.dest in AGENT_VERBS and not self._agents_said:
            self._agents_said = True
            return f"\n{' ' * self._current_indent}run by agents (their brief says when):\n{text}"
        return text


def _agent_verbs(add: Callable[[str, str, str], argparse.ArgumentParser]) -> None:
    """The commands agents run (their brief lists them): AGENT_VERBS."""
    from hive.lifecycle import OUTCOMES, SIGNALS

    for verb, kind in SIGNALS.items():
        rule = OUTCOMES[kind]
        s = add(verb, "agent:signal", f"(agents) signal that {rule.help}")
        s.add_argument("--reason", "-r", required=rule.reason_required, help="one line for the human")
    n = add("note", "agent:note", "(agents) record progress for the next attempt and the report")
    n.add_argument("text", nargs="+", help="what this attempt did and what is next")
    dv = add("discover", "agent:discover", "(agents) file work found on the way, for a human to approve into the plan")
    dv.add_argument("title", help="the new task's title")
    dv.add_argument("--details", "-d", help="what and why")
    ch = add(
        "changes",
        "changes:run",
        "(reviewers, or you with a task) the change must change: its author tries again, told why",
    )
    ch.add_argument("task", nargs="?", help="<plan>:<ID> of a task awaiting review (a reviewer agent names none)")
    ch.add_argument("--reason", "-r", required=True, help="what must change (several lines are fine)")
    ak = add("ask", "agent:ask", "(agents) ask your human a question and wait for the answer (printed on stdout)")
    ak.add_argument("question", help="the question, in one line")
    ak.add_argument("--options", "-o", help="the answers to choose from, comma-separated (e.g. Postgres,SQLite)")
    ak.add_argument("--details", "-d", help="what the human needs to know to answer")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="hive",
        description="Run a markdown plan of coding tasks with LLM agents. "
        "`doit` runs the plan; `hive` does what doit has no verb for.",
        formatter_class=_Grouped,
    )
    p.add_argument(
        "--version",
        action=_Version,
        help="print the versions of Hive, doit, git, tmux and Python (what a bug report needs) and exit",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, func: str, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(func=func)
        return sp

    add("init", "init:run", "set up this git repo for Hive (dodo.py, plans/, .hive/config.toml)")
    d = add("demo", "demo:run", "run the example plan end to end in a scratch git repo (no LLM needed)")
    d.add_argument("--dir", help="directory for the scratch repo (default: a new temp dir)")
    d.add_argument("-n", "--workers", type=int, default=1, metavar="N", help="run with doit -n N")
    from hive.lifecycle import RETRYABLE

    s = add("status", "status:run", "every task's state and why")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    lg = add("logs", "logs:run", "show a task's agent output")
    lg.add_argument("task", help="<plan>:<ID>")
    lg.add_argument("-f", "--follow", action="store_true", help="keep printing new output until the task stops running")
    lg.add_argument(
        "-n", "--lines", type=int, default=80, metavar="N", help="how many of the last lines to show (default: 80)"
    )
    lg.add_argument("--raw", action="store_true", help="the bytes as logged, terminal escapes and all")
    tl = add("timeline", "timeline:run", "each attempt on its worker, phase by phase (agent, queue, check, merge)")
    tl.add_argument(
        "--trace", metavar="FILE", help="write it as Chrome Trace Event JSON instead (chrome://tracing, Perfetto)"
    )
    a = add("attach", "attach:run", "attach to a running agent's tmux session")
    a.add_argument("task", help="<plan>:<ID> of a running task")
    r = add("retry", "retry:run", f"re-open a {', '.join(RETRYABLE[:-1])} or {RETRYABLE[-1]} task")
    r.add_argument("task", nargs="+", help="<plan>:<ID> (several: each is re-opened)")
    r.add_argument("--force", action="store_true", help="also re-open a done task")
    an = add("answer", "answer:run", "answer the question a task's agent asked (`hive ask`)")
    an.add_argument("task", help="<plan>:<ID> of the task that asked")
    an.add_argument("text", nargs="*", help="the answer")
    an.add_argument("--choice", metavar="OPTION", help="one of the question's options")
    pl = add(
        "plan",
        "plan:run",
        "plan with an interactive agent; it writes plans/<goal>.md as a draft, or (--split) splits a too_big task",
    )
    pl.add_argument("goal", nargs="*", help="what the plan is for, in a few words (it names the plan file)")
    pl.add_argument(
        "--split",
        metavar="PLAN:ID",
        help="instead of a goal: a too_big task, which the agent replaces in its plan by smaller tasks ID.1, ID.2, ...",
    )
    pl.add_argument(
        "--from-issues",
        metavar="QUERY",
        help='instead of a goal: a draft plan from the forge\'s issues, one task per issue ("label:hive state:open", '
        'or numbers "12 14"); run again to update it',
    )
    cl = add("cleanup", "cleanup:run", "remove worktrees, branches and sessions that finished tasks left behind")
    cl.add_argument(
        "--force",
        action="store_true",
        help="also remove unmerged leftovers (too_big worktrees, worktrees no task uses)",
    )
    st = add("stop", "stop:run", "stop running agents in stages (SIGINT, SIGTERM, SIGKILL)")
    st.add_argument("task", nargs="?", help="<plan>:<ID> (default: every running agent)")
    w = add(
        "web", "web:run", "serve the dashboard: what needs you, the DAG, the timeline, the cost; answer from a browser"
    )
    w.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1; not loopback: needs a token)"
    )
    w.add_argument(
        "--port", type=int, default=8765, help="the port (default: 8765; 0: any free one; the URL printed says which)"
    )
    w.add_argument("--token", default="", help="ask every request for this token (default: [web] token, if set)")
    w.add_argument("--read-only", action="store_true", help="show, but take no action (no answers, approvals, stops)")
    add("doctor", "doctor:run", "check what approved plans need: agents, credentials, git, tmux").add_argument(
        "--json", action="store_true", help="machine-readable output"
    )
    ap = add("approve", "approve:run", "approve a plan file (validates it first) or answer a checkpoint")
    ap.add_argument("target", help="plans/<file>.md, or <plan>:<ID> of a checkpoint, gate or reviewed task")
    ap.add_argument("--choice", metavar="OPTION", help="a decision checkpoint's chosen option")
    ap.add_argument("--done", action="store_true", help="a human-action checkpoint's step is done")
    ap.add_argument("--reject", metavar="TEXT", help="what is wrong: re-opens the task before the checkpoint")
    ap.add_argument("--task", metavar="ID", help="with --reject, which task to re-open when the checkpoint has several")
    _agent_verbs(add)
    return p
