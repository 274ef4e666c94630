"""`hive init` prepares a repo without committing anything, and twice is harmless."""

from __future__ import annotations

import subprocess
import sys

from conftest import git


def _init(cwd):
    return subprocess.run([sys.executable, "-m", "hive", "init"], cwd=cwd, capture_output=True, text=True)


def test_init_sets_up_the_repo_without_committing_and_is_idempotent(isolated):
    root = isolated / "proj"
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    (root / "a.txt").write_text("a\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first")
    head = git(root, "rev-parse", "HEAD")
    r = _init(root)
    assert r.returncode == 0, r.stderr
    assert (root / "dodo.py").read_text().count("load_dodo") == 2
    assert (root / "plans").is_dir()
    config = (root / ".hive" / "config.toml").read_text()
    assert 'main_branch = "trunk"' in config
    assert git(root, "rev-parse", "HEAD") == head, "init commits nothing"
    (root / "worktrees" / "w1-x").mkdir()
    (root / "worktrees" / "w1-x" / "f").write_text("x")
    (root / ".hive" / "state").mkdir()
    (root / ".hive" / "state" / "s.json").write_text("{}")
    (root / ".doit.db").write_text("")
    (root / ".doit.db-journal").write_text("")  # what a killed doit leaves beside it
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "dodo.cpython-311.pyc").write_bytes(b"")  # doit imported dodo.py
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    assert "worktrees" not in status and ".hive/state" not in status and ".doit.db" not in status
    assert "__pycache__" not in status
    assert "dodo.py" in status and ".hive/config.toml" in status, "what the user may commit stays visible"
    before = {p: p.read_bytes() for p in [root / "dodo.py", root / ".hive" / "config.toml"]}
    r = _init(root)
    assert r.returncode == 0 and "nothing to do" in r.stdout
    assert {p: p.read_bytes() for p in before} == before


def test_init_outside_git_is_a_clear_error(isolated):
    r = _init(isolated)
    assert r.returncode == 3
    assert "not a git repository" in r.stderr and "Traceback" not in r.stderr


def test_init_refuses_to_overwrite_a_foreign_dodo_py(isolated):
    root = isolated / "proj"
    root.mkdir()
    git(root, "init", "-q")
    (root / "dodo.py").write_text("def task_x():\n    return {'actions': ['echo']}\n")
    r = _init(root)
    assert r.returncode == 3
    assert "load_dodo" in r.stderr
    assert "task_x" in (root / "dodo.py").read_text()


def test_the_repositorys_own_dodo_py_is_the_same_hand_over():
    from pathlib import Path

    here = Path(__file__).resolve().parents[2]
    assert (here / "dodo.py").read_text() == (here / "hive" / "templates" / "dodo.py").read_text()
