"""The one chokepoint for subprocesses: argv lists (never a shell built from plan
text), a scrubbed environment, every command logged at debug level.

It uses `subprocess` rather than the `sh` package: measured here, `sh` costs about
7 ms per call against 1.7 ms (it forks the whole interpreter and starts reader
threads), which doubled Hive's per-task overhead and signal-to-merge latency
(bench/README.md), and its import alone slowed every `doit list`.
"""
from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

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
        done = subprocess.run(argv, cwd=str(cwd) if cwd else None, env=env or clean_env(), input=stdin,
                              stdin=None if stdin is not None else subprocess.DEVNULL, capture_output=True,
                              text=True, errors="replace", timeout=timeout)
    except FileNotFoundError:
        raise CommandError(argv, 127, f"{argv[0]}: command not found") from None
    except subprocess.TimeoutExpired:
        raise CommandError(argv, 124, f"timed out after {timeout}s") from None
    result = Result(done.returncode, done.stdout, done.stderr)
    if check and result.code != 0:
        raise CommandError(argv, result.code, result.output)
    return result
