"""`hive plan --split`: a too-big task's section replaced, in the plan's text, by the
tasks a planner wrote in its place. Pure text work on line ranges the parser found
(`Task.line`..`Task.end`), never a re-rendering: every byte of the plan outside the
replaced section, the rewired `Depends on` lines and the `status:` line stays as the
human wrote it (CRLF line endings included)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hive.errors import HiveError
from hive.plan.graph import load_plan
from hive.plan.model import Plan
from hive.plan.parser import dependency_id, display_path, parse_plan
from hive.settings.config import Config
from hive.store.files import atomic_write

# a field line split into what stays (`**Depends on:** `, its spacing) and the list of IDs
_DEPENDS = re.compile(r"^(\s*[-*]?\s*\*\*[^*:]+?(?:\s*:\s*\*\*|\*\*\s*:)\s*)(.*?)(\s*)$")
_STATUS = re.compile(r"^(\s*status\s*:\s*)(.*?)(\s*)$")


@dataclass(frozen=True)
class Fragment:
    """The tasks a planner wrote in place of one task: their sections as written, and
    how many lines of what it wrote lie outside any task section (left out)."""

    ids: tuple[str, ...]
    lines: tuple[str, ...]
    left_out: int = 0


@dataclass(frozen=True)
class Split:
    """The plan's new text, and what changed in it (for the user)."""

    text: str
    ids: tuple[str, ...]
    dependents: tuple[str, ...]
    was_approved: bool
    left_out: int = 0  # non-blank lines the planner wrote outside its task sections


def new_ids(task_id: str, count: int) -> tuple[str, ...]:
    return tuple(f"{task_id}.{n}" for n in range(1, count + 1))


def read_fragment(path: Path, text: str, task_id: str) -> Fragment:
    """The planner's tasks from its file: only their sections count (a title, a front
    matter or a `## Notes` around them would become plan context or land in the task
    before the split one). Raises HiveError when it is no set of tasks `<ID>.1..n`."""
    shown = display_path(path)
    fragment, problems = parse_plan(path, text)
    if not fragment.tasks:
        raise HiveError(
            f"{shown} holds no task: the planner must write the tasks that replace task {task_id} "
            f"as '### Task {task_id}.1: <title>' sections",
            *problems,
        )
    if problems:
        raise HiveError(*problems, f"{shown}: the tasks the planner wrote have the problems above")
    ids = tuple(t.id for t in fragment.tasks)
    expected = new_ids(task_id, len(ids))
    if sorted(ids) != sorted(expected):
        raise HiveError(
            f"{shown}: the new tasks are numbered {', '.join(ids)}; the tasks that replace task {task_id} "
            f"must be numbered {', '.join(expected)}: renumber them (and their Depends on lines) in that file"
        )
    all_lines = text.splitlines()
    kept = [i for t in fragment.tasks for i in range(t.line - 1, t.end)]
    inside = set(kept)
    left_out = sum(1 for i, line in enumerate(all_lines) if line.strip() and i not in inside)
    return Fragment(ids, tuple(all_lines[i] for i in kept), left_out)


def split_plan(path: Path, text: str, task_id: str, fragment: Fragment) -> Split:
    """The plan with task `task_id`'s section replaced by the fragment's tasks, every
    task that depended on it depending on all of them, and `status: draft` (the human
    approves the changed plan). Raises HiveError if the task is not in the plan."""
    plan, _ = parse_plan(path, text)
    try:
        task = plan.task(task_id)
    except KeyError:
        raise HiveError(f"{display_path(path)} has no task {task_id!r} any more; nothing was changed") from None
    lines = text.splitlines(keepends=True)  # the parser's own line numbering, endings kept
    dependents = tuple(t.id for t in plan.tasks if task_id in t.depends_on)
    for t in plan.tasks:
        if t.id in dependents:
            i = t.line_of("depends_on") - 1
            lines[i] = rewire_line(lines[i], task_id, fragment.ids)
    was_approved = set_draft(lines)
    lines[task.line - 1 : task.end] = replacement(lines[task.line - 1 : task.end], fragment.lines, _newline(text))
    return Split("".join(lines), fragment.ids, dependents, was_approved, fragment.left_out)


