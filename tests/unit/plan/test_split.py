"""`hive plan --split`'s text work (hive.plan.split): a task's section replaced by the
planner's tasks, its dependents rewired, the plan set back to draft, every other byte of
the plan as the human wrote it; and a bad set of tasks refused with the plan untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from hive.errors import HiveError
from hive.plan import split
from hive.plan.graph import load_plan
from hive.plan.parser import parse_plan
from hive.settings.config import Config

PLAN = """\
---
status: approved
---
# Tool

## Context
Keep it small.

### Task 1: Parser
Parse it.

### Task 2: Everything else
**Depends on:** 1
**Acceptance:** it all works

Print, export and document.

### Task 3: Docs
**Depends on:** 1, 2
Write the docs.

### Task 4: Release
- **Blocked by**: Task `2`, 3
Ship it.

## Notes
Written by hand.
"""

FRAGMENT = """\
### Task 2.1: Printer
**Depends on:** 1
Print.

### Task 2.2: Exporter
**Depends on:** 2.1
Export.
"""

SPLIT = """\
---
status: draft
---
# Tool

## Context
Keep it small.

### Task 1: Parser
Parse it.

### Task 2.1: Printer
**Depends on:** 1
Print.

### Task 2.2: Exporter
**Depends on:** 2.1
Export.

### Task 3: Docs
**Depends on:** 1, 2.1, 2.2
Write the docs.

### Task 4: Release
- **Blocked by**: 2.1, 2.2, 3
Ship it.

