"""Checks of one agent profile's program, whatever CLI it runs: is it there (the cheap
check `doit` runs before anything starts), and what version it is. A known CLI's install
hint comes from its record in hive.agent_clis, looked up by the binary's name like the
checks that CLI declares itself (credentials, first-run files, root), so a custom profile
that runs `claude` gets the same checks as the built-in one."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from hive.adapters import proc
from hive.agent_clis import AGENT_CLIS, cli_for
from hive.agent_clis.context import AgentContext
from hive.checks import Check, fail, ok
from hive.errors import CommandError
from hive.settings.config import Config

VERSION_TIMEOUT = 10.0  # `--version` of a CLI that hangs (waiting for a login, a network) must not hang the doctor
# Interpreters a profile may start its agent with (`python3 bot.py`): their `--version` only prints
INTERPRETERS = re.compile(r"(python|pypy)(\d+(\.\d+)*)?|node|deno|bun|bash|sh|dash|zsh|ruby|perl")


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
    if ctx.binary not in AGENT_CLIS and not INTERPRETERS.fullmatch(ctx.binary):
        # a program Hive does not know may do anything when run (the user's own agent script
        # committed to main when `--version` ran it, issue 43): it is found, never run
        return ok(name, f"{path} (not run: Hive asks only the agent CLIs it knows for their version){usage}", profile)
    line, error = program_version(path, ctx)
    if not error:
        return ok(name, f"{path}, {line}{usage}", profile)
    detail = f"{path} found, but `{os.path.basename(path)} --version` {error}{usage}"
    install = cli_for(ctx.binary).install or "its install command"
    # a known CLI that cannot print its version will not run a task either
    return fail(name, detail, f"check that `{command}` runs at all, or reinstall it (`{install}`)", profile)


def sandbox_start_check(ctx: AgentContext, config: Config, used_by: str = "") -> Check | None:
    """Can the program start inside an agent's sandbox (tried there, without running it)?
    None where agents run unsandboxed."""
    from hive.sandbox import policy, probe

    if not policy.sandboxed(config):
        return None
    name, command = f"[{ctx.profile.name}] in the sandbox", ctx.profile.command[0]
    why = probe.cannot_start(config, ctx.root, command, ctx.env)
    if not why:
        return ok(name, f"`{command}` is found in an agent's sandbox", ctx.profile.name)
    usage = f" (used by {used_by})" if used_by else ""
    return fail(
        name,
        f"`{command}` cannot start in an agent's sandbox: {why}{usage}",
        "move the program (and what it runs) out of the folders [sandbox] hide lists, or set "
        '[sandbox] mode = "off" (docs/sandbox.md)',
        ctx.profile.name,
    )


def _missing(command: str) -> str:
    return "does not exist or is not executable" if os.sep in command else "is not on PATH"


def _install_fix(ctx: AgentContext) -> str:
    config = f"set {ctx.section()} command in .hive/config.toml"
    install = cli_for(ctx.binary).install
    if install and os.sep not in ctx.profile.command[0]:
        return f"install it (`{install}`) or {config}"
    return f"install it or {config}"


def program_version(path: str, ctx: AgentContext) -> tuple[str, str]:
    """(first line of `<path> --version`, "") or ("", what went wrong): asked of a known agent
    CLI alone, in a scratch folder, never in the user's checkout."""
    env = {k: v for k, v in ctx.env.items() if k not in proc.SCRUBBED_ENV}
    try:
        with tempfile.TemporaryDirectory(prefix="hive-doctor-") as scratch:
            result = proc.run([path, "--version"], scratch, check=False, env=env, timeout=VERSION_TIMEOUT)
    except CommandError as e:  # timed out, or could not be started
        return "", e.output.strip().splitlines()[-1] if e.output.strip() else f"failed ({e.code})"
    lines = result.output.splitlines()
    if result.code != 0:
        return "", f"exited with {result.code}" + (f": {lines[-1].strip()}" if lines else "")
    return (lines[0].strip() if lines else "(no output)"), ""
