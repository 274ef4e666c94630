"""The one chokepoint for subprocesses: argv lists (never a shell built from plan
text), a scrubbed environment, every command logged at debug level.

Each child runs in its own process group: Ctrl-C in the user's terminal reaches
Hive, not a git command half-way through writing the index (an `atomic` call
finishes first, then Hive stops), and a command that times out or is abandoned
is killed with everything it started, so a Verify's test server can neither
outlive it nor keep its output pipe open forever.

It uses `subprocess` rather than the `sh` package: measured here, `sh` costs about
7 ms per call against 1.7 ms (it forks the whole interpreter and starts reader
threads), which doubled Hive's per-task overhead and signal-to-merge latency
(bench/README.md), and its import alone slowed every `doit list`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from hive.crashsafe import uninterruptible
from hive.errors import CommandError

log = logging.getLogger("hive.proc")

# Variables that make a nested tool believe it runs inside another session.
SCRUBBED_ENV = (
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "GEMINI_CLI",
    "GEMINI_CLI_NO_RELAUNCH",
    "TMUX",
    "TMUX_PANE",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
)
# The user's forge tokens (hive.forges.token): Hive's own requests use them; an agent, a check or
# a planner never gets them, sandboxed or not (a sandbox withholds them too, as it does every *TOKEN*).
# Hive's own git keeps them: a `gh auth git-credential` helper reads GH_TOKEN for Hive's pushes.
FORGE_TOKENS = ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN")
AGENT_SCRUBBED = SCRUBBED_ENV + FORGE_TOKENS
# After a command exits, how long output from what it left running may keep its pipes open.
PIPE_GRACE = 2.0
_SLICE = 1.0


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return (self.stdout + self.stderr).strip()


def clean_env(extra: dict[str, str] | None = None, drop: tuple[str, ...] = SCRUBBED_ENV) -> dict[str, str]:
    """This process's environment without `drop`, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra or {})
    return env


def run(
    argv: list[str],
    cwd: Path | str | None = None,
    *,
    check: bool = True,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float | None = None,
    atomic: bool = False,
) -> Result:
    """Run argv and return its result; raise CommandError on a bad exit if `check`.
    An `atomic` command (a short git or tmux step) is never interrupted half-way."""
    log.debug("run %s (cwd=%s)", argv, cwd)
    with uninterruptible() if atomic else contextlib.nullcontext():
        result = _run(argv, cwd, env or clean_env(), stdin, timeout)
    if check and result.code != 0:
        raise CommandError(argv, result.code, result.output)
    return result


def _run(
    argv: list[str], cwd: Path | str | None, env: dict[str, str], stdin: str | None, timeout: float | None
) -> Result:
    try:
        child = subprocess.Popen(
            argv,
            cwd=str(cwd) if cwd else None,
            env=env,
            text=True,
            errors="replace",
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,
        )
    except FileNotFoundError:
        raise CommandError(argv, 127, f"{argv[0]}: command not found") from None
    try:
        out, err = _communicate(argv, child, stdin, timeout)
    except BaseException:
        _kill_group(child)
        raise
    return Result(child.returncode, out, err)


def _communicate(
    argv: list[str], child: subprocess.Popen[str], stdin: str | None, timeout: float | None
) -> tuple[str, str]:
    deadline = None if timeout is None else time.monotonic() + timeout
    exited_at: float | None = None
    while True:
        try:
            return child.communicate(stdin, timeout=_SLICE)
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            if deadline is not None and now > deadline:
                raise CommandError(argv, 124, f"timed out after {timeout:g}s") from None
            if exited_at is None and child.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > PIPE_GRACE:
                # It exited, but something it started still holds the pipes: end that too.
                out, err = _kill_group(child)
                return out, err + f"\n(hive: stopped what {argv[0]} left running)"


def run_users_command(
    command: str,
    cwd: Path | str,
    env: dict[str, str],
    timeout: float,
    prefix: tuple[str, ...] = (),
    unset: tuple[str, ...] = (),
) -> Result:
    """A command the user wrote (a Verify, `test_command`, `[worktrees] setup` or `teardown`): theirs to run,
    so through `bash -c`, with the environment Hive gives agents; its exit status is the answer.
    `prefix`: what it runs inside (a sandbox's command line, ending in `--`); `unset`: variables
    of this process's environment it does not get."""
    env = clean_env(env, AGENT_SCRUBBED + unset)
    return run([*prefix, "bash", "-c", command], cwd=cwd, check=False, env=env, timeout=timeout)


def _kill_group(child: subprocess.Popen[str]) -> tuple[str, str]:
    """Kill the child and its process group; the output it gave, if it can be had."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    out, err = "", ""
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
        out, err = child.communicate(timeout=PIPE_GRACE)
    for pipe in (child.stdin, child.stdout, child.stderr):
        if pipe:
            with contextlib.suppress(OSError):
                pipe.close()
    child.wait()
    return out or "", err or ""
