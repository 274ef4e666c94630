"""Plan parser: markdown text → frozen `Plan`/`Task` records.

markdown-it finds the structure (headings, fences, HTML comments) so a
`### Task` line inside a code block or a comment is never a task; the raw lines
give the field values and descriptions exactly as written.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hive.errors import HiveError
from hive.lifecycle import TaskType
from hive.plan.model import TYPES, Plan, Task
from hive.settings.config import parse_duration
from hive.store.names import ID_RE, PLAN_RE

if TYPE_CHECKING:  # markdown-it is loaded on first parse only (a cached plan needs none)
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

# A plan named like a doit command would break every doit invocation.
DOIT_COMMANDS = frozenset(
    {
        "list",
        "run",
        "info",
        "forget",
        "clean",
        "ignore",
        "dumpdb",
        "reset-dep",
        "strace",
        "help",
        "tabcompletion",
        "auto",
    }
)
FIELDS = {
    "depends on": "depends_on",
    "blocked by": "depends_on",
    "type": "type",
    "acceptance": "acceptance",
    "verify": "verify",
    "files": "files",
    "module": "module",
    "parallel-safe": "parallel_safe",
    "priority": "priority",
    "agent": "agent",
    "review": "review",
    "timeout": "timeout",
    "options": "options",
    "discovered from": "discovered_from",
}
FRONT_MATTER_KEYS = ("plan", "status", "agent", "review", "issues")
CHECKPOINT_MARKER = "<!-- checkpoint -->"

_HEADING = re.compile(r"^Task\s+([^\s:]+)\s*:\s*(.*?)\s*$")
_LOOKS_LIKE_TASK = re.compile(r"^Task\s+\d")
# `## Task 1:`, `#### Task 2:`, `### Task3:`, `### task 4:`: meant as tasks, silently
# plan context (or part of the task above) until they were reported (issue 10).
# Without a space the ID must start with a digit, so `### Tasks: overview` is no task.
_NEAR_MISS = re.compile(r"^task(?:\s+|(?=\d))([^\s:]+)\s*:\s*(.*?)\s*$", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*[-*]\s")
_FIELD = re.compile(r"^\s*[-*]?\s*\*\*([^*:]+?)\s*:\s*\*\*\s*(.*?)\s*$|^\s*[-*]?\s*\*\*([^*:]+?)\*\*\s*:\s*(.*?)\s*$")


@functools.lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    """The tokenizer, loaded on first parse (a cached plan needs no parsing)."""
    from markdown_it import MarkdownIt

    # Only the block structure matters (headings, fences, HTML comments); a heading's
    # text is on its inline token either way. Inline parsing was two thirds of a cold
    # `doit list` of a 10,000-task plan.
    return MarkdownIt("commonmark").disable("inline")


def parse_plan(path: Path, text: str | None = None) -> tuple[Plan, list[str]]:
    """Parse one plan file; returns the plan and every problem found (file:line: ...)."""
    text = path.read_text(encoding="utf-8") if text is None else text
    real, path = path, display_path(path)
    lines = text.splitlines()
    problems: list[str] = []
    meta, body_start = _front_matter(path, lines, problems)
    name = str(meta.get("plan") or path.stem)
    _check_plan_name(path, name, problems)
    status = str(meta.get("status", "draft")).strip().lower()
    if status not in ("draft", "approved"):
        problems.append(f"{path}:1: front matter status: {status!r} must be draft or approved")
    all_tokens = _markdown().parse("\n".join(lines[body_start:]))
    for t in all_tokens:
        if t.map:
            t.map = [t.map[0] + body_start, t.map[1] + body_start]
    headings = _headings(all_tokens)
    tokens = [t for t in all_tokens if t.level == 0 and t.map]
    starts = [t.map[0] for t in tokens if t.map]
    tasks: list[Task] = []
    in_task = [False] * len(lines)
    before_tasks = len(problems)
    warnings: list[str] = []
    for i, (line0, level, content) in enumerate(headings):
        if level != 3 or not _HEADING.match(content):
            _near_miss(path, line0, lines[line0].strip(), level, content, problems)
        if level != 3:
            continue
        end = next((h[0] for h in headings[i + 1 :] if h[1] <= 3), len(lines))
        section = tokens[bisect.bisect_right(starts, line0) : bisect.bisect_left(starts, end)]
        task = _parse_task(path, lines, section, line0, end, content, problems, warnings)
        if task is not None:
            tasks.append(task)
            in_task[line0:end] = [True] * (end - line0)
    seen: dict[str, int] = {}
    for task in tasks:
        if task.id in seen:
            problems.append(
                f"{path}:{task.line}: duplicate task ID {task.id!r} (first at line {seen[task.id]}); "
                f"give each task its own ID"
            )
        seen.setdefault(task.id, task.line)
    if not tasks and len(problems) == before_tasks:  # a heading problem already says why
        problems.append(
            f"{path}:1: the plan has no tasks; write each task as a level-3 heading '### Task <ID>: <title>' "
            f"(e.g. '### Task 1: Create the user model')"
        )
    context_lines = [ln for i, ln in enumerate(lines) if i >= body_start and not in_task[i]]
    title = next((c for _, lvl, c in headings if lvl == 1), name)
    plan = Plan(
        name=name,
        path=real,
        status=status,
        agent=str(meta.get("agent") or ""),
        review=str(meta.get("review") or ""),
        issues=str(meta.get("issues") or ""),
        title=title,
        context="\n".join(context_lines).strip(),
        tasks=tuple(tasks),
        warnings=tuple(warnings),
    )
    return plan, problems


def display_path(path: Path) -> Path:
    """How a plan file is named in messages: relative to the current directory when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except (ValueError, OSError):
        return path


