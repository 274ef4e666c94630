"""doit reporter: runs Hive's start-of-run work in the main process (before
workers fork) and makes SIGTERM stop a run as cleanly as Ctrl-C."""
from __future__ import annotations

import signal
import sys
from pathlib import Path

from doit.reporter import ConsoleReporter

from hive.reconcile import start_run


class HiveReporter(ConsoleReporter):
    desc = "Hive: doit console output plus start-of-run reconcile"

    def initialize(self, tasks: dict, selected_tasks: list) -> None:
        # doit saves its database on KeyboardInterrupt but not on SIGTERM.
        signal.signal(signal.SIGTERM, _terminate)
        for line in start_run(Path.cwd(), sys.argv[1:]):
            print(f"hive: {line}", file=sys.stderr, flush=True)


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
