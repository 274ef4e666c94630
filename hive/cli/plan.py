"""`hive plan "goal"`: an interactive planning agent in tmux (attached to the
user's terminal when there is one) that writes `plans/<slug>.md` as a draft,
which Hive then validates. With `--split` instead of a goal, hive.cli.split."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from hive.cli.planner import PlanningSession, ended, interact, last_words, launch
from hive.errors import HiveError
from hive.plan.graph import load_plan
from hive.project import load_repo_config
from hive.render import render
from hive.settings.config import Config
from hive.store import names
from hive.store.files import atomic_write
from hive.store.paths import Paths, find_root

_STATUS_APPROVED = re.compile(r"^(status\s*:\s*)approved\s*$", re.MULTILINE)


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


def from_issues(root: Path, query_text: str, config: Config) -> list[str]:
    """`hive plan --from-issues QUERY`: the draft plans/issues-<name>.md, written or updated."""
    from hive import forges
    from hive.plan.from_issues import Query, draft
    from hive.plan.parser import parse_plan

    query = Query.parse(query_text)
    paths = Paths(root)
    path = paths.plans / f"{query.name()}.md"
    before: list[int] = []
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if old:
        earlier, _ = parse_plan(path, old)
        before = [int(t.id) for t in earlier.tasks if t.id.isdigit()]
    forge = forges.connect(config, root, paths.hive / "forge")
    made = draft(forge, query, query_text, before, config.agents)
    rel = path.relative_to(root)
    lines = [f"warning: {w}" for w in made.warnings]
    if old and _STATUS_APPROVED.sub(lambda m: f"{m.group(1)}draft", old, count=1) == made.text:
        return [*lines, f"{rel}: unchanged ({made.tasks} tasks; the forge's issues are as they were)"]
    paths.plans.mkdir(parents=True, exist_ok=True)
    atomic_write(path, made.text)
    plan, _, problems = load_plan(path, config)
    if problems:
        raise HiveError(*problems, f"{rel}: the draft is not a valid plan; fix it (or the issues), then approve it")
    lines += [f"warning: {w}" for w in plan.warnings]
    did = "updated — a draft again" if old else "written"
    return [*lines, f"{rel}: {did}, {made.tasks} tasks from {forge.repository}. Review it, then `hive approve {rel}`."]


def run(args: argparse.Namespace) -> int:
    if args.from_issues:
        if args.goal or args.split:
            raise HiveError("hive plan --from-issues QUERY takes no goal and no --split")
        root = find_root()
        for line in from_issues(root, args.from_issues, load_repo_config(root)):
            print(f"hive: {line}")
        return 0
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
