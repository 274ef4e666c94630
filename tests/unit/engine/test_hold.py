"""hive/engine/hold.py: which paths of a change are Hive's own, and why a change waits (issue 37)."""

from __future__ import annotations

from hive.engine import hold
from hive.settings.config import Config

PROTECTED = Config().protected


def test_the_defaults_protect_hives_controls_and_the_worktrees_folder():
    assert PROTECTED == ("dodo.py", "doit.cfg", ".hive/", "plans/", "worktrees/")


def test_a_change_to_a_control_a_rename_away_or_a_link_in_a_folders_place_is_caught():
    paths = ["src/app.py", "dodo.py", ".hive/config.toml", "plans/x.md", "plans", "worktrees/w1/x", "docs/plans.md"]
    assert hold.touched(PROTECTED, paths) == [".hive/config.toml", "dodo.py", "plans", "plans/x.md", "worktrees/w1/x"]


def test_patterns_and_folders_a_user_adds():
    paths = [".github/workflows/ci.yml", "poetry.lock", "Makefile", "src/Makefile"]
    assert hold.touched((".github/", "*.lock", "./Makefile"), paths) == [
        ".github/workflows/ci.yml",
        "Makefile",
        "poetry.lock",
    ]


def test_the_reason_names_the_files_and_the_limit():
    why = hold.reason(["dodo.py"], [("data.bin", 612_000_000)], 50)
    assert why == "changes Hive's own files: dodo.py; adds files over [merge] max_file_mb = 50: data.bin (612.0 MB)"
    assert hold.reason([], [], 50) == ""


def test_dodos_protection_covers_the_doit_table_of_pyproject():
    assert hold.guards_doit(PROTECTED) and not hold.guards_doit((".hive/",))
    before = '[project]\nname = "x"\n'
    assert hold.doit_table(before) == hold.doit_table(before + "[tool.ruff]\nline-length = 1\n")
    assert hold.doit_table(before) != hold.doit_table(before + '[tool.doit.plugins.command]\nx = "evil:Cmd"\n')
