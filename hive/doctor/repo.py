"""Checks of the machine and the repository, whatever agent runs: git and tmux are
there (and which versions), commits have an author, the main branch exists, and
the user's checkout is in a state Hive can merge into."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from hive.adapters import git, proc, tmux
from hive.checks import Check, fail, ok, warn
from hive.errors import CommandError

VERSION_TIMEOUT = 10.0
_SHOWN_FILES = 5
# An operation in progress in the user's checkout, by the file git keeps for it.
_IN_PROGRESS = (
    ("MERGE_HEAD", "a merge", "git merge --continue` or `git merge --abort"),
    ("rebase-merge", "a rebase", "git rebase --continue` or `git rebase --abort"),
    ("rebase-apply", "a rebase or `git am`", "git rebase --abort` or `git am --abort"),
    ("CHERRY_PICK_HEAD", "a cherry-pick", "git cherry-pick --continue` or `git cherry-pick --abort"),
    ("REVERT_HEAD", "a revert", "git revert --continue` or `git revert --abort"),
)


def tool_checks(tmux_here: bool) -> list[Check]:
    """git, and tmux where this machine runs the agents in it."""
    checks = [_tool("git", "git --version", git.version, "sudo apt-get install -y git")]
    if tmux_here:
        checks.append(_tool("tmux", "tmux -V", tmux.version, "sudo apt-get install -y tmux"))
    return checks


def _tool(name: str, shown: str, version: Callable[[float], proc.Result], install: str) -> Check:
    if shutil.which(name) is None:
        return fail(name, f"`{name}` is not on PATH", f"install it (e.g. `{install}`)")
    try:
        result = version(VERSION_TIMEOUT)
    except CommandError as e:
        return fail(name, f"`{shown}` failed: {e.output.strip()}", f"reinstall it (e.g. `{install}`)")
    if result.code != 0:
        return fail(name, f"`{shown}` exited with {result.code}", f"reinstall it (e.g. `{install}`)")
    return ok(name, result.output.splitlines()[0] if result.output else "(no version printed)")


def repo_checks(root: Path, main_branch: str) -> list[Check]:
    if shutil.which("git") is None:
        return []  # tool_checks says so; nothing below can run
    if not git.is_repo(root):
        return [fail("repository", f"{root} is not a git repository", "run `git init` there, then `hive init`")]
    return [identity_check(root), main_branch_check(root, main_branch), checkout_check(root)]


def identity_check(root: Path) -> Check:
    """Agents commit in their worktrees: without an identity every `git commit` fails
    ("Please tell me who you are"). `git var` resolves it exactly as a commit does —
    config, GIT_AUTHOR_*/GIT_COMMITTER_* and EMAIL included."""
    idents = []
    for role in ("AUTHOR", "COMMITTER"):
        result = git.git(root, "var", f"GIT_{role}_IDENT", check=False)
        if result.code != 0:
            return fail(
                "git identity",
                f"git cannot tell who commits ({role.lower()} unknown)",
                'git config --global user.name "Your Name" && git config --global user.email you@example.com '
                "(or export GIT_AUTHOR_NAME/EMAIL and GIT_COMMITTER_NAME/EMAIL)",
            )
        idents.append(result.stdout.strip().rsplit(" ", 2)[0])  # drop the timestamp and zone
    author, committer = idents
    return ok("git identity", author if author == committer else f"author {author}, committer {committer}")


def main_branch_check(root: Path, main_branch: str) -> Check:
    if git.branch_exists(root, main_branch):
        return ok("main branch", f"{main_branch!r} exists")
    known = sorted(git.branches(root, ""))
    return fail(
        "main branch",
        f"branch {main_branch!r} does not exist"
        + (f" (branches: {', '.join(known[:10])})" if known else " (no commits yet)"),
        "set [merge] main_branch in .hive/config.toml to the branch tasks merge into"
        if known
        else "make a first commit",
    )


def checkout_check(root: Path) -> Check:
    """Hive merges into the user's checkout by fast-forward: git refuses while a merge
    or rebase is half done, and refuses to overwrite uncommitted changes."""
    dirs = git.worktree_dirs(root)
    if dirs is not None:
        for marker, what, fix in _IN_PROGRESS:
            if (dirs[1] / marker).exists():
                return fail("checkout", f"{what} is in progress in {root}", f"finish or abort it (`{fix}`)")
    changed = [line[3:] for line in git.status(root) if not line.startswith("??")]
    if changed:
        shown = ", ".join(changed[:_SHOWN_FILES]) + (
            f", … ({len(changed)} files)" if len(changed) > _SHOWN_FILES else ""
        )
        return warn(
            "checkout",
            f"uncommitted changes to tracked files: {shown}",
            "commit or stash them: a merge that would overwrite them is refused and its task blocked",
        )
    return ok("checkout", "no merge or rebase in progress, no uncommitted changes to tracked files")
