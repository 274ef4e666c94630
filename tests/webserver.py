"""`hive web` started and stopped as a user does, for the tests that look at its pages
(tests/e2e/test_web.py in a browser; a Ray task's page in tests/ray)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit


@dataclass
class Web:
    proc: subprocess.Popen
    url: str  # as printed: http://127.0.0.1:PORT/ (with ?token=... when it has one)

    def at(self, path: str) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}/{path.lstrip('/')}"


def start_web(root: Path, *args: str) -> Web:
    """`hive web --port 0` in its own process group; its URL read from what it prints."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hive", "web", "--port", "0", *args],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    line = proc.stdout.readline() if ready else ""
    if "the dashboard is at " not in line:
        stop_web(proc)
        raise AssertionError(f"hive web did not start: {line!r} {proc.stderr.read()}")
    return Web(proc, line.split("the dashboard is at ")[1].split()[0])


def stop_web(proc: subprocess.Popen) -> str:
    """SIGTERM, as a service manager stops it; what it printed on stderr."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise AssertionError("hive web did not stop within 15 s of SIGTERM") from None
    assert proc.stderr is not None
    return str(proc.stderr.read())
