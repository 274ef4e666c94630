"""Every plan in `plans/`, compiled — from a cache when the plan file and the
config are unchanged, so `doit list` on a big plan skips markdown parsing and
networkx altogether (measured in bench/)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import pickle
from dataclasses import dataclass, field
from pathlib import Path

from hive import __version__
from hive.errors import HiveError
from hive.plan.model import Plan, Task
from hive.settings.config import Config
from hive.store.files import atomic_write_bytes


@dataclass(frozen=True)
class PlanSet:
    """Every valid plan (approved or draft); `warnings` are problems in draft plans; `errors`, those
    of approved plans left out (only when loaded for a view: `strict=False`)."""

    plans: tuple[Plan, ...]
    orders: dict[str, tuple[str, ...]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def plan(self, name: str) -> Plan:
        for p in self.plans:
            if p.name == name:
                return p
        raise HiveError(f"no plan named {name!r}; plans: {', '.join(p.name for p in self.plans) or 'none'}")

    def ordered(self, plan: Plan) -> list[Task]:
        """The plan's tasks dependencies first, longest remaining chain first."""
        by_id = {t.id: t for t in plan.tasks}
        return [by_id[i] for i in self.orders[plan.name]]


def load_plans(plans_dir: Path, config: Config, cache_dir: Path | None = None, strict: bool = True) -> PlanSet:
    """Load every plans/*.md. An invalid approved plan stops everything (`strict`: what runs
    tasks), or is left out with its errors (what only shows them: one typo must not blind
    `hive status` to every other plan, issue 43); a draft only warns."""
    plans: list[Plan] = []
    orders: dict[str, tuple[str, ...]] = {}
    errors: list[str] = []
    warnings: list[str] = []
    names: dict[str, Path] = {}
    for path in sorted(plans_dir.glob("*.md")) if plans_dir.is_dir() else []:
        plan, order, problems = _compiled(path, config, cache_dir)
        if plan.name in names:
            problems = problems + [
                f"{_shown(path)}:1: plan name {plan.name!r} is also used by "
                f"{_shown(names[plan.name])}; set a different `plan:` in one front matter"
            ]
        names.setdefault(plan.name, path)
        if problems:
            (errors if plan.approved else warnings).extend(problems)
            continue
        plans.append(plan)
        orders[plan.name] = order
    if errors and strict:
        raise HiveError(*errors)
    return PlanSet(tuple(plans), orders, tuple(warnings), tuple(errors))


@functools.lru_cache(maxsize=1)
def _code_stamp() -> str:
    return code_stamp(Path(__file__).parent, __version__)


def code_stamp(package: Path, version: str) -> str:
    """Hive's version and every module of the package: an upgrade or an edit (in a
    development checkout) never reads an old cache entry. All of them, because a
    hand-kept list of "the modules that compile plans" went stale (names.py was
    missing); a module that moves or goes away is simply not part of the stamp."""
    stamps = [version]
    for path in sorted(package.rglob("*.py")):
        try:
            stamps.append(f"{path.relative_to(package)}:{path.stat().st_mtime_ns}")
        except OSError:
            continue
    return ";".join(stamps)


def _compiled(path: Path, config: Config, cache_dir: Path | None) -> tuple[Plan, tuple[str, ...], list[str]]:
    data = path.read_bytes()
    key = hashlib.sha256(
        b"\0".join([data, repr(config).encode(), str(path.resolve()).encode(), _code_stamp().encode()])
    ).hexdigest()
    if cache_dir is None:
        from hive.plan.graph import compile_plan

        return compile_plan(path, config)
    cached = cache_dir / f"{path.stem}.{key[:20]}.pickle"
    if cached.exists():
        with contextlib.suppress(Exception):  # a stale or torn cache file is only a cache: rebuild it
            compiled: tuple[Plan, tuple[str, ...], list[str]] = pickle.loads(cached.read_bytes())
            return compiled
    from hive.plan.graph import compile_plan  # networkx and markdown-it only on a cache miss

    result = compile_plan(path, config)
    for task in result[0].tasks:
        _ = task.text_hash  # computed once, into the cache: `doit list` needs every task's
    if not result[2]:
        for old in cache_dir.glob(f"{path.stem}.*.pickle"):
            old.unlink(missing_ok=True)
        atomic_write_bytes(cached, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    return result


def _shown(path: Path) -> Path:
    from hive.plan.parser import display_path  # the parser loads only when a plan is parsed

    return display_path(path)
