"""`hive init`: make a git repo ready for Hive without committing anything."""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from hive.adapters import git
from hive.adapters.worktrees import ensure_ignored_dir
from hive.cli.main import doit_hint
from hive.configfile import config_toml
from hive.errors import HiveError
from hive.store.files import atomic_write
from hive.store.paths import LOCAL_EXCLUDES, Paths

# what a dodo.py that hands over to Hive contains (older ones import hive.compiler)
DODO_MARKERS = ("hive.dodo import load_dodo", "hive.compiler import load_dodo")
HIVE_IGNORE = (
    "# created by Hive: runtime state stays out of git; config.toml may be committed\n*\n!.gitignore\n!config.toml\n"
)


def init(cwd: Path) -> tuple[Path, list[str]]:
    """Set up the repo containing `cwd`; returns its root and what was done. Idempotent."""
    if not git.is_repo(cwd):
        raise HiveError(f"{cwd}: not a git repository; run `git init` first (Hive keeps every task's work in git)")
    root = git.toplevel(cwd)
    paths = Paths(root)
    done = []
    dodo = root / "dodo.py"
    if not dodo.exists():
        atomic_write(dodo, resources.files("hive.templates").joinpath("dodo.py").read_text())
        done.append("wrote dodo.py (hands over to Hive)")
    elif not any(m in dodo.read_text() for m in DODO_MARKERS):
        raise HiveError(
            f"{dodo} exists and is not Hive's; add these lines to it:\n"
            f"    from hive.dodo import load_dodo\n    globals().update(load_dodo(__file__))"
        )
    if not paths.plans.is_dir():
        paths.plans.mkdir()
        done.append("created plans/ (write your plans here)")
    if not paths.config.exists():
        branch = git.current_branch(root) or "main"
        atomic_write(paths.config, config_toml(branch))
        done.append(f"wrote .hive/config.toml (main branch: {branch})")
    if not paths.ignore_file.exists():
        atomic_write(paths.ignore_file, HIVE_IGNORE)
        done.append("made .hive/ runtime files git-ignored")
    if not (root / "worktrees" / ".gitignore").exists():
        ensure_ignored_dir(root / "worktrees")
        done.append("created worktrees/ (git-ignored)")
    if git.exclude_locally(root, LOCAL_EXCLUDES):
        done.append("git-ignored .doit.db and dodo.py's bytecode locally (.git/info/exclude)")
    return root, done


def run(_args: argparse.Namespace) -> int:
    root, done = init(Path.cwd())
    for line in done or ["already set up; nothing to do"]:
        print(f"hive: {line}")
    print(f"hive: ready in {root}: write a plan in plans/, `hive approve plans/<file>.md`, then `doit`")
    for line in doit_hint(root):
        print(f"hive: {line}")
    return 0
