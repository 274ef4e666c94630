"""`.hive/config.toml`: defaults, validation (unknown keys and bad values name the key)."""

from __future__ import annotations

import functools
import importlib.util
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hive.agent_clis import BUILTIN_PROFILES
from hive.agent_clis.profile import AgentProfile
from hive.errors import HiveError
from hive.settings.agents import profile_from_table
from hive.settings.prices import DEFAULT_PRICES, Price, prices_from_table
from hive.settings.schema import (
    DEFAULT_HIDDEN,
    DEFAULT_NOTIFY_EVENTS,
    DEFAULT_PROTECTED,
    KINDS,
    MERGE_METHODS,
    MERGE_MODES,
    NOTIFY_EVENTS,
    SANDBOX_NETWORKS,
    Key,
    by_section,
)

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}


def parse_duration(value: Any, where: str) -> float:
    """'45m', '30s', '1.5h', '250ms' or a number of seconds → seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    m = _DURATION.match(str(value)) if isinstance(value, str) else None
    if not m:
        raise HiveError(f'{where}: {value!r} is not a duration; write e.g. "30s", "45m" or "1h"')
    return float(m.group(1)) * _UNITS[m.group(2)]


@dataclass(frozen=True)
class Config:
    default_agent: str = "claude"
    planner: str = "claude-interactive"
    agents: dict[str, AgentProfile] = field(default_factory=lambda: dict(BUILTIN_PROFILES))
    task_timeout: float = 3600.0
    spawn_grace_period: float = 30.0
    stuck_threshold: float = 900.0
    stop_patience: float = 5.0
    ask_wait: float = 480.0  # how long `hive ask` blocks before the agent is told to end its session
    rate_limit_backoff: float = 60.0  # the first pause when the CLI did not say when its limit resets
    max_attempts: int = 2
    keep_going: bool = True  # doit's `continue`: a stopped task skips only its dependents
    main_branch: str = "main"
    auto_merge: bool = True
    require_tests: bool = False
    resolve_conflicts: bool = True  # a merge conflict starts a resolve attempt while attempts remain
    review: str = ""  # the profile that reviews each task's change ("" or "none": no review)
    max_reviews: int = 2  # rounds of changes a review may send back, then a human decides
    merge_protect: tuple[str, ...] = DEFAULT_PROTECTED  # paths a branch may not change without a human
    max_file_mb: int = 50  # a file bigger than this in a task's change waits for a human (0: no limit)
    max_checks: int = 0  # checks at once in the merge queue; 0 = no cap but the workers
    merge_batch: int = 1  # tasks verified together by one run of checks in the merge queue
    test_command: str = "make test"
    worktree_base: str = "worktrees"
    worktree_setup: str = ""
    worktree_teardown: str = ""  # run in a task's checkout before it is removed (engine.taskenv)
    worktree_copy: tuple[str, ...] = ()
    worktree_reuse: bool = True  # a worker starts its next task in its last task's checkout
    max_workers: int = 4
    gate_first_batch: bool = False
    hub_threshold: int = 0
    executor: str = "tmux"
    # the executor's own [executor] settings, as its plugin's keys checked them (hive.executors)
    executor_options: dict[str, Any] = field(default_factory=dict)
    sandbox_mode: str = "auto"  # "auto" | "on" | "off" (hive.sandbox)
    sandbox_writable: tuple[str, ...] = ()
    sandbox_hide: tuple[str, ...] = DEFAULT_HIDDEN
    sandbox_network: str = "allowlist"  # "allowlist" | "open" | "none" (hive.sandbox.network)
    sandbox_allow: tuple[str, ...] = ()
    sandbox_pass_env: tuple[str, ...] = ()
    budget_task_usd: float = 0.0  # 0 = no cap
    budget_run_usd: float = 0.0
    prices: dict[str, Price] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    # [notify]: each channel's value by its key (hive.notifiers: `command`, an argv run with one JSON
    # event on stdin; `webhook`, an http(s) URL each event is POSTed to); a channel not set is absent
    notify: dict[str, Any] = field(default_factory=dict)
    notify_events: tuple[str, ...] = DEFAULT_NOTIFY_EVENTS  # which events the channels are told of
    web_token: str = ""  # `hive web`'s token ("" = none: loopback only)
    log_max_mb: int = 10  # a task's log keeps the first and last this many MB of its output (hive.logcap)
    merge_mode: str = "local"  # "local" | "pr" (hive.forges, engine/merge/forge.py)
    forge_kind: str = "github"
    forge_api_url: str = "https://api.github.com"
    forge_repository: str = ""  # "owner/name"; "": read from the remote's URL
    forge_remote: str = "origin"
    forge_base: str = ""  # "": main_branch
    forge_poll: float = 30.0
    forge_labels: tuple[str, ...] = ()
    forge_max_ci_rounds: int = 3
    forge_approvals: int = 1
    forge_merge_method: str = "merge"
    forge_delete_branch: bool = True
    forge_comment: bool = True

    @property
    def protected(self) -> tuple[str, ...]:
        """What a task's branch may not change on its own: `[merge] protect` and the worktrees' folder."""
        return (*self.merge_protect, self.worktree_base.strip("/") + "/")

    @property
    def max_file_bytes(self) -> int | None:
        return self.max_file_mb * 1024 * 1024 if self.max_file_mb else None

    @property
    def pr_mode(self) -> bool:
        return self.merge_mode == "pr"

    @property
    def base_branch(self) -> str:
        """The forge branch PRs target."""
        return self.forge_base or self.main_branch

    @property
    def main_ref(self) -> str:
        """What tasks start from and a done task's merge commit must be on: main here, or in PR
        mode the forge's base as last fetched (`refs/remotes/<remote>/<base>`): Hive does not move
        the user's main there, it only fast-forwards it when it safely can."""
        if self.pr_mode:
            return f"refs/remotes/{self.forge_remote}/{self.base_branch}"
        return f"refs/heads/{self.main_branch}"

    @property
    def main_name(self) -> str:
        """main_ref as agents' briefs name it and their git resolves it (`git merge origin/main`)."""
        return f"{self.forge_remote}/{self.base_branch}" if self.pr_mode else self.main_branch

    def profile_name(self, plan_agent: str, task_agent: str) -> str:
        """The agent profile a task runs with: its own, else its plan's, else the default."""
        return task_agent or plan_agent or self.default_agent


