"""How to point each real agent CLI at a `ModelServer`: the environment it needs and the
files it reads under $HOME, plus the command lines of Hive's built-in profiles.

    env = cli_environ("codex", server, home)   # os.environ, cleaned, with these on top
    subprocess.run(command("codex", prompt), env=env, ...)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clis import cli_path
from model_server import ModelServer

MODEL = "mock-model"  # the model Aider asks for (the others ask for their own defaults)
DEFAULT_KEY = "test-key"

# Variables of the developer's own environment that would point a CLI elsewhere or log it in.
FOREIGN = ("ANTHROPIC_", "CLAUDE_", "CLAUDECODE", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "AIDER_", "LITELLM_")

# Aider: a context window and prices for the mock model, so that Aider neither tries to
# download litellm's price list nor warns about an unknown model, and reports a cost.
AIDER_METADATA = {
    f"openai/{MODEL}": {
        "max_input_tokens": 128000,
        "max_output_tokens": 8192,
        "max_tokens": 8192,
        "input_cost_per_token": 0.000003,
        "output_cost_per_token": 0.000015,
        "litellm_provider": "openai",
        "mode": "chat",
    }
}


def base_url(server: ModelServer | str) -> str:
    return server if isinstance(server, str) else server.url


def cli_env(
    name: str,
    server: ModelServer | str,
    home: Path,
    *,
    api_key: str | None = None,
    max_retries: int | None = None,
    codex_model: str | None = None,
) -> dict[str, str]:
    """The variables that point CLI `name` at `server` (a ModelServer, or a base URL such as
    one of a closed port), with `home` as its $HOME; writes the files it reads there.

    api_key: the key the CLI sends (default: the server's own, else DEFAULT_KEY); "" sets no
        key at all (the CLI is "not logged in").
    max_retries: limit the CLI's own retries of failed API calls where it has a knob
        (Claude, Codex, Gemini; Aider has none); None keeps its defaults.
    codex_model: a `model` for Codex's config. By default Codex asks for its own default
        model (gpt-6.1-sol in 0.169.0), which gets "code mode": one freeform `exec` tool
        (JavaScript calling tools.exec_command) among the input items. An unknown name such
        as MODEL gets the classic function tools (`exec_command` in `tools`) and a warning
        "Model metadata for `mock-model` not found".
    """
    url = base_url(server).rstrip("/")
    if api_key is None:
        api_key = (server.api_key if isinstance(server, ModelServer) else None) or DEFAULT_KEY
    home.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home)}
    if name == "claude":
        env.update(
            ANTHROPIC_BASE_URL=url,
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",  # no title request, no telemetry, no update check
            IS_SANDBOX="1",  # we are root: else --dangerously-skip-permissions is refused
        )
        if api_key:
            env["ANTHROPIC_API_KEY"] = api_key
        if max_retries is not None:
            env["CLAUDE_CODE_MAX_RETRIES"] = str(max_retries)
    elif name == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        retries = ""
        if max_retries is not None:
            retries = f"request_max_retries = {max_retries}\nstream_max_retries = {max_retries}\n"
        (codex_home / "config.toml").write_text(
            (f'model = "{codex_model}"\n' if codex_model else "") + 'model_provider = "mock"\n'
            "check_for_update_on_startup = false\n"
            "\n"
            "[model_providers.mock]\n"
            'name = "mock"\n'
            f'base_url = "{url}/v1"\n'
            'env_key = "MOCK_API_KEY"\n'
            'wire_api = "responses"\n' + retries
        )
        env["CODEX_HOME"] = str(codex_home)
        if api_key:
            env["MOCK_API_KEY"] = api_key
    elif name == "gemini":
        general: dict[str, object] = {"disableAutoUpdate": True, "disableUpdateNag": True}
        if max_retries is not None:
            general["maxAttempts"] = max_retries + 1  # attempts, counting the first
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": general,
        }
        (home / ".gemini").mkdir(parents=True, exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
        # its error reports ("Full report available at: $TMPDIR/gemini-client-error-*.json")
        tmp = home / ".tmp"
        tmp.mkdir(exist_ok=True)
        env.update(GOOGLE_GEMINI_BASE_URL=url, GEMINI_CLI_TRUST_WORKSPACE="true", TMPDIR=str(tmp))
        if api_key:
            env["GEMINI_API_KEY"] = api_key
    elif name == "aider":
        (home / ".aider.model.metadata.json").write_text(json.dumps(AIDER_METADATA, indent=2) + "\n")
        env.update(
            OPENAI_API_BASE=f"{url}/v1",
            AIDER_MODEL=f"openai/{MODEL}",
            AIDER_ANALYTICS="false",
            AIDER_CHECK_UPDATE="false",
            AIDER_SHOW_RELEASE_NOTES="false",
        )
        if api_key:
            env["OPENAI_API_KEY"] = api_key
    else:
        raise ValueError(f"unknown CLI {name!r}")
    return env


def cli_environ(name: str, server: ModelServer | str, home: Path, **options: Any) -> dict[str, str]:
    """The whole environment to run CLI `name` with: ours, without anything that would
    point it elsewhere, plus `cli_env(name, server, home, **options)`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN)}
    return {**base, **cli_env(name, server, home, **options)}


def command(name: str, prompt: str, *, read: Path | None = None, json_events: bool = False) -> list[str]:
    """The command line of Hive's built-in profile for `name` (see AGENT-CLI-NOTES.md).
    read: Aider's --read file (the brief); json_events: `codex exec --json`."""
    exe = str(cli_path(name))
    if name == "claude":
        return [exe, "-p", "--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose", prompt]
    if name == "codex":
        return [exe, "exec", "--dangerously-bypass-approvals-and-sandbox", *(["--json"] if json_events else []), prompt]
    if name == "gemini":
        return [exe, "--approval-mode=yolo", "--output-format", "stream-json", "--prompt", prompt]
    if name == "aider":
        return [exe, "--yes-always", "--no-check-update", *(["--read", str(read)] if read else []), "--message", prompt]
    raise ValueError(f"unknown CLI {name!r}")


@dataclass
class Ran:
    returncode: int | None  # None: still running at the timeout, then killed
    output: str  # stdout and stderr together, as printed
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_cli(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> Ran:
    """Run a CLI in its own process group with no stdin; at `timeout`, or when it is done,
    kill whatever is left of its group."""
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, _ = proc.communicate()
        code = None
    seconds = time.monotonic() - start
    _kill_group(proc.pid)
    return Ran(code, out.decode(errors="replace"), seconds)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
