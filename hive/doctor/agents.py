"""Checks of one agent profile's program, whatever CLI it runs: is it there (the cheap
check `doit` runs before anything starts), and what version it is. A known CLI's install
hint comes from its record in hive.agent_clis, looked up by the binary's name like the
checks that CLI declares itself (credentials, first-run files, root), so a custom profile
that runs `claude` gets the same checks as the built-in one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hive.adapters import proc
from hive.agent_clis import cli_for
from hive.agent_clis.context import AgentContext
from hive.checks import Check, fail, ok, warn
from hive.errors import CommandError

VERSION_TIMEOUT = 10.0  # `--version` of a CLI that hangs (waiting for a login, a network) must not hang the doctor


def locate(ctx: AgentContext) -> str | None:
    """The program the agent's command starts, as the agent's exec finds it: by the
    agent's PATH (doit's PATH, unless the profile's env sets one), or as a file when
    command[0] is a path — relative to the agent's worktree, a checkout of this repo."""
    command = ctx.profile.command[0]
    if os.sep in command:
        path = Path(command) if os.path.isabs(command) else ctx.root / command
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(command, path=ctx.env.get("PATH", os.defpath))


def binary_check(ctx: AgentContext, used_by: str = "", version: bool = True) -> Check:
    """Is the agent's program there, and (if `version`) what does `--version` say?
    Without `version` it costs one `shutil.which`: what `doit` runs before a run."""
    name, command, profile = f"[{ctx.profile.name}] binary", ctx.profile.command[0], ctx.profile.name
    usage = f" (used by {used_by})" if used_by else ""
    path = locate(ctx)
    if path is None:
        return fail(name, f"`{command}` {_missing(command)}{usage}", _install_fix(ctx), profile)
    if not version:
        return ok(name, f"{path}{usage}", profile)
    line, error = program_version(path, ctx)
    if not error:
        return ok(name, f"{path}, {line}{usage}", profile)
    detail = f"{path} found, but `{os.path.basename(path)} --version` {error}{usage}"
    install = cli_for(ctx.binary).install
    if install:  # a known CLI that cannot print its version will not run a task either
        return fail(name, detail, f"check that `{command}` runs at all, or reinstall it (`{install}`)", profile)
    return warn(name, detail, "nothing, if this program has no --version option", profile)


def _missing(command: str) -> str:
    return "does not exist or is not executable" if os.sep in command else "is not on PATH"


def _install_fix(ctx: AgentContext) -> str:
    config = f"set {ctx.section()} command in .hive/config.toml"
    install = cli_for(ctx.binary).install
    if install and os.sep not in ctx.profile.command[0]:
        return f"install it (`{install}`) or {config}"
    return f"install it or {config}"


def program_version(path: str, ctx: AgentContext) -> tuple[str, str]:
    """(first line of `<path> --version`, "") or ("", what went wrong)."""
    try:
        env = {k: v for k, v in ctx.env.items() if k not in proc.SCRUBBED_ENV}
        result = proc.run([path, "--version"], ctx.root, check=False, env=env, timeout=VERSION_TIMEOUT)
    except CommandError as e:  # timed out, or could not be started
        return "", e.output.strip().splitlines()[-1] if e.output.strip() else f"failed ({e.code})"
    lines = result.output.splitlines()
    if result.code != 0:
        return "", f"exited with {result.code}" + (f": {lines[-1].strip()}" if lines else "")
    return (lines[0].strip() if lines else "(no output)"), ""
