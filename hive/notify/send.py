"""Delivering one event: to `[notify] command` as JSON on stdin, and as a POST to
`[notify] webhook`. Each is bounded by a timeout and never raises: a notification
that does not arrive must not fail a task or change a run's exit code, so what
went wrong comes back as one line per problem for the caller to log and show."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from hive import __version__
from hive.adapters import proc
from hive.errors import CommandError

COMMAND_TIMEOUT = 10.0  # seconds the command may take (it is killed with its process group after)
WEBHOOK_TIMEOUT = 5.0


def deliver(event: dict[str, Any], root: Path, command: tuple[str, ...], webhook: str) -> list[str]:
    """Send `event` everywhere configured; what failed, one line each ([] = all arrived)."""
    body = json.dumps(event, sort_keys=True)
    problems = []
    if command:
        problems += run_command(command, body, root, event.get("event", ""))
    if webhook:
        problems += post(webhook, body)
    return problems


def run_command(command: tuple[str, ...], body: str, root: Path, event: str) -> list[str]:
    """The command runs in the repo's root without a shell: the event text only
    ever reaches it on stdin."""
    argv = list(command)
    try:
        result = proc.run(
            argv,
            root,
            check=False,
            stdin=body + "\n",
            timeout=COMMAND_TIMEOUT,
            env=proc.clean_env({"HIVE_EVENT": event, "HIVE_ROOT": str(root)}),
        )
    except CommandError as e:  # not found (127) or timed out (124)
        return [f"notify command {argv} failed: {_tail(e.output) or f'exit {e.code}'}"]
    except OSError as e:  # e.g. not executable
        return [f"notify command {argv} could not start: {e}"]
    if result.code != 0:
        said = _tail(result.output)
        return [f"notify command {argv} exited with {result.code}" + (f": {said}" if said else "")]
    return []


def post(url: str, body: str) -> list[str]:
    request = urllib.request.Request(
        url,
        data=body.encode(),
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": f"hive-agents/{__version__}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT) as response:  # http(s) only: checked in config
            response.read(65536)  # let the server finish its answer; what it says is not used
    except urllib.error.HTTPError as e:
        return [f"notify webhook {url} answered HTTP {e.code} {e.reason}"]
    except urllib.error.URLError as e:
        return [f"notify webhook {url} could not be reached: {e.reason}"]
    except (OSError, http.client.HTTPException, ValueError) as e:  # timeouts, resets, bad answers
        return [f"notify webhook {url} failed: {e or type(e).__name__}"]
    return []


def _tail(output: str) -> str:
    """The last line of what the command said, enough to recognise the problem."""
    lines = output.strip().splitlines()
    return lines[-1][:300] if lines else ""
