"""`hive --version` and every internal error in `.hive/hive.log` carry the versions a bug
report needs: Hive's distribution, doit, git, tmux and Python (issue 21)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from hive import __version__, about
from hive.buglog import record_bug


def test_hive_version_names_the_distribution_doit_git_tmux_and_python():
    r = subprocess.run([sys.executable, "-m", "hive", "--version"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    git_says = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]
    tmux_says = subprocess.run(["tmux", "-V"], capture_output=True, text=True).stdout.split()[-1]
    lines = r.stdout.splitlines()
    assert lines[:4] == [
        f"hive-agents {__version__}",
        f"doit {metadata.version('doit')}",
        f"git {git_says}",
        f"tmux {tmux_says}",
    ]
    assert lines[4].startswith(f"Python {sys.version.split()[0]} (")


def test_a_missing_tool_is_said_not_found(tmp_path: Path, monkeypatch):
    only_git = tmp_path / "bin"
    only_git.mkdir()
    os.symlink(shutil.which("git") or "git", only_git / "git")
    with monkeypatch.context() as m:  # undone before the fixtures' teardown runs tmux
        m.setenv("PATH", str(only_git))
        found = about.versions()
    assert found["tmux"] == "not found"
    assert found["git"] == subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]


def test_an_internal_error_in_the_log_carries_the_versions(tmp_path: Path):
    log = tmp_path / ".hive" / "hive.log"
    try:
        raise RuntimeError("a bug")
    except RuntimeError:
        where = record_bug(log, "hive status")
    assert where == f"traceback in {log}"
    text = log.read_text()
    header, versions, *trace = text.splitlines()
    assert header.endswith(" hive status")
    assert versions.startswith(f"hive-agents {__version__}, doit {metadata.version('doit')}, git ")
    assert "tmux " in versions and "Python " in versions
    assert trace[0] == "Traceback (most recent call last):" and trace[-1] == "RuntimeError: a bug"
