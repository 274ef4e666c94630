"""The plan parser: markdown text → Plan/Task records and file:line problems."""

from __future__ import annotations

import textwrap

import pytest

from hive.plan.model import TYPES
from hive.plan.parser import parse_plan


def parse(tmp_path, body, name="p"):
    """Write a plan file and parse it; returns (plan, problems)."""
    path = tmp_path / f"{name}.md"
    text = textwrap.dedent(body).lstrip("\n")
    path.write_text(text)
    return parse_plan(path, text)


def only_problem(problems, path, line, *words):
    """The single problem located at `<file>:<line>:`, checked to contain every word."""
    where = f"{path.name}:{line}:"
    hits = [p for p in problems if where in p]
    assert len(hits) == 1, f"expected one problem at {where}, got {problems}"
    for w in words:
        assert w in hits[0], hits[0]
    return hits[0]


# --- front matter -------------------------------------------------------------------------------


def test_no_front_matter_means_draft_named_after_the_file(tmp_path):
    plan, problems = parse(tmp_path, "# Title\n\n### Task 1: One\n", name="auth")
    assert problems == []
    assert plan.name == "auth" and plan.status == "draft" and not plan.approved
    assert plan.agent == "" and plan.title == "Title"


def test_front_matter_sets_plan_name_status_and_agent(tmp_path):
    plan, problems = parse(
        tmp_path,
        """
        ---
        plan: login
        status: Approved
        agent: codex
        ---
        # Auth
        ### Task 1: One
        """,
        name="file-stem",
    )
    assert problems == []
    assert (plan.name, plan.status, plan.agent) == ("login", "approved", "codex")
    assert plan.approved


def test_plan_title_defaults_to_plan_name_without_level_one_heading(tmp_path):
    plan, _ = parse(tmp_path, "### Task 1: One\n", name="tidy")
    assert plan.title == "tidy"


def test_front_matter_status_other_than_draft_or_approved_is_an_error(tmp_path):
    plan, problems = parse(tmp_path, "---\nstatus: ready\n---\n### Task 1: One\n")
    only_problem(problems, plan.path, 1, "'ready'", "draft or approved")


def test_malformed_front_matter_yaml_names_the_file_line(tmp_path):
    plan, problems = parse(
        tmp_path,
        """
        ---
        status: approved
          bad: indent: here
        ---
        ### Task 1: One
        """,
    )
    only_problem(problems, plan.path, 3, "malformed front matter")
    assert plan.status == "draft"  # nothing from broken front matter is trusted


def test_non_mapping_front_matter_is_an_error(tmp_path):
    plan, problems = parse(tmp_path, "---\n- approved\n- auth\n---\n### Task 1: One\n")
    only_problem(problems, plan.path, 2, "front matter must be 'key: value'")
    assert [t.id for t in plan.tasks] == ["1"]


def test_unclosed_front_matter_is_reported_at_line_one(tmp_path):
    plan, problems = parse(tmp_path, "---\nstatus: approved\n### Task 1: One\n")
    only_problem(problems, plan.path, 1, "no closing '---'")
    assert not plan.approved


def test_task_line_numbers_count_front_matter_lines(tmp_path):
    plan, problems = parse(tmp_path, "---\nstatus: approved\n---\n# T\n\n### Task a: A\n\n### Task b: B\n")
    assert problems == []
    assert [(t.id, t.line) for t in plan.tasks] == [("a", 6), ("b", 8)]


# --- task headings ------------------------------------------------------------------------------


def test_task_headings_give_id_and_title(tmp_path):
    plan, problems = parse(
        tmp_path,
        """
        # Plan
        ### Task 1: Create the model
        ### Task 2-tests: Write tests
        ### Task api: Build the API
        ### Task 2.1: Dotted id
        """,
    )
    assert problems == []
    assert [(t.id, t.title) for t in plan.tasks] == [
        ("1", "Create the model"),
        ("2-tests", "Write tests"),
        ("api", "Build the API"),
        ("2.1", "Dotted id"),
    ]


