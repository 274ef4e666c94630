"""The one chokepoint for subprocesses: argv lists through `sh`, never a shell
built from plan text, a scrubbed environment, every command logged at debug level."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import sh

from hive.errors import CommandError

log = logging.getLogger("hive.proc")

# Variables that make a nested tool believe it runs inside another session.
SCRUBBED_ENV = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED",
                "GEMINI_CLI", "GEMINI_CLI_NO_RELAUNCH", "TMUX", "TMUX_PANE",
                "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX")


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return (self.stdout + self.stderr).strip()


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update(extra or {})
    return env


def run(argv: list[str], cwd: Path | str | None = None, *, check: bool = True,
        env: dict[str, str] | None = None, stdin: str | None = None,
        timeout: float | None = None) -> Result:
    """Run argv and return its result; raise CommandError on a bad exit if `check`."""
    log.debug("run %s (cwd=%s)", argv, cwd)
    try:
        cmd = sh.Command(argv[0])
    except sh.CommandNotFound:
        raise CommandError(argv, 127, f"{argv[0]}: command not found") from None
    kwargs: dict = {"_cwd": str(cwd) if cwd else None, "_env": env or clean_env(),
                    "_tty_out": False, "_return_cmd": True, "_ok_code": list(range(256)),
                    "_decode_errors": "replace"}
    if stdin is not None:
        kwargs["_in"] = stdin
    if timeout is not None:
        kwargs["_timeout"] = timeout
    try:
        done = cmd(*argv[1:], **kwargs)
    except sh.TimeoutException:
        raise CommandError(argv, 124, f"timed out after {timeout}s") from None
    result = Result(done.exit_code, _text(done.stdout), _text(done.stderr))
    if check and result.code != 0:
        raise CommandError(argv, result.code, result.output)
    return result


def _text(data: bytes | str) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data