## Notes
Written by hand.
"""


def _fragment(text: str = FRAGMENT, task_id: str = "2") -> split.Fragment:
    return split.read_fragment(Path("split-tasks.md"), text, task_id)


def test_the_section_is_replaced_dependents_wait_for_every_new_task_and_the_plan_is_a_draft_again():
    result = split.split_plan(Path("tool.md"), PLAN, "2", _fragment())
    assert result.text == SPLIT
    assert result.ids == ("2.1", "2.2") and result.dependents == ("3", "4") and result.was_approved
    plan, problems = parse_plan(Path("tool.md"), result.text)
    assert problems == [] and plan.status == "draft"
    assert [(t.id, t.depends_on) for t in plan.tasks] == [
        ("1", ()),
        ("2.1", ("1",)),
        ("2.2", ("2.1",)),
        ("3", ("1", "2.1", "2.2")),
        ("4", ("2.1", "2.2", "3")),
    ]


def test_the_parser_records_where_each_section_ends_and_takes_dotted_ids():
    plan, problems = parse_plan(Path("tool.md"), SPLIT)
    assert problems == []
    lines = SPLIT.splitlines()
    sections = {t.id: lines[t.line - 1 : t.end] for t in plan.tasks}
    assert sections["2.2"] == ["### Task 2.2: Exporter", "**Depends on:** 2.1", "Export.", ""]
    assert sections["4"][-1] == "", "the last task ends before `## Notes`, which stays plan context"
    assert "Written by hand." in plan.context


@pytest.mark.parametrize(
    "line, expected",
    [
        ("**Depends on:** 1, 2, 5\n", "**Depends on:** 1, 2.1, 2.2, 5\n"),
        ("**Depends on:** 2\n", "**Depends on:** 2.1, 2.2\n"),
        ("**Depends on:**  2.1, 2 \r\n", "**Depends on:**  2.1, 2.2 \r\n"),  # 2.1 named once
        ("- **Blocked by**: Task 2, `x`", "- **Blocked by**: 2.1, 2.2, `x`"),
        ("**depends on:** 12, 2-tests\n", "**depends on:** 12, 2-tests\n"),  # no ID that only looks alike
    ],
)
def test_a_dependents_line_keeps_its_other_dependencies_and_its_ending(line, expected):
    assert split.rewire_line(line, "2", ("2.1", "2.2")) == expected


def test_the_last_task_of_a_plan_without_a_final_newline_is_replaced_and_the_file_still_ends_so():
    text = "# T\n\n### Task 1: One\n\n### Task 2: Two\n**Depends on:** 1\nall of it"
    result = split.split_plan(Path("t.md"), text, "2", _fragment())
    assert result.text == "# T\n\n### Task 1: One\n\n" + FRAGMENT.rstrip("\n")
    assert not result.was_approved, "a plan without front matter is a draft already"


def test_a_crlf_plan_stays_crlf_and_text_after_the_tasks_is_kept():
    text = PLAN.replace("\n", "\r\n")
    result = split.split_plan(Path("tool.md"), text, "2", _fragment())
    assert result.text == SPLIT.replace("\n", "\r\n")


def test_only_the_front_matters_status_becomes_draft():
    lines = ["---\n", "plan: x\n", "status: approved  \n", "---\n", "status: approved\n"]
    assert split.set_draft(lines) is True
    assert lines == ["---\n", "plan: x\n", "status: draft  \n", "---\n", "status: approved\n"]
    no_status = ["---\n", "plan: x\n", "---\n", "status: approved\n"]
    assert split.set_draft(no_status) is False and no_status[3] == "status: approved\n"


def test_what_the_planner_wrote_outside_its_task_sections_is_left_out():
    fragment = _fragment("---\nstatus: approved\n---\n# Split of 2\n\n" + FRAGMENT + "\n## Why\nbecause\n")
    assert fragment.ids == ("2.1", "2.2")
    assert fragment.left_out == 6  # the front matter (3), the title, `## Why` and its line
    assert "\n".join(fragment.lines).strip() == FRAGMENT.strip()


@pytest.mark.parametrize(
    "text, words",
    [
        ("", ["holds no task", "### Task 2.1:"]),
        ("Print and export.\n", ["holds no task"]),
        ("### Task 5: A\n\n### Task 6: B\n", ["numbered 5, 6", "must be numbered 2.1, 2.2"]),
        ("### Task 2.1: A\n\n### Task 2.3: B\n", ["numbered 2.1, 2.3", "must be numbered 2.1, 2.2"]),
        ("### Task 2.1: A\n**Colour:** red\n", ["unknown field", "have the problems above"]),
    ],
)
def test_tasks_that_are_not_id_1_to_n_are_refused_with_what_to_fix(text, words):
    with pytest.raises(HiveError) as e:
        _fragment(text)
    for w in words:
        assert w in str(e.value), str(e.value)


def _files(tmp_path: Path, fragment: str) -> tuple[Path, Path, Path]:
    plan = tmp_path / "plans" / "tool.md"
    plan.parent.mkdir()
    plan.write_bytes(PLAN.encode())
    tasks = tmp_path / "split-tasks.md"
    tasks.write_text(fragment)
    return plan, tasks, tmp_path / "proposed.md"


def test_apply_writes_a_valid_split_into_the_plan(tmp_path):
    plan, tasks, proposed = _files(tmp_path, FRAGMENT)
    result = split.apply(plan, "2", tasks, Config(), proposed)
    assert plan.read_text() == SPLIT and result.ids == ("2.1", "2.2")
    assert load_plan(plan, Config())[2] == [] and not proposed.exists()


@pytest.mark.parametrize(
    "fragment, words",
    [
        (FRAGMENT.replace("**Depends on:** 1", "**Depends on:** 99"), ["depends on unknown task '99'"]),
        (FRAGMENT.replace("**Depends on:** 1", "**Depends on:** 3"), ["dependency cycle"]),
        (FRAGMENT.replace("**Depends on:** 1", "**Depends on:** 2"), ["depends on unknown task '2'"]),
        (FRAGMENT + "```sh\necho open\n", ["missing: 3, 4", "code block open"]),
    ],
    ids=["unknown-dependency", "cycle", "on-the-old-task", "open-code-block"],
)
def test_an_invalid_split_leaves_the_plan_untouched_and_shows_the_plan_it_would_have_made(tmp_path, fragment, words):
    plan, tasks, proposed = _files(tmp_path, fragment)
    with pytest.raises(HiveError) as e:
        split.apply(plan, "2", tasks, Config(), proposed)
    assert plan.read_bytes() == PLAN.encode()
    for w in [*words, "is not valid", str(proposed)]:
        assert w in str(e.value), str(e.value)
    assert "### Task 2.1: Printer" in proposed.read_text()


@pytest.mark.parametrize("fragment", ["", " \n\n"])
def test_an_empty_file_from_the_planner_is_refused(tmp_path, fragment):
    plan, tasks, proposed = _files(tmp_path, fragment)
    with pytest.raises(HiveError, match="the planner wrote no tasks"):
        split.apply(plan, "2", tasks, Config(), proposed)
    assert plan.read_bytes() == PLAN.encode()


def test_a_task_that_left_the_plan_meanwhile_is_named(tmp_path):
    plan, tasks, proposed = _files(tmp_path, FRAGMENT.replace("2.", "9."))
    with pytest.raises(HiveError, match="has no task '9' any more"):
        split.apply(plan, "9", tasks, Config(), proposed)
