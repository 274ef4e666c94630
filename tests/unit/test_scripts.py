"""hive/scripts.py: a helper module run as its own process, isolated, from its cached bytecode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hive import scripts


def _helper(folder: Path) -> Path:
    """A helper beside a file named like a module of the standard library's."""
    (folder / "json.py").write_text("raise SystemExit('the folder hid the standard library')\n")
    helper = folder / "helper.py"
    helper.write_text(
        "import json, sys\n"
        "def main(args):\n"
        "    print(json.dumps({'args': args, 'path': sys.path[-1], 'site': 'site' in sys.modules}))\n"
        "    return 3\n"
    )
    return helper


def test_a_helper_gets_its_arguments_and_gives_its_exit_status(tmp_path: Path):
    helper = _helper(tmp_path)
    run = subprocess.run([*scripts.argv(helper), "a b", "--c"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 3, run.stderr
    assert run.stdout == f'{{"args": ["a b", "--c"], "path": "{tmp_path.resolve()}", "site": false}}\n'


def test_a_helper_starts_from_its_cached_bytecode(tmp_path: Path):
    helper = _helper(tmp_path)
    subprocess.run([*scripts.argv(helper)], capture_output=True, check=False)
    assert [p.name for p in (tmp_path / "__pycache__").iterdir()] == [f"helper.{sys.implementation.cache_tag}.pyc"]