def replacement(section: list[str], fragment: tuple[str, ...], newline: str) -> list[str]:
    """The fragment's lines in the plan's line endings, followed by the blank lines that
    set the old section apart from what comes after it."""
    body = list(fragment)
    while body and not body[0].strip():
        body.pop(0)
    while body and not body[-1].strip():
        body.pop()
    gap = len(section)
    while gap and not section[gap - 1].strip():
        gap -= 1
    out = [line + newline for line in body]
    trailing = section[gap:]
    if not trailing and section and not _ending(section[-1]) and out:
        out[-1] = out[-1][: -len(newline)]  # the plan ended without a newline: so does it still
    return out + trailing


def rewire_line(line: str, old: str, new: tuple[str, ...]) -> str:
    """A `**Depends on:** a, old, b` line made `**Depends on:** a, new..., b`; the other
    dependencies and the line's ending as they were."""
    ending = _ending(line)
    content = line[: len(line) - len(ending)]
    m = _DEPENDS.match(content)
    if not m:  # the parser read this line as the field: it matches
        raise ValueError(f"not a field line: {line!r}")
    items = [s.strip() for s in m.group(2).split(",") if s.strip()]
    ids = [dependency_id(s) for s in items]
    out: list[str] = []
    for item, item_id in zip(items, ids, strict=True):
        if item_id == old:
            out += [n for n in new if n not in ids and n not in out]
        else:
            out.append(item)
    return f"{m.group(1)}{', '.join(out)}{m.group(3)}{ending}"


def set_draft(lines: list[str]) -> bool:
    """Set the front matter's `status:` to draft, in place; True if it said approved.
    A plan with no front matter, or no status in it, is a draft already."""
    if not lines or lines[0].strip() != "---":
        return False
    for i in range(1, len(lines)):
        ending = _ending(lines[i])
        content = lines[i][: len(lines[i]) - len(ending)]
        if content.strip() in ("---", "..."):
            return False
        m = _STATUS.match(content)
        if m:
            was = m.group(2).strip("'\" ").lower() == "approved"
            lines[i] = f"{m.group(1)}draft{m.group(3)}{ending}"
            return was
    return False


def check_result(before: Plan, after: Plan, task_id: str, ids: tuple[str, ...]) -> list[str]:
    """The split plan must hold exactly the old tasks with `task_id` replaced by `ids`: a
    code block a new task leaves open would swallow the tasks after it."""
    want = [t.id for t in before.tasks if t.id != task_id] + list(ids)
    got = [t.id for t in after.tasks]
    missing = [i for i in want if i not in got]
    extra = [i for i in got if i not in want]
    if not missing and not extra:
        return []
    return [
        f"{display_path(before.path)}: with task {task_id} split, the plan's tasks would not be the same "
        f"(missing: {', '.join(missing) or 'none'}; unexpected: {', '.join(extra) or 'none'}); does a new task "
        f"leave a code block open?"
    ]


def apply(path: Path, task_id: str, fragment_file: Path, config: Config, proposed: Path) -> Split:
    """Write the planner's tasks (in `fragment_file`) into the plan file in place of
    `task_id`, once the plan they make is valid; otherwise HiveError says why and the
    plan file is left as it was (the plan as it would have been is written to `proposed`)."""
    if not fragment_file.is_file() or not fragment_file.read_text(encoding="utf-8").strip():
        raise HiveError(f"{display_path(fragment_file)} is empty: the planner wrote no tasks to it")
    fragment = read_fragment(fragment_file, fragment_file.read_text(encoding="utf-8"), task_id)
    text = path.read_bytes().decode("utf-8")  # bytes: keep every line ending as it is
    split = split_plan(path, text, task_id, fragment)
    before, _ = parse_plan(path, text)
    after, _, problems = load_plan(path, config, text=split.text)
    problems += check_result(before, after, task_id, split.ids)
    if problems:
        atomic_write(proposed, split.text)
        raise HiveError(
            *problems,
            f"the plan with task {task_id} split is not valid (the line numbers above are those of "
            f"{display_path(proposed)}, the plan as it would have been)",
        )
    atomic_write(path, split.text)
    return split


def _ending(line: str) -> str:
    """A line's line break as `str.splitlines(keepends=True)` (the parser's numbering) cut it."""
    return line[len(line.splitlines()[0]) :] if line.splitlines() else line


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"