_SCHEMA = by_section()


def load_config(
    path: Path,
    main_branch_fallback: str | None = None,
    executors: Mapping[str, Sequence[Key]] | None = None,
    channels: Sequence[Key] | None = None,
) -> Config:
    """Read config.toml (every key optional); a missing file means all defaults.

    `executors`: every executor kind with its own `[executor]` settings, and `channels`: the
    notification channels' `[notify]` keys (the plugins' registries, which the settings do not
    import: hive.project passes them). Without them those tables are taken as they are, unchecked."""
    data: dict[str, Any] = {}
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as e:
            raise HiveError(f"{path}: {e}; fix the TOML syntax") from None
    values: dict[str, Any] = {}
    if main_branch_fallback and "main_branch" not in data.get("merge", {}):
        values["main_branch"] = main_branch_fallback
    problems: list[str] = []
    agents = dict(BUILTIN_PROFILES)
    prices = dict(DEFAULT_PRICES)
    for section, table in data.items():
        problems += _load_table(path, section, table, agents, prices, values, executors, channels)
    config = Config(agents=agents, prices=prices, **values)
    problems += _unknown_profiles(path, config)
    if problems:
        raise HiveError(*problems)
    return config


def _load_table(
    path: Path,
    section: str,
    table: Any,
    agents: dict[str, AgentProfile],
    prices: dict[str, Price],
    values: dict[str, Any],
    executors: Mapping[str, Sequence[Key]] | None,
    channels: Sequence[Key] | None,
) -> list[str]:
    """One `[section]` of the file, into `agents`, `prices` or `values` (Config's fields)."""
    if section == "agents":
        return _load_agents(path, table, agents)
    if section == "prices":
        try:
            prices.update(prices_from_table(table, f"{path}: prices"))
        except HiveError as e:
            return e.problems
        return []
    if section not in _SCHEMA:
        known = ", ".join(sorted([*_SCHEMA, "agents", "prices"]))
        return [f"{path}: unknown section [{section}]; known: {known}"]
    if not isinstance(table, dict):
        return [f"{path}: {section} must be a table [{section}]"]
    if section == "executor":
        return _load_executor(path, table, executors, values)
    if section == "notify":  # the schema's keys (events) and each channel's
        own = {k: v for k, v in table.items() if k in _SCHEMA["notify"]}
        rest = {k: v for k, v in table.items() if k not in own}
        problems = _load_section(path, section, own, values)
        if channels is None:
            values["notify"] = rest
            return problems
        values["notify"], found = _options(path, section, rest, channels, besides=tuple(_SCHEMA["notify"]))
        return problems + found
    return _load_section(path, section, table, values)


