"""The forges Hive opens pull requests on and reads issues from, one module each behind one
protocol (`base.Forge`); the registry (FORGES) picks one by `[forge] kind`.

- `base`     the protocol and the records its answers come in
- `http`     the REST client: conditional requests, the shared rate-limit budget, the token kept in
- `token`    where the user's token comes from (GH_TOKEN, GITHUB_TOKEN, `gh auth token`)
- `github`   GitHub and GitHub Enterprise Server
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from hive.errors import HiveError
from hive.forges import token
from hive.forges.base import Forge
from hive.settings.config import Config

NO_TOKEN = (
    'no forge token ([merge] mode = "pr"): set GH_TOKEN (or GITHUB_TOKEN), or log in with `gh auth login`; '
    "Hive uses it for its own requests, never an agent"
)

Maker = Callable[[str, str, str, Path], Forge]  # (api_url, repository, token, state folder)


def _github(api_url: str, repository: str, value: str, state: Path) -> Forge:
    from hive.forges.github import GitHub

    return GitHub(api_url, repository, value, state)


FORGES: dict[str, Maker] = {"github": _github}

# git@github.com:owner/name.git, https://github.com/owner/name(.git), ssh://git@host[:port]/owner/name.git
_REMOTE = re.compile(r"(?:[:/])(?P<owner>[\w.-]+)/(?P<name>[\w.-]+?)(?:\.git)?/?$")


def repository_of(url: str) -> str:
    """owner/name from a remote's URL ("" for one that names none: a local path)."""
    if "://" not in url and ":" not in url:
        return ""
    found = _REMOTE.search(url.strip())
    return f"{found['owner']}/{found['name']}" if found else ""


def connect(config: Config, root: Path, state: Path) -> Forge:
    """The forge `[forge]` names, reached with the user's token; a HiveError that says what to set
    when there is no token, or no repository to talk about."""
    found = token.find()
    if not found:
        raise HiveError(NO_TOKEN)
    repository = repository_for(config, remote_url(root, config.forge_remote))
    if not repository:
        raise HiveError(
            f'cannot tell which repository on the forge: set [forge] repository = "owner/name" in '
            f".hive/config.toml (remote {config.forge_remote!r} names none)"
        )
    return make(config, repository, found.value, state)


def make(config: Config, repository: str, value: str, state: Path) -> Forge:
    """The forge of `[forge] kind` for `repository`, with the token `value` (a HiveError for a
    kind Hive does not know)."""
    if config.forge_kind not in FORGES:
        raise HiveError(f"[forge] kind = {config.forge_kind!r} is not a forge Hive knows; known: {', '.join(FORGES)}")
    return FORGES[config.forge_kind](config.forge_api_url, repository, value, state)


def repository_for(config: Config, url: str) -> str:
    """owner/name: `[forge] repository`, else what the remote's `url` names ("" if neither)."""
    return config.forge_repository or repository_of(url)


def remote_url(root: Path, remote: str) -> str:
    """The URL of the repository's `remote` ("" when it has none)."""
    from hive.adapters import git

    return git.git(root, "remote", "get-url", remote, check=False).stdout.strip()
