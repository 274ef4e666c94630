"""The user's forge token, where the user keeps it: GH_TOKEN, GITHUB_TOKEN, else `gh auth token`
when GitHub's CLI is installed and logged in. Hive reads it for its own requests only: it is
taken out of every environment an agent or a check gets (hive.adapters.proc.AGENT_SCRUBBED) and is
never printed — what Hive says of it is where it came from."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

VARIABLES = ("GH_TOKEN", "GITHUB_TOKEN")
GH_TIMEOUT = 10.0


@dataclass(frozen=True)
class Token:
    value: str = ""
    source: str = ""  # "GH_TOKEN", "GITHUB_TOKEN", "gh auth token"; "" when there is none

    def __bool__(self) -> bool:
        return bool(self.value)

    def __repr__(self) -> str:  # never the value, even in a traceback
        return f"Token(source={self.source!r})"


def find(env: Mapping[str, str] | None = None) -> Token:
    env = os.environ if env is None else env
    for name in VARIABLES:
        if env.get(name, "").strip():
            return Token(env[name].strip(), name)
    gh = shutil.which("gh", path=env.get("PATH"))
    if gh is None:
        return Token()
    try:
        said = subprocess.run(
            [gh, "auth", "token"], capture_output=True, text=True, timeout=GH_TIMEOUT, check=False, env=dict(env)
        )
    except (OSError, subprocess.TimeoutExpired):
        return Token()
    value = said.stdout.strip()
    return Token(value, "gh auth token") if said.returncode == 0 and value else Token()
