"""A draft plan from the forge's issues (`hive plan --from-issues QUERY`): one task per issue, its ID
the issue's number, its title the issue's, its description the issue's text — quoted whole in a
code fence longer than any run of backticks in it, so nothing in it can make a field, a task or a
heading. What may shape the plan comes from outside the text or from people who may decide:
`Depends on` from "Depends on #N" / "Blocked by #N" lines (they only order the work) and from
GitHub's sub-issues (a parent depends on its sub-issues); `Verify` from a `Verify: <command>` line
only when the issue's author has write access (a command, run once a human approves the plan);
`Agent` from an `agent:NAME` label, `Type` from a `hive:checkpoint` label.

The plan is a draft: a human approves it (`hive approve`), and any change a later run of the same
query brings (a new issue, an edited one, one closed) makes it a draft again."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx

from hive.errors import HiveError
from hive.forges.base import WRITE, Forge, Issue
from hive.output import plain
from hive.render import fence
from hive.store import names

_DEPENDS = re.compile(r"^\s*[-*]?\s*(?:depends\s+on|blocked\s+by)\b[\s:]*(.*)$", re.IGNORECASE | re.MULTILINE)
_NUMBER = re.compile(r"#(\d+)\b")
_VERIFY = re.compile(r"^Verify:[ \t]*(\S.*?)\s*$", re.MULTILINE)  # a plain line: `**Verify:**` stays text
_QUERY_TERM = re.compile(r"^(label|state):(.+)$")
AGENT_LABEL = "agent:"
CHECKPOINT_LABEL = "hive:checkpoint"
MOST_ISSUES = 200


@dataclass(frozen=True)
class Query:
    """What to draft from: issue numbers, or the issues with every `labels` in `state`."""

    numbers: tuple[int, ...] = ()
    labels: tuple[str, ...] = ()
    state: str = "open"

    @staticmethod
    def parse(text: str) -> Query:
        numbers: list[int] = []
        labels: list[str] = []
        state = "open"
        for term in text.replace(",", " ").split():
            if term.lstrip("#").isdigit():
                numbers.append(int(term.lstrip("#")))
                continue
            found = _QUERY_TERM.match(term)
            if not found:
                raise HiveError(
                    f"--from-issues: {term!r} is not a query term; use issue numbers (`12 14`), "
                    f'`label:NAME` and `state:open|closed|all` (e.g. "label:hive state:open")'
                )
            if found.group(1) == "label":
                labels.append(found.group(2))
            elif found.group(2) in ("open", "closed", "all"):
                state = found.group(2)
            else:
                raise HiveError(f"--from-issues: state:{found.group(2)} must be state:open, state:closed or state:all")
        if numbers and labels:
            raise HiveError("--from-issues: give issue numbers or labels, not both")
        if not numbers and not labels:
            raise HiveError('--from-issues needs issue numbers or labels (e.g. "label:hive state:open" or "12 14")')
        return Query(tuple(dict.fromkeys(numbers)), tuple(labels), state)

    def name(self) -> str:
        """The plan's name: `issues-<what it asks for>`."""
        said = "-".join([*map(str, self.numbers), *self.labels])
        return "issues-" + names.slug(said, 40).lower().strip("-")


@dataclass
class Draft:
    text: str
    tasks: int
    warnings: list[str] = field(default_factory=list)
    closed: list[int] = field(default_factory=list)  # of the draft before: closed on the forge now


def draft(forge: Forge, query: Query, query_text: str, before: Iterable[int], agents: Iterable[str]) -> Draft:
    """The plan's text for `query` as the forge answers it now; `before`: the issue numbers of the
    draft it replaces (those no longer asked for are marked, not silently dropped)."""
    issues = _fetch(forge, query)
    known = {i.number for i in issues}
    warnings: list[str] = []
    deps: dict[int, list[int]] = {}
    for issue in issues:
        wanted = list(dict.fromkeys(_depends(issue.body) + [s.number for s in forge.sub_issues(issue.number)]))
        outside = [n for n in wanted if n not in known and n != issue.number]
        for n in outside:
            warnings.append(
                f"issue #{issue.number} depends on #{n}, which the query does not hold: add #{n} to the query, "
                f"or the task runs without waiting for it"
            )
        deps[issue.number] = [n for n in wanted if n in known and n != issue.number]
    _no_cycle(deps)
    gone = sorted(set(before) - known)
    closed, elsewhere = [], []
    for n in gone:
        try:
            closed.append(n) if forge.issue(n).state == "closed" else elsewhere.append(n)
        except HiveError:
            elsewhere.append(n)
    profiles = set(agents)
    tasks = [_task(forge, issue, deps[issue.number], profiles, warnings) for issue in issues]
    header = _header(forge, query_text, closed, elsewhere)
    return Draft(header + "\n".join(tasks), len(tasks), warnings, closed)


