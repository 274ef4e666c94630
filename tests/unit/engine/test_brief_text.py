"""The brief (hive/templates/context.md.j2) tells an agent every verb it has: how to finish,
`hive note`, `hive discover` for work outside its task, `hive ask` for what only a human can
decide (with when not to), and — when no Verify checks its task — to run the project's own
tests before `hive done`; a continuation has every question asked so far and its answer."""

from __future__ import annotations

from pathlib import Path

from hive.engine.brief import ContextInput, render_context
from hive.plan.parser import parse_plan
from hive.store.questions import Question

PLAN = """\
---
status: approved
---
# Shop

### Task 1: Checked
**Verify:** pytest -q tests/test_cart.py
Add the cart.

### Task 2: Unchecked
Write the about page.
"""


def _brief(tmp_path: Path, task_id: str, **more: object) -> str:
    path = tmp_path / "shop.md"
    path.write_text(PLAN)
    plan, problems = parse_plan(path)
    assert problems == []
    return render_context(
        ContextInput(f"shop:{task_id}", 1, "hive/shop-1-a1", "main", "AGENTS.md", plan.task(task_id), plan, **more)  # type: ignore[arg-type]
    )


def test_the_brief_names_every_verb_an_agent_has(tmp_path: Path):
    brief = _brief(tmp_path, "1")
    verbs = ("hive done", "hive blocked --reason", "hive too-big --reason", "hive note", "hive discover", "hive ask")
    for verb in verbs:
        assert verb in brief, verb
    assert 'hive discover "title" --details' in brief


def test_only_a_task_no_verify_checks_is_told_to_run_the_projects_tests(tmp_path: Path):
    told = "run the project's own tests"
    assert told not in _brief(tmp_path, "1")  # its Verify is named instead
    assert "pytest -q tests/test_cart.py" in _brief(tmp_path, "1")
    assert told in _brief(tmp_path, "2")


def test_hive_ask_says_when_to_ask_and_when_not(tmp_path: Path):
    brief = _brief(tmp_path, "1")
    assert 'hive ask "question" [--options "A,B"] [--details "..."]' in brief
    assert "a credential or access you lack" in brief and "Never\nask what you can find out yourself" in brief
    assert "commit your work, `hive note` where you are, and exit" in brief
    assert "hive ask" not in _brief(tmp_path, "1", can_ask=False), "an agent on a Ray node cannot reach its human yet"


def test_every_question_so_far_and_its_answer_is_in_the_brief(tmp_path: Path):
    asked = (
        Question(1, 1, "Which database?", ("Postgres", "SQLite"), "both work", 10.0, "small data", "SQLite", 20.0),
        Question(2, 2, "Which port?", asked_at=30.0),
    )
    brief = _brief(tmp_path, "2", questions=asked)
    assert "## Questions asked so far, and your human's answers (follow them)" in brief
    assert (
        "- (attempt 1) **Which database?** (options: Postgres, SQLite) — both work\n  Answer: SQLite — small data\n"
        "- (attempt 2) **Which port?**\n  Not answered yet.\n"
    ) in brief
    assert "Questions asked so far" not in _brief(tmp_path, "2")


def test_what_hive_holds_back_reads_as_one_sentence(tmp_path: Path):
    """Issue 43: "adds a file over 50 MB,is not merged"."""
    brief = _brief(tmp_path, "1", protected=("dodo.py",), max_file_mb=50)
    assert "adds a file over 50 MB, is not\nmerged: it waits for a human." in brief, brief


def test_the_brief_says_where_the_work_lands(tmp_path: Path):
    """Local mode merges into main; pull-request mode opens a PR the agent never pushes itself."""
    local = _brief(tmp_path, "1", protected=("dodo.py",))
    assert "verifies your work and merges your branch into `main`.\n\nLeave Hive's own files alone" in local
    pr = _brief(tmp_path, "1", protected=("dodo.py",), pull_request_to="develop")
    assert "opens a pull request against `develop` on the\nteam's forge (you never push).\n\nLeave" in pr
    bare = _brief(tmp_path, "1")
    assert "merges your branch into `main`.\n\n## The task" in bare
