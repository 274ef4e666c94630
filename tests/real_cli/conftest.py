"""Fixtures for tests that run the real agent CLIs against the scripted model server.

The CLIs are installed on first use into a cache outside the repository (tests/clis.py); a
failed install fails the tests that need it. Session-scoped, so that the install (which
writes under the real home) happens before the autouse `isolated` fixture of
tests/conftest.py takes its snapshot of the real home and points $HOME at a temp dir.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from clis import CLIS, cli_path
from model_server import ModelServer

API_KEY = "test-key"


@pytest.fixture(scope="session")
def cli_paths() -> dict[str, Path]:
    """name -> executable, for claude, codex, gemini and aider (installing them if needed)."""
    return {name: cli_path(name) for name in CLIS}


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with ModelServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def home(isolated: Path) -> Path:
    """The temp $HOME that tests/conftest.py's `isolated` fixture set."""
    path = Path(os.environ["HOME"])
    assert path.is_relative_to(isolated)
    return path


@pytest.fixture
def git_repo(isolated: Path) -> Path:
    """A git repo with one commit on main (the git identity comes from `isolated`)."""
    root = isolated / "work"
    root.mkdir()
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "initial commit"]):
        if args[0] == "add":
            (root / "README.md").write_text("# project\n")
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return root