def _fetch(forge: Forge, query: Query) -> list[Issue]:
    if query.numbers:
        found = [forge.issue(n) for n in query.numbers]
    else:
        found = forge.issues(query.state, query.labels)
    issues = sorted((i for i in found if not i.is_pull_request), key=lambda i: i.number)
    if not issues:
        raise HiveError("--from-issues: no issue matches the query on the forge; nothing was written")
    if len(issues) > MOST_ISSUES:
        raise HiveError(f"--from-issues: {len(issues)} issues match; narrow the query to at most {MOST_ISSUES}")
    return issues


def _depends(body: str) -> list[int]:
    return [int(n) for line in _DEPENDS.findall(body) for n in _NUMBER.findall(line)]


def _no_cycle(deps: dict[int, list[int]]) -> None:
    graph = nx.DiGraph([(n, d) for n, ds in deps.items() for d in ds])
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return
    path = " → ".join(f"#{a}" for a, _ in cycle) + f" → #{cycle[0][0]}"
    raise HiveError(
        f"--from-issues: the issues depend on each other in a cycle: {path}; "
        f"change one of their 'Depends on' lines (or sub-issues) on the forge, then run it again"
    )


def _task(forge: Forge, issue: Issue, deps: list[int], profiles: set[str], warnings: list[str]) -> str:
    fields = []
    if deps:
        fields.append(f"**Depends on:** {', '.join(map(str, sorted(deps)))}")
    if CHECKPOINT_LABEL in issue.labels:
        fields.append("**Type:** checkpoint:human-verify")
    verify = _VERIFY.findall(issue.body)
    if verify and CHECKPOINT_LABEL not in issue.labels:
        if forge.permission(issue.user) in WRITE:
            fields.append(f"**Verify:** {plain(verify[-1])}")
        else:
            warnings.append(
                f"issue #{issue.number}: its Verify line is by @{issue.user}, who has no write access: left out "
                f"(a command is taken only from someone who may decide)"
            )
    agents = [label[len(AGENT_LABEL) :] for label in issue.labels if label.startswith(AGENT_LABEL)]
    if agents and agents[0] in profiles:
        fields.append(f"**Agent:** {agents[0]}")
    elif agents:
        warnings.append(
            f"issue #{issue.number}: label {AGENT_LABEL}{agents[0]} names no agent profile in .hive/config.toml: "
            f"left out (the plan's default agent does it)"
        )
    title = " ".join(plain(issue.title).split())[:200] or f"Issue {issue.number}"
    body = issue.body.replace("\r\n", "\n")  # as the web form sends it; a plan's lines end in \n
    body = body[:-1] if body.endswith("\n") else body  # the fence's own line ends it
    around = fence(body, least=4)
    lines = [
        f"### Task {issue.number}: {title}",
        *fields,
        "",
        f"Issue #{issue.number} on the forge, written by @{issue.user} ({issue.url}) — quoted as written:",
        "",
        f"{around}text",
        body,
        around,
        "",
    ]
    return "\n".join(lines)


def _header(forge: Forge, query_text: str, closed: list[int], elsewhere: list[int]) -> str:
    lines = [
        "---",
        "status: draft",
        f"issues: {json.dumps(plain(query_text))}",  # JSON's string is YAML's too
        "---",
        f"# Issues of {forge.repository}: {' '.join(query_text.split())}",
        "",
        "Drafted by `hive plan --from-issues`: one task per issue, its description the issue's text as",
        "written. Review it before you approve it; running the same query again updates it (and makes",
        "it a draft again when anything changed).",
        "",
    ]
    if closed:
        lines += [f"Closed on the forge since the last draft (their tasks removed): {_numbers(closed)}.", ""]
    if elsewhere:
        lines += [f"No longer matched by the query (their tasks removed): {_numbers(elsewhere)}.", ""]
    return "\n".join(lines) + "\n"


def _numbers(numbers: list[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers)