def _load_section(path: Path, section: str, table: dict[str, Any], values: dict[str, Any]) -> list[str]:
    """One of the schema's sections: each key checked against its Key, into `values` by field."""
    problems = []
    for key, value in table.items():
        spec = _SCHEMA[section].get(key)
        if spec is None:
            problems.append(f"{path}: unknown key {section}.{key}; known: {', '.join(_SCHEMA[section])}")
            continue
        try:
            values[spec.field] = convert(value, spec.kind, f"{path}: {section}.{key}")
        except HiveError as e:
            problems += e.problems
    return problems


def _unknown_profiles(path: Path, config: Config) -> list[str]:
    """`[agent] default` and `planner`, and `[merge] review` when set, must name a profile (the
    default may be "script")."""
    known = ", ".join(sorted(config.agents))
    named: tuple[tuple[str, str], ...] = (("agent.default", config.default_agent), ("agent.planner", config.planner))
    named += (("merge.review", config.review),) if config.review not in ("", "none") else ()
    return [
        f"{path}: {key} = {name!r} is not a known agent profile; known: {known}"
        for key, name in named
        if name not in config.agents and not (key == "agent.default" and name == "script")
    ]


def _load_executor(
    path: Path, table: dict[str, Any], executors: Mapping[str, Sequence[Key]] | None, values: dict[str, Any]
) -> list[str]:
    """`[executor]`: `kind` picks one, and the rest are that executor's own settings."""
    kind = table.get("kind", _SCHEMA["executor"]["kind"].default)
    if executors is None:
        values.update(executor=kind, executor_options={k: v for k, v in table.items() if k != "kind"})
        return []
    if not isinstance(kind, str) or kind not in executors:
        known = ", ".join(sorted(executors))
        return [f"{path}: executor.kind = {kind!r} is not an executor; known: {known}"]
    options, problems = _options(path, "executor", table, executors[kind], besides=("kind",))
    values.update(executor=kind, executor_options=options)
    return problems


def _options(
    path: Path, section: str, table: Mapping[str, Any], keys: Sequence[Key], besides: tuple[str, ...] = ()
) -> tuple[dict[str, Any], list[str]]:
    """A plugin's own settings in `table` (keys `besides` aside), each checked by its Key,
    with the defaults of the others (a key whose default is None is not set: absent)."""
    by_name = {key.name: key for key in keys}
    options = {key.name: convert(key.default, key.kind, key.dotted) for key in keys if key.default is not None}
    problems = []
    for name, value in table.items():
        if name in besides:
            continue
        if name not in by_name:
            problems.append(f"{path}: unknown key {section}.{name}; known: {', '.join([*besides, *by_name])}")
            continue
        try:
            options[name] = convert(value, by_name[name].kind, f"{path}: {section}.{name}")
        except HiveError as e:
            problems += e.problems
    return options, problems


def _load_agents(path: Path, table: Any, agents: dict[str, AgentProfile]) -> list[str]:
    if not isinstance(table, dict):
        return [f"{path}: agents must be tables like [agents.NAME]"]
    problems = []
    for name, body in table.items():
        try:
            agents[name] = profile_from_table(name, body, agents.get(name), f"{path}: agents.{name}")
        except HiveError as e:
            problems += e.problems
    return problems