@pytest.mark.parametrize(
    "wrapped",
    [
        "```\n### Task 9: In a backtick fence\n```\n",
        "~~~\n### Task 9: In a tilde fence\n~~~\n",
        "    ### Task 9: In an indented code block\n",
        "<!--\n### Task 9: In an HTML comment\n-->\n",
        "> ### Task 9: In a blockquote\n",
    ],
    ids=["backtick-fence", "tilde-fence", "indented-code", "html-comment", "blockquote"],
)
def test_task_heading_inside_code_comment_or_quote_is_not_a_task(tmp_path, wrapped):
    plan, problems = parse(tmp_path, "# Plan\n\n" + wrapped + "\n### Task 1: Real\n")
    assert problems == []
    assert [t.id for t in plan.tasks] == ["1"]


def test_task_heading_inside_a_task_fence_stays_in_that_tasks_description(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: Real\n\n```md\n### Task 2: Example\n```\n")
    assert problems == [] and [t.id for t in plan.tasks] == ["1"]
    assert "### Task 2: Example" in plan.tasks[0].description


def test_task_heading_at_other_levels_is_not_a_task_and_says_how_to_write_one(tmp_path):
    plan, problems = parse(tmp_path, "## Task 1: Level two\n\n#### Task 2: Level four\n")
    assert plan.tasks == ()
    only_problem(problems, plan.path, 1, "'## Task 1: Level two' is not a task heading", "'### Task 1: Level two'")
    only_problem(problems, plan.path, 3, "'#### Task 2: Level four'", "'### Task 2: Level four'")
    assert len(problems) == 2, "the headings say why there is no task"


# --- fields -------------------------------------------------------------------------------------


def test_every_field_is_parsed_into_the_task(tmp_path):
    plan, problems = parse(
        tmp_path,
        """
        ### Task 1: Base
        ### Task 2: All fields
        **Depends on:** 1
        **Type:** checkpoint:decision
        **Acceptance:** Migration runs
        **Verify:** `pytest tests/test_user.py`
        **Files:** src/a.py, `src/b.py`
        **Module:** src/models
        **Parallel-safe:** no
        **Priority:** 5
        **Agent:** codex
        **Timeout:** 45m
        **Options:** Postgres, SQLite
        """,
    )
    assert problems == []
    t = plan.task("2")
    assert t.depends_on == ("1",) and t.type == "checkpoint:decision" and t.is_checkpoint
    assert t.acceptance == "Migration runs" and t.verify == "pytest tests/test_user.py"
    assert t.files == ("src/a.py", "src/b.py") and t.module == "src/models"
    assert t.parallel_safe is False and t.priority == 5 and t.agent == "codex"
    assert t.timeout == 45 * 60 and t.options == ("Postgres", "SQLite")
    assert t.line_of("priority") == 10 and t.line_of("nonexistent") == 2


def test_task_without_fields_gets_defaults(tmp_path):
    plan, _ = parse(tmp_path, "### Task 1: Plain\nJust do it.\n")
    t = plan.tasks[0]
    assert (t.type, t.depends_on, t.parallel_safe, t.priority, t.timeout, t.agent) == ("auto", (), True, 0, None, "")
    assert not t.is_checkpoint and not t.hard_stop and t.script == ""


@pytest.mark.parametrize(
    "line, deps",
    [
        ("**Depends on:** none", ()),
        ("**Depends on:** None", ()),
        ("**Depends on:** 1", ("1",)),
        ("**Depends on:** 1, 2,3", ("1", "2", "3")),
        ("**Depends on:** Task 1, task 2", ("1", "2")),
        ("**Depends on:** `1`, `2`", ("1", "2")),
        ("**Blocked by:** 1, 2", ("1", "2")),
        ("**Depends on**: 2", ("2",)),
        ("- **Depends on:** 1", ("1",)),
    ],
)
def test_depends_on_forms(tmp_path, line, deps):
    plan, problems = parse(tmp_path, f"### Task 1: A\n### Task 2: B\n### Task 3: C\n{line}\n")
    assert problems == []
    assert plan.task("3").depends_on == deps


def test_field_names_are_case_insensitive(tmp_path):
    plan, problems = parse(
        tmp_path,
        """
        ### Task 1: A
        ### Task 2: B
        **DEPENDS ON:** 1
        **type:** Script
        **parallel-SAFE:** No

        ```sh
        echo hi
        ```
        """,
    )
    assert problems == []
    t = plan.task("2")
    assert t.depends_on == ("1",) and t.type == "script" and t.parallel_safe is False


def test_fields_may_start_after_a_blank_line_under_the_heading(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: A\n\n### Task 2: B\n\n**Depends on:** 1\n\nBody.\n")
    assert problems == []
    assert plan.task("2").depends_on == ("1",) and plan.task("2").description == "Body."


def test_unknown_field_directly_under_heading_is_an_error_naming_its_line(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: A\n**Depends on:** none\n**Owner:** alice\n")
    only_problem(problems, plan.path, 3, "unknown field '**Owner:**'", "Depends on")


def test_bold_label_inside_the_description_is_not_a_field(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: A\nIntro sentence.\n**Owner:** alice\n")
    assert problems == []
    assert plan.tasks[0].description == "Intro sentence.\n**Owner:** alice"


def test_description_is_the_text_after_the_fields_kept_as_written(tmp_path):
    plan, _ = parse(
        tmp_path,
        """
        ### Task 1: A
        **Module:** core

        First paragraph
        with *emphasis*.

        - a list item

        ### Task 2: B
        """,
    )
    assert plan.task("1").description == "First paragraph\nwith *emphasis*.\n\n- a list item"
    assert "Module" not in plan.task("1").description


def test_first_fenced_code_block_becomes_the_script(tmp_path):
    plan, problems = parse(
        tmp_path,
        """
        ### Task 1: Deploy
        **Type:** script

        ```sh
        echo one
        echo two
        ```

        ```sh
        echo not-me
        ```
        """,
    )
    assert problems == []
    assert plan.tasks[0].script == "echo one\necho two\n"


def test_checkpoint_marker_sets_hard_stop_and_is_not_in_the_description(tmp_path):
    plan, problems = parse(
        tmp_path,
        """
        ### Task 1: A
        Do the thing.
        <!-- checkpoint -->

        ### Task 2: B
        Other thing.
        """,
    )
    assert problems == []
    assert plan.task("1").hard_stop and not plan.task("2").hard_stop
    assert plan.task("1").description == "Do the thing."


def test_checkpoint_marker_inside_a_code_block_is_not_a_hard_stop(tmp_path):
    plan, _ = parse(tmp_path, "### Task 1: A\n\n```\n<!-- checkpoint -->\n```\n")
    assert plan.tasks[0].hard_stop is False


def test_plan_context_is_everything_outside_task_sections(tmp_path):
    plan, problems = parse(
        tmp_path,
        """
        ---
        status: approved
        ---
        # Auth

        ## Context
        Use bcrypt.

        ### Task 1: A
        Task one body.

        #### Sub-heading stays in task 1

        ### Task 2: B
        Task two body.

        ## Notes
        Deploy on Fridays.
        """,
    )
    assert problems == []
    assert plan.context == "# Auth\n\n## Context\nUse bcrypt.\n\n## Notes\nDeploy on Fridays."
    assert "status" not in plan.context and "body" not in plan.context
    assert "Sub-heading stays in task 1" in plan.task("1").description
    assert plan.task("2").description == "Task two body."


# --- errors -------------------------------------------------------------------------------------


def test_duplicate_task_id_is_an_error_at_the_second_heading(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: A\n\n### Task 1: Again\n")
    only_problem(problems, plan.path, 3, "duplicate task ID '1'", "first at line 1")


@pytest.mark.parametrize("bad_id", ["../x", "a/b", "-x", "_gate", ".hidden"])
def test_invalid_task_id_is_an_error(tmp_path, bad_id):
    plan, problems = parse(tmp_path, f"# P\n### Task {bad_id}: Escape\n")
    only_problem(problems, plan.path, 2, f"invalid task ID {bad_id!r}")
    assert plan.tasks == ()


def test_task_with_empty_title_is_an_error(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: A\n### Task 3:\n")
    only_problem(problems, plan.path, 2, "task 3 has no title")


def test_task_heading_without_colon_is_an_error(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: A\n\n### Task 3 Title\n")
    only_problem(problems, plan.path, 3, "needs a colon")
    assert [t.id for t in plan.tasks] == ["1"]


def test_unknown_type_is_an_error_on_the_type_line(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: A\n**Depends on:** none\n**Type:** wizard\n")
    only_problem(problems, plan.path, 3, "unknown Type 'wizard'", "checkpoint:human-verify")


@pytest.mark.parametrize("task_type", [t for t in TYPES if t not in ("script", "checkpoint:decision")])
def test_every_documented_type_is_accepted(tmp_path, task_type):
    plan, problems = parse(tmp_path, f"### Task 1: A\n**Type:** `{task_type}`\n")
    assert problems == [] and plan.tasks[0].type == task_type


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("Parallel-safe", "maybe", ("Parallel-safe", "'maybe'", "yes or no")),
        ("Priority", "high", ("Priority", "'high'", "whole number")),
        ("Timeout", "soon", ("Timeout", "'soon'", "not a duration")),
    ],
)
def test_bad_field_value_is_an_error_on_its_line(tmp_path, field, value, words):
    plan, problems = parse(tmp_path, f"### Task 1: A\n**Module:** x\n**{field}:** {value}\n")
    only_problem(problems, plan.path, 3, "task 1", *words)


def test_script_task_without_code_block_is_an_error(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: Deploy\n**Type:** script\nRun the deploy.\n")
    only_problem(problems, plan.path, 1, "script task 1 has no fenced code block")


def test_decision_checkpoint_without_options_is_an_error(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: Pick\n**Type:** checkpoint:decision\n")
    only_problem(problems, plan.path, 1, "decision checkpoint 1", "**Options:**")


@pytest.mark.parametrize("name", ["list", "run", "forget", "auto", "reset-dep"])
def test_plan_named_like_a_doit_command_is_an_error(tmp_path, name):
    plan, problems = parse(tmp_path, "### Task 1: A\n", name=name)
    only_problem(problems, plan.path, 1, f"plan name {name!r} is a doit command")


def test_plan_name_from_front_matter_can_avoid_a_doit_command_file_name(tmp_path):
    _, problems = parse(tmp_path, "---\nplan: listing\n---\n### Task 1: A\n", name="list")
    assert problems == []


@pytest.mark.parametrize("front, stem", [("", "my plan"), ("plan: a.b\n", "ok"), ("plan: ../up\n", "ok")])
def test_bad_plan_name_is_an_error(tmp_path, front, stem):
    text = (f"---\n{front}---\n" if front else "") + "### Task 1: A\n"
    plan, problems = parse(tmp_path, text, name=stem)
    only_problem(problems, plan.path, 1, "plan name", "letters, digits")


def test_all_problems_in_a_plan_are_reported_at_once(tmp_path):
    plan, problems = parse(
        tmp_path,
        """
        ### Task 1: A
        **Priority:** urgent

        ### Task 1: Duplicate

        ### Task 2:
        """,
    )
    assert len(problems) == 3, problems
    only_problem(problems, plan.path, 2, "Priority")
    only_problem(problems, plan.path, 4, "duplicate")
    only_problem(problems, plan.path, 6, "no title")


# --- text hash ----------------------------------------------------------------------------------

BASE = """
### Task 0: Dep
### Task 1: Title
**Depends on:** 0
**Type:** auto
**Acceptance:** works
**Verify:** make check
**Priority:** 1
**Module:** core
**Timeout:** 10m

Description.
"""


def hash_of(tmp_path, text):
    plan, problems = parse(tmp_path, text)
    assert problems == []
    return plan.task("1").text_hash


@pytest.mark.parametrize(
    "old, new",
    [
        ("Task 1: Title", "Task 1: Renamed"),
        ("**Type:** auto", "**Type:** checkpoint:human-verify"),
        ("Description.", "Description, changed."),
        ("**Acceptance:** works", "**Acceptance:** works fast"),
        ("**Verify:** make check", "**Verify:** make test"),
    ],
    ids=["title", "type", "description", "acceptance", "verify"],
)
def test_text_hash_changes_with_the_tasks_own_words(tmp_path, old, new):
    assert hash_of(tmp_path, BASE) != hash_of(tmp_path, BASE.replace(old, new))


@pytest.mark.parametrize(
    "old, new",
    [
        ("**Depends on:** 0", "**Depends on:** none"),
        ("**Priority:** 1", "**Priority:** 9"),
        ("**Module:** core", "**Module:** api"),
        ("**Timeout:** 10m", "**Timeout:** 2h"),
        ("Description.", "Description.\n<!-- checkpoint -->"),
    ],
    ids=["depends-on", "priority", "module", "timeout", "checkpoint-marker"],
)
def test_text_hash_ignores_wiring_and_markers(tmp_path, old, new):
    assert hash_of(tmp_path, BASE) == hash_of(tmp_path, BASE.replace(old, new))


def test_text_hash_ignores_a_checkpoint_marker_between_paragraphs(tmp_path):
    with_marker = BASE.replace("Description.", "Description.\n\n<!-- checkpoint -->\n\nMore.")
    without = BASE.replace("Description.", "Description.\n\nMore.")
    assert hash_of(tmp_path, with_marker) == hash_of(tmp_path, without)


def test_checkpoint_marker_above_the_fields_keeps_the_fields(tmp_path):
    plan, problems = parse(
        tmp_path,
        """\
        ### Task 2: Gate me
        <!-- checkpoint -->
        **Depends on:** 1
        **Verify:** true

        Body.

        ### Task 1: First
        """,
    )
    assert problems == []
    task = plan.task("2")
    assert task.hard_stop and task.depends_on == ("1",) and task.verify == "true"
    assert task.description == "Body."


def test_unknown_front_matter_key_is_an_error_naming_its_line(tmp_path):
    _, problems = parse(
        tmp_path,
        """\
        ---
        status: approved
        agnet: claude
        ---
        ### Task 1: x
        """,
    )
    assert len(problems) == 1 and "p.md:3:" in problems[0] and "agnet" in problems[0]


def test_a_description_reaches_the_brief_byte_for_byte_blank_lines_in_code_blocks_included(tmp_path):
    code = "```python\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n```"
    plan, problems = parse(tmp_path, BASE.replace("Description.", f"Intro.\n\n{code}\n\n    indented\n\nEnd."))
    assert problems == []
    assert plan.task("1").description == f"Intro.\n\n{code}\n\n    indented\n\nEnd."


def test_keeping_blank_lines_does_not_change_the_hash_of_a_task_written_before(tmp_path):
    """The hash as Hive computed it before descriptions kept their blank lines: a Hive
    upgrade must not re-open finished tasks."""
    import hashlib
    import json

    text = BASE.replace("Description.", "Intro.\n\n\n\nMore.")
    task = parse(tmp_path, text)[0].task("1")
    old = [task.title, task.type, "Intro.\n\nMore.", task.acceptance, task.verify]
    assert task.text_hash == hashlib.sha256(json.dumps(old).encode()).hexdigest()[:16]


def test_a_decisions_option_list_under_its_fields_is_description_as_the_docs_write_it(tmp_path):
    """docs/checkpoints.md: `- **Postgres:** pros` lines right under `**Options:**` (issue 43)."""
    plan, problems = parse(
        tmp_path,
        """
        ### Task 1: Pick a database
        **Type:** checkpoint:decision
        **Options:** Postgres, SQLite, Files
        - **Postgres:** robust, needs a server
        - **SQLite:** simple
        - **Files:** an option named like a field
        """,
    )
    assert problems == []
    task = plan.task("1")
    assert task.options == ("Postgres", "SQLite", "Files") and task.files == ()
    assert task.description.splitlines() == [
        "- **Postgres:** robust, needs a server",
        "- **SQLite:** simple",
        "- **Files:** an option named like a field",
    ]


def test_a_misspelt_field_is_an_error_that_names_the_field_meant(tmp_path):
    plan, problems = parse(tmp_path, "### Task 1: A\n**Typ:** script\n\n```sh\necho\n```\n")
    only_problem(problems, plan.path, 2, "unknown field '**Typ:**' — did you mean '**Type:**'?")
    plan, problems = parse(tmp_path, "### Task 1: A\n- **Depend on:** 2\n")
    only_problem(problems, plan.path, 2, "did you mean '**Depends on:**'?")


def test_a_plans_problems_are_listed_top_to_bottom(tmp_path):
    """Issue 43: the parser's and the graph's problems came out in the order the checks ran."""
    from hive.plan.graph import load_plan
    from hive.settings.config import Config

    path = tmp_path / "p.md"
    path.write_text("### Task 1: A\n**Depends on:** 9\n\n### Task 2: B\n**Typ:** x\n\n### Task 1: again\n")
    _, _, problems = load_plan(path, Config())
    lines = [int(p.split(":")[1]) for p in problems]
    assert lines == sorted(lines) and len(lines) >= 3, problems
