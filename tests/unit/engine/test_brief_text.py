"""The brief (hive/templates/context.md.j2) tells an agent every verb it has: how to finish,
`hive note`, `hive discover` for work outside its task, and — when no Verify checks its task —
to run the project's own tests before `hive done`."""

from __future__ import annotations

from pathlib import Path

from hive.engine.brief import ContextInput, render_context
from hive.plan.parser import parse_plan

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


def _brief(tmp_path: Path, task_id: str) -> str:
    path = tmp_path / "shop.md"
    path.write_text(PLAN)
    plan, problems = parse_plan(path)
    assert problems == []
    return render_context(
        ContextInput(f"shop:{task_id}", 1, "hive/shop-1-a1", "main", "AGENTS.md", plan.task(task_id), plan)
    )


def test_the_brief_names_every_verb_an_agent_has(tmp_path: Path):
    brief = _brief(tmp_path, "1")
    for verb in ("hive done", "hive blocked --reason", "hive too-big --reason", "hive note", "hive discover"):
        assert verb in brief, verb
    assert 'hive discover "title" --details' in brief


def test_only_a_task_no_verify_checks_is_told_to_run_the_projects_tests(tmp_path: Path):
    told = "run the project's own tests"
    assert told not in _brief(tmp_path, "1")  # its Verify is named instead
    assert "pytest -q tests/test_cart.py" in _brief(tmp_path, "1")
    assert told in _brief(tmp_path, "2")
