"""Plans that look right but would run less than their author wrote: near-miss task
headings, a plan without tasks, fields written below the description (issue 10)."""

from __future__ import annotations

import pytest
from test_parser import only_problem, parse


@pytest.mark.parametrize(
    "heading, fixed",
    [
        ("## Task 1: Level two", "### Task 1: Level two"),
        ("#### Task 2: Level four", "### Task 2: Level four"),
        ("### Task3: No space", "### Task 3: No space"),
        ("### task 4: Lower case", "### Task 4: Lower case"),
        ("### TASK api: Upper case", "### Task api: Upper case"),
    ],
)
def test_near_miss_task_heading_is_an_error_naming_the_expected_form(tmp_path, heading, fixed):
    plan, problems = parse(tmp_path, f"# Plan\n\n{heading}\nDo it.\n")
    assert plan.tasks == ()
    only_problem(problems, plan.path, 3, f"'{heading}' is not a task heading", f"write '{fixed}'")
    assert len(problems) == 1, problems


def test_near_miss_inside_a_task_is_reported_and_the_task_kept(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: One\nWork.\n\n#### Task 2: Two\nMore work.\n")
    assert [t.id for t in plan.tasks] == ["1"]
    only_problem(problems, plan.path, 4, "'#### Task 2: Two'", "'### Task 2: Two'")


@pytest.mark.parametrize("heading", ["## Tasks", "## Tasks: overview", "### Tasks: overview", "## Task list: prose"])
def test_headings_that_only_mention_tasks_are_not_near_misses(tmp_path, heading):
    _, problems = parse(tmp_path, f"# Plan\n{heading}\n\n### Task 1: Real\n")
    assert problems == []


def test_a_plan_without_tasks_is_an_error(tmp_path):
    plan, problems = parse(tmp_path, "---\nstatus: draft\n---\n# Notes\n\nJust some text.\n")
    only_problem(problems, plan.path, 1, "the plan has no tasks", "'### Task <ID>: <title>'")


def test_known_field_below_the_description_is_a_warning_not_silent_text(tmp_path):
    plan, problems = parse(
        tmp_path,
        """
        ### Task 1: One
        **Acceptance:** it works

        Build it.
        **Depends on:** 2
        - **verify:** make test
        **Note:** prose in bold, not a field name

        ```
        **Depends on:** 3 in a code block is an example
        ```

        ### Task 2: Two
        """,
    )
    assert problems == []
    assert plan.task("1").depends_on == (), "a late field still does not count"
    assert len(plan.warnings) == 2, plan.warnings
    assert f"{plan.path.name}:5: '**Depends on:** 2'" in plan.warnings[0]
    assert f"{plan.path.name}:6: '- **verify:** make test'" in plan.warnings[1]
    assert all("fields go right under the heading" in w for w in plan.warnings)


def test_fields_right_under_the_heading_give_no_warning(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: One\n**Depends on:** none\n\n**Verify:** make\n\nBuild it.\n")
    assert problems == [] and plan.warnings == ()
