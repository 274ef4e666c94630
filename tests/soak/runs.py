"""One doit run of a trial: how it was started, the faults it met, how it ended; and what its
record alone can tell about a stop signal sent to it."""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path

RUN_TIMEOUT = 120.0  # a doit run still alive after this is hung: killed (group) and reported
STOP_TIMEOUT = 30.0  # a doit sent SIGINT/SIGTERM must have exited by then


@dataclass
class RunRecord:
    """One doit process of a round: what it was started with, then what was done to it and how it ended."""

    label: str
    args: list[str]
    out_path: Path
    started: float
    faults: list[str] = field(default_factory=list)
    stop_signal: str = ""  # the PROCESS_FAULTS kind sent to it, if any
    signal_at: float = 0.0  # when (monotonic), to tell a signal that met the run's very end
    before_hive: bool = False  # the stop signal came while doit started, before it loaded Hive
    killed: str = ""  # why the soak killed it: "kill9" | "hung" | "slow-stop"
    stuck: list[str] = field(default_factory=list)  # its process group when it was killed as hung
    stacks: str = ""  # its Python threads' stacks then (faulthandler's dump)
    code: int | None = None
    duration: float = 0.0

    def output(self) -> str:
        return self.out_path.read_text(errors="replace") if self.out_path.exists() else ""

    def line(self) -> str:
        extra = f" [{', '.join(self.faults)}]" if self.faults else ""
        killed = f" (killed: {self.killed})" if self.killed else ""
        return f"run {self.label}: doit {' '.join(self.args)} -> {self.code}{killed} {self.duration:.1f}s{extra}"

    def died_before_hive(self) -> bool:
        """A stop signal that reached doit while it imported its own modules, before the dodo.py that
        loads Hive (whose first act installs its handlers): doit dies of it as any program would
        (killed by the signal; for SIGINT, Python's KeyboardInterrupt traceback in doit's start-up),
        and nothing can have started. Outside Hive's reach, so not a finding; once Hive has its
        handlers the run is held to 130/143 and a clean output."""
        signum = signal.SIGTERM if self.stop_signal == "sigterm" else signal.SIGINT
        return self.before_hive and self.code == -signum

    def met_the_end(self) -> bool:
        """A stop signal that reached doit in the last instant of its exit, after the run
        was over (Hive then ignores it): the normal exit code, no task stopped, within
        a moment of the signal. Anything else is held to 130/143."""
        ended = self.started + self.duration
        return self.code in (0, 1) and "stopped watching" not in self.output() and ended - self.signal_at < 0.5
