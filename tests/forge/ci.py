"""A scripted CI for the scripted forge: it watches the open pull requests and, for each head it
has not seen, adds one check run (a GitHub Actions job) whose result a test's `judge` decides
from the files at that head — as a real CI runs the repository's tests on each push.

    with CI(forge, lambda files: ("failure", "FAILED test_x") if ... else ("success", "ok")):
        repo.doit(...)
"""

from __future__ import annotations

import functools
import subprocess
import threading
from collections.abc import Callable

from . import git
from .server import Forge

Judge = Callable[[Callable[[str], str | None]], tuple[str, str]]  # (read a file at the head) -> (conclusion, log)


class CI:
    def __init__(
        self, forge: Forge, judge: Judge, name: str = "test", step: str = "Run the tests", takes: float = 0.0
    ) -> None:
        """`takes`: seconds each check runs (in_progress) before its conclusion is in."""
        self.forge, self.judge, self.name, self.step, self.takes = forge, judge, name, step, takes
        self.ran: list[tuple[str, str]] = []  # (head, conclusion), in order
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="ci", daemon=True)

    def __enter__(self) -> CI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            for issue in list(self.forge.issues.values()):
                if issue.pull is None or issue.state != "open":
                    continue
                head = git.branch_sha(self.forge.remote, issue.pull.head)
                if head is None or head in self._seen:
                    continue
                self._seen.add(head)
                conclusion, log = self.judge(functools.partial(_read, self.forge, head))
                steps = [("Set up job", "success"), (self.step, conclusion), ("Complete job", "success")]
                if not self.takes:
                    self.forge.add_check(head, self.name, conclusion=conclusion, log=log, steps=steps)
                else:
                    running = self.forge.add_check(head, self.name, status="in_progress", steps=steps)
                    done = (running, "completed", conclusion, log)
                    later = threading.Timer(self.takes, self.forge.update_check, done)
                    later.daemon = True
                    later.start()
                self.ran.append((head, conclusion))


def _read(forge: Forge, head: str, path: str) -> str | None:
    """The file's text at `head`, or None where it has none."""
    r = subprocess.run(["git", "-C", str(forge.remote), "show", f"{head}:{path}"], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None
