"""Start-of-run bookkeeping, in the main process before any task runs."""
from __future__ import annotations

from pathlib import Path

from hive import git
from hive.config import load_repo_config


def start_run(root: Path) -> list[str]:
    """Record `refs/hive/run-start` (what main was before this run, for rollback).
    Returns lines to tell the user."""
    config = load_repo_config(root)
    main = f"refs/heads/{config.main_branch}"
    head = git.try_rev_parse(root, main)
    if not head:
        return [f"warning: branch {config.main_branch!r} does not exist; set [merge] main_branch "
                f"in .hive/config.toml"]
    git.update_ref(root, "refs/hive/run-start", head)
    return []