def convert(value: Any, kind: str, where: str) -> Any:
    """A TOML value checked against its schema kind (schema.KINDS), as Config holds it."""
    if kind == "duration":
        return parse_duration(value, where)
    if kind in ("argv", "url"):
        return _notify_value(value, kind, where)
    if kind == "hostlist":
        return _hosts(value, where)
    if kind == "events":
        unknown = [v for v in value if v not in NOTIFY_EVENTS] if isinstance(value, list) else None
        if unknown is None or not all(isinstance(v, str) for v in value) or unknown:
            raise HiveError(f"{where} = {value!r} must be a list of event names: {', '.join(NOTIFY_EVENTS)}")
        return tuple(value)
    ok = {
        "str": isinstance(value, str),
        "profile": isinstance(value, str),  # which profiles exist is checked once all are read
        "executor": isinstance(value, str),  # which executors exist: the registry the caller passes
        "nonempty": isinstance(value, str) and bool(value.strip()),
        "bool": isinstance(value, bool),
        "posint": isinstance(value, int) and not isinstance(value, bool) and value >= 1,
        "nonnegint": isinstance(value, int) and not isinstance(value, bool) and value >= 0,
        "strlist": isinstance(value, list) and all(isinstance(v, str) for v in value),
        "usd": isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0,
        "sandboxmode": value in ("auto", "on", "off"),
        "network": value in SANDBOX_NETWORKS,
        "mergemode": value in MERGE_MODES,
        "mergemethod": value in MERGE_METHODS,
        "repository": isinstance(value, str) and (value == "" or re.fullmatch(r"[\w.-]+/[\w.-]+", value) is not None),
    }[kind]
    if not ok:
        raise HiveError(f"{where} = {value!r} must be {KINDS[kind]}")
    if kind == "usd":
        return float(value)
    return tuple(value) if kind == "strlist" else value


def _hosts(value: Any, where: str) -> tuple[str, ...]:
    """`[sandbox] allow`: each entry one the proxy can read, as it reads them (an entry it
    cannot, a URL or a path, would allow nothing, every connection refused without a word)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise HiveError(f"{where} = {value!r} must be {KINDS['hostlist']}")
    problems = []
    for entry in value:
        try:
            _allow_rule()(entry)
        except ValueError as e:
            problems.append(
                f"{where}: {entry!r} is not a host: {e}; write a host name, host:port or *.domain "
                '(e.g. "pypi.org", "127.0.0.1:8080", "*.npmjs.org")'
            )
    if problems:
        raise HiveError(*problems)
    return tuple(value)


@functools.cache
def _allow_rule() -> Callable[[str], tuple[str, int | None]]:
    """The proxy's own reader of `[sandbox] allow` entries (hive/sandbox/proxy.py `rule`), so
    that what the config accepts is what the proxy applies. Loaded as the standalone file it
    is (standard library only, run as a script), not as hive.sandbox.proxy: the settings sit
    below the sandbox package, which imports them (tests/unit/test_architecture.py)."""
    path = Path(__file__).resolve().parent.parent / "sandbox" / "proxy.py"
    spec = importlib.util.spec_from_file_location("hive_sandbox_proxy_rules", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rule: Callable[[str], tuple[str, int | None]] = module.rule
    return rule


def _notify_value(value: Any, kind: str, where: str) -> Any:
    """[notify] command is an argv list, run without a shell (event text never meets
    one); webhook is an http(s) URL, checked now rather than failing at every event."""
    if kind == "argv":
        if isinstance(value, str) or not value or not isinstance(value, list):
            raise HiveError(
                f"{where} = {value!r} must be a non-empty list of strings, "
                f'e.g. ["python3", "/opt/notify.py"] (not one shell string); it reads each event as JSON on stdin'
            )
        if not all(isinstance(v, str) and v for v in value):
            raise HiveError(f"{where} = {value!r}: every part must be a non-empty string")
        return tuple(value)
    try:
        parts = urlsplit(value) if isinstance(value, str) and value == value.strip() else None
        host = parts.hostname if parts else None
    except ValueError:  # e.g. a broken [IPv6] host
        parts = host = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise HiveError(
            f'{where} = {value!r} must be an http:// or https:// URL, e.g. "https://hooks.example.com/hive"'
        )
    return value
