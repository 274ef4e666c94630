"""Checks of pull-request mode (`[merge] mode = "pr"`), each with its fix: the user's token (where
it comes from, never its value), the repository it names and whether the token reaches it, push
access (the token's, for the PR, and the user's own git credentials, for the branch), and the
base branch PRs target."""

from __future__ import annotations

from pathlib import Path

from hive import forges
from hive.checks import Check, fail, ok
from hive.errors import CommandError, HiveError
from hive.forges import token
from hive.forges.base import Forge
from hive.forges.http import ForgeError
from hive.settings.config import Config
from hive.store.paths import Paths


def forge_checks(root: Path, config: Config, state: Path) -> list[Check]:
    if not config.pr_mode:
        return []
    found = token.find()
    if not found:
        return [
            fail(
                "forge token",
                "none: GH_TOKEN and GITHUB_TOKEN are unset and `gh auth token` gives none",
                "export GH_TOKEN=<a token that may push and open pull requests>, or `gh auth login`",
            )
        ]
    checks = [ok("forge token", f"from {found.source} (Hive's own requests only: no agent or check sees it)")]
    url = forges.remote_url(root, config.forge_remote)
    if not url:
        return checks + [
            fail(
                "forge remote",
                f"this repository has no remote {config.forge_remote!r}",
                f"`git remote add {config.forge_remote} <the repository's URL>`, or set [forge] remote",
            )
        ]
    repository = forges.repository_for(config, url)
    if not repository:
        return checks + [
            fail(
                "forge repository",
                f"remote {config.forge_remote!r} ({url}) names no owner/name",
                'set [forge] repository = "owner/name" in .hive/config.toml',
            )
        ]
    try:
        forge = forges.make(config, repository, found.value, state)
    except HiveError as e:
        return checks + [
            fail("forge kind", str(e), '[forge] kind = "github" (GitHub Enterprise Server too, by api_url)')
        ]
    return checks + _reached(root, config, forge, repository)


def _reached(root: Path, config: Config, forge: Forge, repository: str) -> list[Check]:
    try:
        repo = forge.repo()
    except ForgeError as e:
        why = "not found, or the token cannot see it" if e.status == 404 else str(e)
        return [
            fail(
                "forge repository",
                f"{repository} on {config.forge_api_url}: {why}",
                "check [forge] repository and api_url, and that the token may read the repository",
            )
        ]
    except HiveError as e:
        return [fail("forge repository", f"{repository}: {e}", "check [forge] api_url and your network")]
    checks = [ok("forge repository", f"{repo.full_name} ({repo.url or config.forge_api_url})")]
    if repo.can_push:
        checks.append(ok("forge push access", "the token may push and open pull requests"))
    else:
        checks.append(
            fail(
                "forge push access",
                f"the token's user may not push to {repo.full_name}",
                "use a token of a collaborator with write access (fine-grained: Contents and Pull requests, "
                "read and write)",
            )
        )
    checks.append(_git_reaches(root, config))
    try:
        there = forge.branch_exists(config.base_branch)
    except ForgeError as e:
        there, problem = False, str(e)
    else:
        problem = "" if there else f"{repo.full_name} has no branch {config.base_branch!r}"
    if there:
        checks.append(ok("forge base branch", f"{config.base_branch!r}: pull requests target it"))
    else:
        default = f" (its default branch is {repo.default_branch!r})" if repo.default_branch else ""
        checks.append(
            fail("forge base branch", problem + default, 'set [forge] base = "<the branch PRs should target>"')
        )
    return checks


def _git_reaches(root: Path, config: Config) -> Check:
    """Hive pushes with the user's own git credentials: does git reach the remote with them? Its
    fetch is a run's (one at a time: a run going on may be fetching the same ref)."""
    from hive.engine.merge.forge import fetch_base

    try:
        fetch_base(root, config.forge_remote, config.base_branch, Paths(root).merge_lock)
    except CommandError as e:
        said = " ".join(e.output.split())[-300:]
        return fail(
            "forge git access",
            f"`git fetch {config.forge_remote} {config.base_branch}` failed: {said}",
            "set up your git credentials for the remote (ssh key or credential helper), as for `git push`",
        )
    return ok("forge git access", f"git reaches {config.forge_remote!r} with your own credentials")