def _front_matter(path: Path, lines: list[str], problems: list[str]) -> tuple[dict[str, Any], int]:
    if not lines or lines[0].strip() != "---":
        return {}, 0
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        problems.append(f"{path}:1: front matter starts with '---' but has no closing '---' line")
        return {}, 0
    import yaml

    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 2 if mark else 1
        problems.append(f"{path}:{line}: malformed front matter: {getattr(e, 'problem', None) or e}")
        return {}, end + 1
    if not isinstance(meta, dict):
        problems.append(f"{path}:2: front matter must be 'key: value' lines (plan, status, agent, review, issues)")
        return {}, end + 1
    for key in meta:
        if key not in FRONT_MATTER_KEYS:
            line = next((i + 1 for i in range(1, end) if lines[i].lstrip().startswith(f"{key}:")), 2)
            problems.append(f"{path}:{line}: unknown front matter key {key!r}; known: {', '.join(FRONT_MATTER_KEYS)}")
    return meta, end + 1


def _check_plan_name(path: Path, name: str, problems: list[str]) -> None:
    if not PLAN_RE.match(name):
        problems.append(
            f"{path}:1: plan name {name!r} must be letters, digits, '_' or '-' "
            f"(set `plan:` in the front matter or rename the file)"
        )
    elif name in DOIT_COMMANDS:
        problems.append(
            f"{path}:1: plan name {name!r} is a doit command and would break `doit`; "
            f"set another `plan:` name in the front matter"
        )


def _headings(tokens: list[Token]) -> list[tuple[int, int, str]]:
    out = []
    for i, t in enumerate(tokens):
        if t.type == "heading_open" and t.level == 0 and t.map:
            out.append((t.map[0], int(t.tag[1]), tokens[i + 1].content.strip()))
    return out


def _near_miss(path: Path, line0: int, raw: str, level: int, heading: str, problems: list[str]) -> None:
    """A heading that looks like a task but is not one: say how to write it."""
    m = _NEAR_MISS.match(heading)
    if not m or (level != 3 and not m.group(1)[0].isdigit()):  # `## Task list: ...` may be prose
        return
    problems.append(
        f"{path}:{line0 + 1}: '{raw}' is not a task heading: write '### Task {m.group(1)}: {m.group(2)}' "
        f"(a task is a level-3 heading '### Task <ID>: <title>'; reword the heading if it is no task)"
    )


