"""`[notify] command`: the event as JSON on a command's stdin, run without a shell in the
repo's root, so the event's text only ever reaches it as data."""

from __future__ import annotations

from pathlib import Path

from hive.adapters import proc
from hive.errors import CommandError
from hive.notifiers.base import Channel
from hive.settings.schema import Key

TIMEOUT = 10.0  # seconds the command may take (it is killed with its process group after)


def run_command(command: tuple[str, ...], body: str, root: Path, event: str) -> list[str]:
    argv = list(command)
    try:
        result = proc.run(
            argv,
            root,
            check=False,
            stdin=body + "\n",
            timeout=TIMEOUT,
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


def _tail(output: str) -> str:
    """The last line of what the command said, enough to recognise the problem."""
    lines = output.strip().splitlines()
    return lines[-1][:300] if lines else ""


CHANNEL = Channel(
    Key("notify", "command", "command", "argv", None,
        "Run for each event with one JSON object on its stdin (an argv list, no shell; stopped after ten seconds).",
        example=["python3", "/opt/hive-notify.py"]),
    run_command,
)  # fmt: skip
