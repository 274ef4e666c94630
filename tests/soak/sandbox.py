"""One trial's isolated world: a temp dir under /tmp with a fake $HOME, pinned git identity, its own
tmux server, the repository, and the commands run in it; what the trial records (its runs, notes
and findings); and the hooks an executor changes (ray.py's RayTrial overrides them)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .forge import Forge
from .output import output_errors
from .processes import processes_where
from .results import Findings
from .runs import RunRecord
from .scenario import Scenario

TESTS = Path(__file__).resolve().parents[1]
PY = sys.executable

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Soak Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Soak Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


class SoakError(Exception):
    """The harness could not set a trial up (not a Hive invariant)."""


@dataclass
class UserWork:
    """What the user had in the main checkout before the run, to prove it untouched."""

    committed_blob: str
    dirty: bytes
    notes: bytes
    status: str
    markers: tuple[str, str]  # strings only in the dirty user.txt / scratch/notes.txt
    commits: list[str] = field(default_factory=list)  # subjects of commits made during runs


class Sandbox:
    """Where one trial happens, and what it has recorded so far; `Trial` adds what it does."""

    def __init__(self, sc: Scenario, verbose: bool = False, trace_git: bool = False) -> None:
        self.sc = sc
        self.verbose = verbose
        self.dir = Path(tempfile.mkdtemp(prefix=f"sk{sc.seed}-", dir="/tmp"))  # short: tmux sockets
        self.trace_git = trace_git
        self.root = self.dir / "repo"
        self.home = self.dir / "home"
        self.socket = f"sk{os.getpid()}-{sc.seed}"
        self.env = self._env()
        self.runs: list[RunRecord] = []
        self.notes: list[str] = []  # fault log lines (applied, skipped)
        self.findings = Findings()
        self.user: UserWork | None = None
        self.forge: Forge | None = None  # pull-request mode's scripted forge (Trial._on_a_forge)

    def _env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("TMUX", "HIVE_TASK", "HIVE_ATTEMPT", "HIVE_ROOT", "HIVE_FAULT")
        }
        env.update(GIT_ENV)
        env.update(
            {
                "HOME": str(self.home),
                "TMUX_TMPDIR": str(self.dir),
                "HIVE_TMUX_SOCKET": self.socket,
                "PYTHONDONTWRITEBYTECODE": "1",
                # a hung run is sent SIGABRT before it is killed: every thread's stack in its output
                "PYTHONFAULTHANDLER": "1",
                "PATH": f"{Path(PY).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            }
        )
        if self.trace_git:
            env["PATH"] = f"{self._git_tracer()}{os.pathsep}{env['PATH']}"
        return env

    def _git_tracer(self) -> Path:
        """A `git` first on PATH that logs every call (time, pid, parent, cwd, argv) to
        git-trace.log, for Hive and the agents alike: the timeline of a failure."""
        real = shutil.which("git")
        bindir = self.dir / "bin"
        bindir.mkdir()
        tracer = bindir / "git"
        tracer.write_text(
            f'#!/bin/sh\nprintf \'%s %s %s %s %s\\n\' "$(date +%s.%N)" "$$" "$PPID" "$PWD" "$*" '
            f'>> {self.dir / "git-trace.log"}\nexec {real} "$@"\n'
        )
        tracer.chmod(0o755)
        return bindir

    # helpers
    def git(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["git", *args], cwd=cwd or self.root, env=self.env, capture_output=True, text=True, check=False
        )

    def git_out(self, *args: str) -> str:
        r = self.git(*args)
        if r.returncode != 0:
            raise SoakError(f"git {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout.strip()

    def hive(self, *args: str) -> subprocess.CompletedProcess:
        r = subprocess.run(
            [PY, "-m", "hive", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        self.scan_output(f"hive {' '.join(args)}", r.stdout + r.stderr)
        return r

    def scan_output(self, what: str, text: str) -> None:
        for kind, detail in output_errors(text):
            self.findings.add(kind, f"{what}: {detail}")

    def say(self, text: str) -> None:
        if self.verbose:
            print(text, flush=True)

    # what an executor changes (ray.py's RayTrial overrides these)
    @property
    def spawn_log(self) -> Path:
        return self.root / ".hive" / "fake" / "spawns.log"

    def agent_env(self) -> str:
        return ""

    def executor_config(self) -> str:
        return ""

    def agent_worktree(self, st: dict) -> Path:
        """Where the agent of the attempt in state `st` works."""
        return Path(st.get("worktree") or "")

    def kill_tmux(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], env=self.env, capture_output=True, check=False)

    def kill_node(self, kind: str, node: int) -> str:
        raise SoakError(f"{kind} needs the Ray executor (--ray)")

    def check_executor(self) -> None:
        """What the executor must have left behind after the final run: nothing."""

    def tmux_sessions(self) -> list[str]:
        r = subprocess.run(
            ["tmux", "-L", self.socket, "list-sessions", "-F", "#{session_name}"],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        return r.stdout.split() if r.returncode == 0 else []

    def processes(self) -> list[tuple[int, str]]:
        """Every process started for this trial: it carries the trial's socket name (or
        fake HOME) in its environment, whoever its parent is now."""
        markers = (f"HIVE_TMUX_SOCKET={self.socket}".encode(), f"HOME={self.home}".encode())
        return processes_where(lambda env: any(m in env for m in markers))

    def cleanup(self, keep: bool) -> None:
        if self.forge is not None:
            self.forge.stop()
        self.kill_tmux()
        for _ in range(3):
            procs = self.processes()
            if not procs:
                break
            for pid, _ in procs:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.2)
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)