def _parse_task(
    path: Path,
    lines: list[str],
    section: list[Token],
    line0: int,
    end: int,
    heading: str,
    problems: list[str],
    warnings: list[str],
) -> Task | None:
    """One task from its section (`section`: the top-level tokens inside it)."""
    where = f"{path}:{line0 + 1}"
    m = _HEADING.match(heading)
    if not m:
        if _LOOKS_LIKE_TASK.match(heading):
            problems.append(f"{where}: task heading {heading!r} needs a colon: '### Task <ID>: <title>'")
        return None
    task_id, title = m.group(1), m.group(2)
    if not ID_RE.match(task_id):
        problems.append(
            f"{where}: invalid task ID {task_id!r}: use letters, digits, '.', '_', '-', "
            f"starting with a letter or digit (e.g. 3, 2-tests, api)"
        )
        return None
    if not title:
        problems.append(f"{where}: task {task_id} has no title; write '### Task {task_id}: <what it does>'")
    # a block token always has its line range (`map`); inline ones have none
    skip = {i for t in section if t.type in ("fence", "code_block", "html_block") and t.map for i in range(*t.map)}
    markers = {t.map[0] for t in section if t.type == "html_block" and t.map and t.content.strip() == CHECKPOINT_MARKER}
    values, field_lines, body_from = _fields(path, lines, line0 + 1, end, skip - markers, problems)
    fence = next((t for t in section if t.type == "fence"), None)
    description = _without_markers(lines[body_from:end], {i - body_from for i in markers})
    _late_fields(path, lines, body_from, end, skip, warnings)
    task = Task(
        id=task_id,
        title=title,
        line=line0 + 1,
        description=description,
        script=fence.content if fence else "",
        hard_stop=bool(markers),
        field_lines=tuple(field_lines.items()),
        end=end,
        **_convert_fields(path, task_id, values, field_lines, problems),
    )
    if task.type == TaskType.SCRIPT and not fence:
        problems.append(f"{where}: script task {task_id} has no fenced code block to run; add one (```sh ... ```)")
    if task.type == TaskType.DECISION and not task.options:
        problems.append(f"{where}: decision checkpoint {task_id} needs an '**Options:** A, B' line listing the choices")
    return task


def _without_markers(lines: list[str], markers: set[int]) -> str:
    """The description without `<!-- checkpoint -->` lines, so adding or removing a
    marker (and the blank line that sets it apart) never changes the task's hash.
    Every other line stays as written: blank lines inside a code block are the plan's."""
    kept: list[str] = []
    drop_blank = False
    for i, line in enumerate(lines):
        if i in markers:
            # the blank line after a marker that a blank line also precedes set the marker apart
            drop_blank = bool(kept) and not kept[-1].strip()
            continue
        if drop_blank and not line.strip():
            drop_blank = False
            continue
        drop_blank = False
        kept.append(line)
    while kept and not kept[0].strip():
        kept.pop(0)
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept)


def _fields(
    path: Path, lines: list[str], start: int, end: int, skip: set[int], problems: list[str]
) -> tuple[dict[str, str], dict[str, int], int]:
    """Read `**Name:** value` lines directly under the heading; returns where the description starts."""
    values: dict[str, str] = {}
    where: dict[str, int] = {}
    i = start
    while i < end and i not in skip:
        if not lines[i].strip() or lines[i].strip() == CHECKPOINT_MARKER:
            i += 1
            continue
        m = _FIELD.match(lines[i])
        if not m:
            break
        raw_name = (m.group(1) or m.group(3)).strip()
        value = (m.group(2) if m.group(1) else m.group(4)) or ""
        key = FIELDS.get(raw_name.lower())
        if _LIST_ITEM.match(lines[i]) and _is_option(raw_name, values.get("options", "")):
            break  # a decision's options described one per item, even one named like a field
        if key is None:
            near = _near_field(raw_name)
            if _LIST_ITEM.match(lines[i]) and not near:
                break  # `- **Postgres:** robust, needs a server`: a list in the description (issue 43)
            problems.append(
                f"{path}:{i + 1}: unknown field '**{raw_name}:**'"
                + (f" — did you mean '**{near}:**'?" if near else "")
                + f"; known fields: {', '.join(n.capitalize() for n in FIELDS)}"
                + ("" if near else "; a line of the description goes below a blank line after the fields")
            )
        else:
            values[key] = value.strip()
            where[key] = i + 1
        i += 1
    return values, where, i


def _is_option(name: str, options: str) -> bool:
    return name.strip().lower() in {o.strip(" `").lower() for o in options.split(",")}


def _near_field(name: str) -> str:
    """The known field a misspelt name was meant as (`Typ` → `Type`, `Depend on` → `Depends on`)."""
    import difflib

    found = difflib.get_close_matches(name.lower(), FIELDS, n=1, cutoff=0.75)
    return found[0].capitalize() if found else ""


def _late_fields(path: Path, lines: list[str], start: int, end: int, skip: set[int], warnings: list[str]) -> None:
    """A known `**Field:**` line inside the description is part of the description, not
    a field: a `Depends on` written there would silently not count."""
    for i in range(start, end):
        m = _FIELD.match(lines[i]) if i not in skip else None
        if m and (m.group(1) or m.group(3)).strip().lower() in FIELDS:
            warnings.append(
                f"{path}:{i + 1}: '{lines[i].strip()}' is below the description, so it is description text, "
                f"not a field: fields go right under the heading"
            )


def _convert_fields(
    path: Path, task_id: str, v: dict[str, str], where: dict[str, int], problems: list[str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def bad(key: str, msg: str) -> None:
        problems.append(f"{path}:{where[key]}: task {task_id}: {msg}")

    if "depends_on" in v:
        out["depends_on"] = _id_list(v["depends_on"])
    for key in ("acceptance", "verify", "module", "agent", "review", "discovered_from"):
        if key in v:
            out[key] = v[key].strip("` ") if key == "verify" else v[key]
    for key in ("files", "options"):
        if key in v:
            out[key] = tuple(s.strip(" `") for s in v[key].split(",") if s.strip(" `"))
    return out | _checked_fields(v, bad)


def _checked_fields(v: dict[str, str], bad: Callable[[str, str], None]) -> dict[str, Any]:
    """The fields whose text must parse: one that does not is a problem at its line."""
    out: dict[str, Any] = {}
    if "type" in v:
        written = v["type"].strip("` ").lower()
        if written in TYPES:
            out["type"] = TaskType(written)
        else:
            bad("type", f"unknown Type {v['type']!r}; use one of: {', '.join(TYPES)}")
    if "parallel_safe" in v:
        flag = v["parallel_safe"].lower()
        if flag not in ("yes", "no", "true", "false"):
            bad("parallel_safe", f"Parallel-safe: {v['parallel_safe']!r} must be yes or no")
        out["parallel_safe"] = flag in ("yes", "true")
    if "priority" in v:
        try:
            out["priority"] = int(v["priority"])
        except ValueError:
            bad("priority", f"Priority: {v['priority']!r} must be a whole number")
    if "timeout" in v:
        try:
            out["timeout"] = parse_duration(v["timeout"], "Timeout")
        except HiveError:
            bad("timeout", f"Timeout: {v['timeout']!r} is not a duration; write e.g. 45m, 90s or 2h")
    return out


def _id_list(value: str) -> tuple[str, ...]:
    if value.strip().lower() in ("", "none", "-", "n/a", "nothing"):
        return ()
    items = (dependency_id(s) for s in value.split(","))
    return tuple(s for s in items if s)


def dependency_id(item: str) -> str:
    """The ID one item of a `Depends on` list names (`Task 2` and `` `2` `` name 2)."""
    return re.sub(r"^(task\s+)", "", item.strip(), flags=re.IGNORECASE).strip("` ")
