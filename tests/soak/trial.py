"""One soak trial: build its repo, run doit under its faults, check the invariants."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
FAKE_AGENT = TESTS / "fake_agent.py"
PY = sys.executable
PLAN = "soak"

RUN_TIMEOUT = 120.0  # a doit run still alive after this is hung: killed (group) and reported
STOP_TIMEOUT = 30.0  # a doit sent SIGINT/SIGTERM must have exited by then
MAX_RUNS = 8  # runs (fault runs included) to reach an exit-0 run
MAX_ATTEMPTS = 3
GRACE_S = 4  # spawn_grace_period: what a silent agent costs
LINGER_S = 3.0  # how long processes may take to go away after the final run
LOCK_RETRY_S = 6.0  # how long the "user" retries a git command that finds index.lock
POLL_S = 0.05
FAST_POLL_S = 0.003

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Soak Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Soak Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}

CONFIG = """\
[agent]
default = "fake"

[agents.fake]
command = ["{python}", "{fake}", "{{context_file}}"]
context_file = "AGENTS.md"
{agent_env}
[execution]
spawn_grace_period = "{grace}s"
task_timeout = "90s"
max_attempts = {attempts}

[merge]
main_branch = "main"
{executor}"""

# Process faults: at most one per run, as a user (or the OOM killer) would do it.
PROCESS_FAULTS = ("kill9", "sigterm", "sigint", "sigint-group")
# A process fault lands at a random time, or a random delay (seconds, from these ranges)
# after the n-th time Hive reaches a phase, to hit its narrow windows: "claim" (a task
# moves to in_progress; its worktree is being made), "signal" (an agent signals done;
# Hive commits leftovers and builds the merge), "merging" (main is about to move;
# then the worktree and branches are removed).
TRIGGERS = {"claim": (0.0, 0.08), "signal": (0.0, 0.25), "merging": (0.0, 0.04)}
EXPECTED_EXIT = {"sigterm": 143, "sigint": 130, "sigint-group": 130}
# --ray (bench/soak_ray.py): a cluster of a head and RAY_WORKERS worker nodes, started once for all
# trials; a doit run starts ~1.5 s later than without Ray (connecting, the project's node actors)
RAY_WORKERS = 2
RAY_STARTUP = 2.0
NODE_KILL_P = 0.3
RAY_DEATH_P = 0.25  # Ray dies on a node whose machine lives: its raylet, or Hive's actor there, SIGKILLed
NODE_FAULTS = ("node-kill", "raylet-kill", "actor-kill")  # Ray only: what `target` (a worker node) suffers


# -- the scenario: plan and faults, all drawn from the seed -----------------
@dataclass(frozen=True)
class TaskSpec:
    id: str
    deps: tuple[str, ...]
    content: str
    sleep: float  # 0: no sleep
    sleep_first: bool  # sleep before the work (else between commit and signal)
    first_attempt: str = ""  # "" | "crash" | "silent": attempt 1 fails this way

    @property
    def key(self) -> str:
        return f"{PLAN}:{self.id}"

    @property
    def file(self) -> str:
        return f"t{self.id}.txt"

    @property
    def message(self) -> str:
        return f"work {self.key}"


@dataclass(frozen=True)
class TimedFault:
    kind: str  # a PROCESS_FAULTS kind | "tmux-kill" | "user-commit" | a NODE_FAULTS kind
    at: float  # seconds after the round started, or after the trigger
    target: int = 0  # which of the round's doit processes (process faults); the worker node (NODE_FAULTS)
    trigger: str = ""  # a TRIGGERS phase, or "" for a time since the start
    nth: int = 1  # ... its n-th occurrence in the round

    def describe(self) -> str:
        who = f"[proc {self.target + 1}]" if self.kind in PROCESS_FAULTS else ""
        who = f"[node {self.target}]" if self.kind in NODE_FAULTS else who
        when = f"{self.trigger}#{self.nth}+{self.at:.3f}s" if self.trigger else f"{self.at:.2f}s"
        return f"{self.kind}{who}@{when}"


@dataclass(frozen=True)
class Round:
    """doit processes started together (two when "twin") and the faults timed against them."""

    ns: tuple[int, ...]
    faults: tuple[TimedFault, ...] = ()


@dataclass(frozen=True)
class Scenario:
    seed: int
    tasks: tuple[TaskSpec, ...]
    rounds: tuple[Round, ...]  # the faulted rounds; clean re-runs follow
    rerun_ns: tuple[int, ...]  # -n of each clean re-run
    rm_worktree: str = ""  # task whose worktree is deleted while its agent runs
    rm_delay: float = 0.0  # ... this long after its agent started

    def fault_names(self) -> list[str]:
        out = []
        for i, r in enumerate(self.rounds, 1):
            out += [f"r{i}:twin-start"] * (len(r.ns) > 1) + [f"r{i}:{f.describe()}" for f in r.faults]
        out += [f"{t.first_attempt}@1:{t.id}" for t in self.tasks if t.first_attempt]
        if self.rm_worktree:
            out.append(f"rm-worktree:{self.rm_worktree}+{self.rm_delay:.2f}s")
        return out


def make_tasks(rng: random.Random) -> tuple[TaskSpec, ...]:
    """3-7 tasks; each may depend on its predecessor (chains) and on random earlier
    tasks, so a trial mixes chains, fan-ins and independent tasks."""
    n = rng.randint(3, 7)
    chain_p, extra_p = rng.choice([0.0, 0.3, 0.6]), rng.choice([0.0, 0.15, 0.3])
    tasks = []
    for i in range(1, n + 1):
        deps = {i - 1} if i > 1 and rng.random() < chain_p else set()
        deps |= {j for j in range(1, i - 1) if rng.random() < extra_p}
        first = rng.choices(["", "crash", "silent"], weights=[78, 14, 8])[0]
        sleep = round(rng.uniform(0.2, 1.5), 2) if rng.random() < 0.6 else 0.0
        tasks.append(
            TaskSpec(
                str(i),
                tuple(str(d) for d in sorted(deps)),
                f"{PLAN}-{i}-{rng.getrandbits(32):08x}",
                sleep,
                rng.random() < 0.5,
                first,
            )
        )
    return tuple(tasks)


def estimate_run(tasks: tuple[TaskSpec, ...], n: int, startup: float = 0.5) -> float:
    """A rough wall time of one clean run (measured: ~0.5 s start-up, ~2 s with Ray; ~0.25 s
    of Hive per task), so faults are timed to land while it is still going."""
    work = sum(
        0.25 + t.sleep + (GRACE_S if t.first_attempt == "silent" else 0) + (0.3 if t.first_attempt == "crash" else 0)
        for t in tasks
    )
    return startup + work / n


def in_order(faults: list[TimedFault]) -> tuple[TimedFault, ...]:
    """A round's faults as its loop applies them: timed ones by time, then those waiting for a phase."""
    return tuple(sorted(faults, key=lambda f: (bool(f.trigger), f.at)))


def make_round(
    rng: random.Random, tasks: tuple[TaskSpec, ...], twin_p: float, allow_tmux: bool, startup: float = 0.5
) -> Round:
    ns = tuple(rng.randint(1, 3) for _ in range(2 if rng.random() < twin_p else 1))
    span = estimate_run(tasks, min(ns), startup)
    faults = []
    kind = rng.choices(("", *PROCESS_FAULTS), weights=[15, 35, 15, 15, 20])[0]
    if kind:
        trigger = rng.choice(["", "", *TRIGGERS])
        if trigger:
            at, nth = round(rng.uniform(*TRIGGERS[trigger]), 3), rng.randint(1, min(3, len(tasks)))
        else:
            at, nth = round(rng.uniform(0.2, span), 2), 1
        faults.append(TimedFault(kind, at, rng.randrange(len(ns)), trigger, nth))
    # these two do not end the run, so they must land before it ends by itself
    if allow_tmux and rng.random() < 0.25:
        faults.append(TimedFault("tmux-kill", round(rng.uniform(0.3, 0.8 * span), 2)))
    for _ in range(rng.choice([0, 0, 0, 1, 1, 2])):
        faults.append(TimedFault("user-commit", round(rng.uniform(0.2, 0.8 * span), 2)))
    return Round(ns, in_order(faults))


def make_scenario(seed: int, ray: bool = False) -> Scenario:
    """The trial of `seed`; with `ray`, timed for the Ray executor's slower start and with one
    more fault drawn last (the same seed's other faults are the same either way): a worker
    node killed mid-run, like a machine dying."""
    rng = random.Random(seed)
    startup = RAY_STARTUP if ray else 0.5
    tasks = make_tasks(rng)
    rounds = [make_round(rng, tasks, twin_p=0.2, allow_tmux=True, startup=startup)]
    # A second faulted round sometimes: a crash while recovering from a crash.
    # The tmux server is killed at most once per trial: every kill costs each running
    # task an attempt, and max_attempts must leave room for a later one to succeed.
    if rng.random() < 0.3:
        rounds.append(
            make_round(
                rng,
                tasks,
                twin_p=0.1,
                allow_tmux=not any(f.kind == "tmux-kill" for f in rounds[0].faults),
                startup=startup,
            )
        )
    rerun_ns = tuple(rng.randint(1, 3) for _ in range(MAX_RUNS))
    rm, delay = "", 0.0
    healthy = [t for t in tasks if not t.first_attempt]  # keeps its attempts within max_attempts
    if healthy and rng.random() < 0.25:
        # an agent lives for its sleep plus ~0.2 s of work and merging: hit any point of it
        target = rng.choice(healthy)
        rm, delay = target.id, round(rng.uniform(0.0, target.sleep + 0.2), 2)
    if ray and rng.random() < NODE_KILL_P:
        first = rounds[0]
        at = round(rng.uniform(0.5, estimate_run(tasks, min(first.ns), startup)), 2)
        kill = TimedFault("node-kill", at, rng.randint(1, RAY_WORKERS))
        rounds[0] = Round(first.ns, in_order([*first.faults, kill]))
    if ray and rng.random() < RAY_DEATH_P:  # drawn after node-kill: seeds that had it keep it as it was
        first, kind = rounds[0], rng.choice(NODE_FAULTS[1:])
        at = round(rng.uniform(0.5, estimate_run(tasks, min(first.ns), startup)), 2)
        node = rng.randint(1, RAY_WORKERS)
        killed = [f.target for f in first.faults if f.kind == "node-kill"]
        node = killed[0] if killed and kind == "raylet-kill" else node  # one node down at most: the other runs the rest
        rounds[0] = Round(first.ns, in_order([*first.faults, TimedFault(kind, at, node)]))
    return Scenario(seed, tasks, tuple(rounds), rerun_ns, rm, delay)


def render_plan(sc: Scenario) -> str:
    parts = [
        (
            f"---\nstatus: approved\n---\n# Soak plan (seed {sc.seed})\n\n## Context\n"
            f"Generated by bench/soak.py; every task writes one file and commits it.\n\n## Tasks\n"
        )
    ]
    for t in sc.tasks:
        lines = [f"### Task {t.id}: Write {t.file}", f"**Depends on:** {', '.join(t.deps) or 'none'}", ""]
        if t.first_attempt == "crash":
            lines.append("fake@1: crash 5")  # exits non-zero; later attempts go on below
        elif t.first_attempt == "silent":
            lines.append("fake@1: silent")  # no sign of life: a spawn failure after the grace period
        if t.sleep and t.sleep_first:
            lines.append(f"fake: sleep {t.sleep}")
        lines += [f"fake: write {t.file} {t.content}", f"fake: commit-once {t.message}"]
        if t.sleep and not t.sleep_first:
            lines.append(f"fake: sleep {t.sleep}")
        lines.append("fake: signal done")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


# -- one isolated trial -------------------------------------------------------
@dataclass
class RunRecord:
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
    code: int | None = None
    duration: float = 0.0

    def output(self) -> str:
        return self.out_path.read_text(errors="replace") if self.out_path.exists() else ""

    def line(self) -> str:
        extra = f" [{', '.join(self.faults)}]" if self.faults else ""
        killed = f" (killed: {self.killed})" if self.killed else ""
        return f"run {self.label}: doit {' '.join(self.args)} -> {self.code}{killed} {self.duration:.1f}s{extra}"


@dataclass
class UserWork:
    """What the user had in the main checkout before the run, to prove it untouched."""

    committed_blob: str
    dirty: bytes
    notes: bytes
    status: str
    markers: tuple[str, str]  # strings only in the dirty user.txt / scratch/notes.txt
    commits: list[str] = field(default_factory=list)  # subjects of commits made during runs


class EventWatch:
    """Hive's progress as it happens, read from the end of events.jsonl and of the
    agents' spawns.log, so that a fault can be timed against a phase (TRIGGERS)."""

    def __init__(self, root: Path, spawns: Path) -> None:
        self.paths = {"events": root / ".hive" / "events.jsonl", "spawns": spawns}
        self.offsets = {k: (p.stat().st_size if p.exists() else 0) for k, p in self.paths.items()}
        self.seen: dict[str, list[float]] = {t: [] for t in TRIGGERS}

    def poll(self, now: float) -> None:
        for name, line in self._new_lines():
            if name == "spawns":
                phase = "signal" if line.endswith(" signal-done") else ""
            else:
                try:
                    phase = {"in_progress": "claim", "merging": "merging"}.get(json.loads(line).get("event"), "")
                except ValueError:
                    phase = ""
            if phase:
                self.seen[phase].append(now)

    def when(self, trigger: str, nth: int) -> float | None:
        """The monotonic time the n-th occurrence was seen, None if not yet."""
        return self.seen[trigger][nth - 1] if len(self.seen[trigger]) >= nth else None

    def _new_lines(self) -> list[tuple[str, str]]:
        out = []
        for name, path in self.paths.items():
            try:
                with open(path, "rb") as f:
                    f.seek(self.offsets[name])
                    data = f.read()
            except FileNotFoundError:
                continue
            complete = data[: data.rfind(b"\n") + 1]  # a line being written is read next time
            self.offsets[name] += len(complete)
            out += [(name, ln) for ln in complete.decode(errors="replace").splitlines()]
        return out


class Findings:
    """One trial's violated invariants, grouped by kind: the kind names the failure
    (the summary counts trials per kind), the details say where and what exactly."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[str]] = {}

    def add(self, kind: str, detail: str = "") -> None:
        details = self.by_kind.setdefault(kind, [])
        if detail and detail not in details:
            details.append(detail)

    def __bool__(self) -> bool:
        return bool(self.by_kind)

    def lines(self, max_details: int = 4) -> list[str]:
        out = []
        for kind, details in self.by_kind.items():
            out.append(kind)
            out += [f"    {d}" for d in details[:max_details]]
            if len(details) > max_details:
                out.append(f"    ... and {len(details) - max_details} more")
        return out


class Trial:
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
        self._rm_done = not sc.rm_worktree
        self._rm_seen: tuple[int, float] | None = None  # (attempt, monotonic time its start was seen)

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
        self._scan_output(f"hive {' '.join(args)}", r.stdout + r.stderr)
        return r

    def _scan_output(self, what: str, text: str) -> None:
        for kind, detail in output_errors(text):
            self.findings.add(kind, f"{what}: {detail}")

    def say(self, text: str) -> None:
        if self.verbose:
            print(text, flush=True)

    # what an executor changes (bench/soak_ray.py overrides these)
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

    # setup
    def setup(self) -> None:
        self.home.mkdir()
        (self.home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
        self.root.mkdir()
        self.git_out("init", "-q", "-b", "main")
        (self.root / "README.md").write_text("# soak project\n")
        (self.root / "user.txt").write_text("the user's committed text\n")
        self.git_out("add", "README.md", "user.txt")
        self.git_out("commit", "-q", "-m", "initial commit")
        r = subprocess.run(
            [PY, "-m", "hive", "init"], cwd=self.root, env=self.env, capture_output=True, text=True, check=False
        )
        if r.returncode != 0:
            raise SoakError(f"hive init failed: {r.stdout}{r.stderr}")
        (self.root / ".hive" / "config.toml").write_text(
            CONFIG.format(
                python=PY,
                fake=FAKE_AGENT,
                grace=GRACE_S,
                attempts=MAX_ATTEMPTS,
                agent_env=self.agent_env(),
                executor=self.executor_config(),
            )
        )
        (self.root / "plans" / f"{PLAN}.md").write_text(render_plan(self.sc))
        self.user = self._protect_user_work()

    def _protect_user_work(self) -> UserWork:
        """The user's own state in the main checkout: uncommitted edits to a tracked
        file and an untracked file, which Hive must never touch or commit."""
        tag = f"{self.sc.seed}-{random.Random(self.sc.seed).getrandbits(40):010x}"
        markers = (f"uncommitted-edit-{tag}", f"untracked-notes-{tag}")
        blob = self.git_out("rev-parse", "main:user.txt")
        (self.root / "user.txt").write_text(f"the user's committed text\n{markers[0]}\n")
        (self.root / "scratch").mkdir()
        (self.root / "scratch" / "notes.txt").write_text(f"{markers[1]}\n")
        return UserWork(
            blob,
            (self.root / "user.txt").read_bytes(),
            (self.root / "scratch" / "notes.txt").read_bytes(),
            self.git_out("status", "--porcelain"),
            markers,
        )

    # running doit
    def start(self, label: str, n: int) -> tuple[RunRecord, subprocess.Popen]:
        args = ["-n", str(n)]
        out = self.dir / f"run-{label}.out"
        with open(out, "w") as f:
            # its own session: a kill -9 of its process group reaches doit and its
            # workers, never the soak; Ctrl-C is simulated with killpg(SIGINT)
            proc = subprocess.Popen(
                [PY, "-m", "doit", *args],
                cwd=self.root,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=f,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return RunRecord(label, args, out, time.monotonic()), proc

    def run_round(self, number: int, rnd: Round) -> list[RunRecord]:
        """Start the round's doit(s) together, apply its faults on time, wait for all."""
        started = [self.start(f"{number}{'ab'[i] if len(rnd.ns) > 1 else ''}", n) for i, n in enumerate(rnd.ns)]
        recs = [rec for rec, _ in started]
        procs = [p for _, p in started]
        t0 = time.monotonic()
        watch = EventWatch(self.root, self.spawn_log)
        pending = list(rnd.faults)
        signalled: dict[int, float] = {}
        while any(p.poll() is None for p in procs):
            now = time.monotonic()
            watch.poll(now)
            for f in list(pending):
                start = watch.when(f.trigger, f.nth) if f.trigger else t0
                if start is not None and now >= start + f.at:
                    pending.remove(f)
                    self.apply(f, recs, procs, signalled, now - t0)
            self._maybe_rm_worktree(recs)
            self._police(recs, procs, signalled, now)
            for rec, p in zip(recs, procs, strict=True):
                if not rec.duration and p.poll() is not None:  # a twin may end long before the other
                    rec.duration = now - rec.started
            # a phase lasts a few milliseconds: look often while a fault waits for one
            time.sleep(FAST_POLL_S if any(f.trigger for f in pending) else POLL_S)
        for f in pending:
            self.notes.append(f"round {number}: {f.describe()} not applied (the run ended first)")
        for rec, p in zip(recs, procs, strict=True):
            rec.code = p.returncode
            rec.duration = rec.duration or time.monotonic() - rec.started
            self.runs.append(rec)
            if not self._died_before_hive(rec):
                self._scan_output(f"run {rec.label}", rec.output())
            self.say(rec.line())
        return recs

    def _police(
        self, recs: list[RunRecord], procs: list[subprocess.Popen], signalled: dict[int, float], now: float
    ) -> None:
        """A hung run, or one that ignores SIGINT/SIGTERM, is killed with its group."""
        for i, (rec, p) in enumerate(zip(recs, procs, strict=True)):
            if p.poll() is not None:
                continue
            if now - rec.started > RUN_TIMEOUT:
                rec.killed = "hung"
            elif i in signalled and now - signalled[i] > STOP_TIMEOUT:
                rec.killed = "slow-stop"
            else:
                continue
            rec.stuck = group_snapshot(p.pid)  # what it hung in, before it is gone
            _killpg(p.pid, signal.SIGKILL)
            p.wait()

    def apply(
        self,
        f: TimedFault,
        recs: list[RunRecord],
        procs: list[subprocess.Popen],
        signalled: dict[int, float],
        at: float,
    ) -> None:
        desc = f"{f.kind}@{at:.3f}s" + (f" ({f.trigger}#{f.nth}+{f.at:.3f}s)" if f.trigger else "")
        if f.kind in PROCESS_FAULTS:
            p, rec = procs[f.target], recs[f.target]
            if p.poll() is not None:
                self.notes.append(f"{f.describe()} not applied (run {rec.label} was over)")
                return
            if f.kind == "kill9":
                _killpg(p.pid, signal.SIGKILL)
                rec.killed = "kill9"
            elif f.kind == "sigint-group":
                rec.before_hive = not hive_loaded(p.pid)
                _killpg(p.pid, signal.SIGINT)
            else:
                rec.before_hive = not hive_loaded(p.pid)
                os.kill(p.pid, signal.SIGTERM if f.kind == "sigterm" else signal.SIGINT)
            if f.kind != "kill9":
                rec.stop_signal = f.kind
                rec.signal_at = signalled[f.target] = time.monotonic()
            rec.faults.append(desc)
        elif f.kind == "tmux-kill":
            self.kill_tmux()
            for rec in recs:
                rec.faults.append(desc)
        elif f.kind in NODE_FAULTS:
            desc += self.kill_node(f.kind, f.target)
            for rec in recs:
                rec.faults.append(desc)
        elif f.kind == "user-commit":
            desc += self.user_commit()
            for rec in recs:
                rec.faults.append(desc)

    def user_commit(self) -> str:
        """The user commits a new file to main in the main checkout, as people do while
        Hive runs. Never user.txt or scratch/."""
        assert self.user is not None
        k = len(self.user.commits) + 1
        name = f"user-{k}.txt"
        (self.root / name).write_text(f"the user's commit {k}\n")
        subject = f"user: commit {k} during the soak"
        for argv in (["add", "--", name], ["commit", "-q", "-m", subject, "--", name]):
            r = self._git_retrying_lock(*argv)
            if r.returncode != 0:
                self.git("reset", "-q", "--", name)
                (self.root / name).unlink()
                self.findings.add(
                    "the user could not commit to main during a run",
                    f"git {argv[0]} exited {r.returncode}: {_tail(r.stderr, 3)}",
                )
                return " (failed)"
        self.user.commits.append(subject)
        return f" ({name})"

    def _git_retrying_lock(self, *args: str) -> subprocess.CompletedProcess:
        """What a patient user does when git says another git process holds the lock, or that
        HEAD moved under their commit (Hive merged at that instant: git's compare-and-swap on the
        ref refuses the commit and keeps the index, so trying again is the user's answer)."""
        deadline = time.monotonic() + LOCK_RETRY_S
        while True:
            r = self.git(*args)
            raced = ".lock" in r.stderr or "cannot lock ref" in r.stderr
            if r.returncode == 0 or not raced or time.monotonic() > deadline:
                return r
            time.sleep(0.1)

    def _maybe_rm_worktree(self, recs: list[RunRecord]) -> None:
        """Delete the target task's worktree `rm_delay` after its agent started."""
        if self._rm_done:
            return
        target = self.sc.rm_worktree
        starts = [a for t, a, _, e in read_spawns(self.spawn_log) if t == f"{PLAN}:{target}" and e == "start"]
        if not starts:
            return
        now = time.monotonic()
        if self._rm_seen is None or self._rm_seen[0] != starts[-1]:
            self._rm_seen = (starts[-1], now)
        if now - self._rm_seen[1] < self.sc.rm_delay:
            return
        st = read_state(self.root, target)
        wt = self.agent_worktree(st)
        if st.get("state") == "done":
            self._rm_done = True
            self.notes.append(f"rm-worktree:{target} not applied (the task was done first)")
        elif st.get("state") == "in_progress" and st.get("attempt") == starts[-1] and wt.is_dir():
            shutil.rmtree(wt, ignore_errors=True)
            shutil.rmtree(wt, ignore_errors=True)  # again: the agent may have been writing into it
            self._rm_done = True
            for rec in recs:
                rec.faults.append(f"rm -rf {wt.name} (attempt {starts[-1]})")

    def execute(self) -> None:
        """The faulted rounds, then clean re-runs until one exits 0."""
        for i, rnd in enumerate(self.sc.rounds, 1):
            self.run_round(i, rnd)
        number = len(self.sc.rounds)
        last = self.runs[-len(self.sc.rounds[-1].ns) :]
        while not all(r.code == 0 for r in last):
            if number >= MAX_RUNS:
                self.findings.add(
                    f"no convergence: no run exited 0 within {MAX_RUNS} runs",
                    f"last exit code(s): {', '.join(str(r.code) for r in last)}",
                )
                return
            number += 1
            last = self.run_round(number, Round((self.sc.rerun_ns[number - 1],)))

    # invariants
    def check(self) -> None:
        checks = (
            self._check_runs,
            self._check_tasks_on_main,
            self._check_no_respawn,
            self._check_user_work,
            self._check_status,
            self._check_leftovers,
        )
        for check in checks:
            try:
                check()
            except (SoakError, OSError, ValueError) as e:  # one check that cannot read must not hide the others
                self.findings.add("harness error (not a Hive finding)", f"{check.__name__}: {e!r}")

    def _check_runs(self) -> None:
        for rec in self.runs:
            if rec.killed == "hung":
                self.findings.add(
                    f"hang: a run was still going after {RUN_TIMEOUT:.0f}s",
                    f"run {rec.label}; its processes: {' | '.join(rec.stuck)}",
                )
            elif rec.killed == "slow-stop":
                self.findings.add(
                    f"{rec.stop_signal}: doit did not stop within {STOP_TIMEOUT:.0f}s",
                    f"run {rec.label}; its processes: {' | '.join(rec.stuck)}",
                )
            elif self._died_before_hive(rec):
                self.notes.append(
                    f"run {rec.label}: {rec.stop_signal} arrived while doit was starting, before it loaded Hive "
                    f"(exit {rec.code})"
                )
            elif rec.stop_signal and rec.code != EXPECTED_EXIT[rec.stop_signal] and self._met_the_end(rec):
                self.notes.append(f"run {rec.label}: {rec.stop_signal} arrived as the run ended (exit {rec.code})")
            elif rec.stop_signal and rec.code != EXPECTED_EXIT[rec.stop_signal]:
                how = f"killed by signal {-rec.code}" if rec.code is not None and rec.code < 0 else f"exit {rec.code}"
                self.findings.add(
                    f"{rec.stop_signal}: doit {how}, expected exit {EXPECTED_EXIT[rec.stop_signal]}", f"run {rec.label}"
                )
            elif not rec.faults and not rec.killed and rec.code != 0:
                self.findings.add(
                    "a run with no fault injected exited non-zero",
                    f"run {rec.label} exit {rec.code}: {_tail(rec.output(), 3)[-300:]}",
                )

    @staticmethod
    def _died_before_hive(rec: RunRecord) -> bool:
        """A stop signal that reached doit while it imported its own modules, before the dodo.py that
        loads Hive (whose first act installs its handlers): doit dies of it as any program would
        (killed by the signal; for SIGINT, Python's KeyboardInterrupt traceback in doit's start-up),
        and nothing can have started. Outside Hive's reach, so not a finding; once Hive has its
        handlers the run is held to 130/143 and a clean output."""
        signum = signal.SIGTERM if rec.stop_signal == "sigterm" else signal.SIGINT
        return rec.before_hive and rec.code == -signum

    @staticmethod
    def _met_the_end(rec: RunRecord) -> bool:
        """A stop signal that reached doit in the last instant of its exit, after the run
        was over (Hive then ignores it): the normal exit code, no task stopped, within
        a moment of the signal. Anything else is held to 130/143."""
        ended = rec.started + rec.duration
        return rec.code in (0, 1) and "stopped watching" not in rec.output() and ended - rec.signal_at < 0.5

    def _check_tasks_on_main(self) -> None:
        subjects = self.git_out("log", "--format=%s", "main").splitlines()
        merges = self.git_out("log", "--first-parent", "--format=%s", "main").splitlines()
        for t in self.sc.tasks:
            work = subjects.count(t.message)
            merged = sum(1 for s in merges if s.startswith(f"hive: merge {t.key} —"))
            content = self.git("show", f"main:{t.file}")
            if work != 1:
                self.findings.add(
                    "a task's work is not on main exactly once", f"{t.key}: `{t.message}` {work} times in git log main"
                )
            if merged != 1:
                self.findings.add(
                    "a task has not exactly one merge commit on main",
                    f"{t.key}: {merged} `hive: merge {t.key} —` on main's first-parent history",
                )
            if content.returncode != 0 or content.stdout != t.content + "\n":
                found = repr(content.stdout.strip()) if content.returncode == 0 else "missing"
                self.findings.add("a task's file on main is wrong", f"{t.file} is {found}, expected {t.content!r}")

    def _check_no_respawn(self) -> None:
        """No agent of a task starts after that task was recorded done (merged), and
        no attempt's agent starts twice."""
        done_at: dict[str, float] = {}
        for e in read_events(self.root):
            if e.get("to") == "done":
                done_at.setdefault(e["task"], e["time"])
        seen: Counter[tuple[str, int]] = Counter()
        for task, attempt, at, event in read_spawns(self.spawn_log):
            if event != "start":
                continue
            seen[(task, attempt)] += 1
            if task in done_at and at > done_at[task]:
                self.findings.add(
                    "an agent was spawned for a task already merged",
                    f"{task} attempt {attempt} started at {at:.3f}, merged at {done_at[task]:.3f}",
                )
        for (task, attempt), count in seen.items():
            if count > 1:
                self.findings.add(
                    "one attempt's agent was started more than once", f"{task} attempt {attempt}: {count} starts"
                )

    def _check_user_work(self) -> None:
        u = self.user
        assert u is not None
        lost = "the user's work in the main checkout was touched"
        if (self.root / "user.txt").read_bytes() != u.dirty:
            self.findings.add(lost, f"user.txt (uncommitted edit) is now {(self.root / 'user.txt').read_bytes()!r}")
        notes = self.root / "scratch" / "notes.txt"
        if not notes.exists() or notes.read_bytes() != u.notes:
            self.findings.add(lost, "scratch/notes.txt (untracked) changed or is gone")
        committed = "the user's uncommitted work was committed"
        if self.git("rev-parse", "main:user.txt").stdout.strip() != u.committed_blob:
            self.findings.add(committed, "user.txt's content on main is not the one the user committed")
        for marker, what in zip(u.markers, ("user.txt's uncommitted edit", "scratch/notes.txt"), strict=True):
            hits = self.log_everywhere("-S", marker)
            if hits:
                self.findings.add(committed, f"{what} is in: {_tail(hits, 3)}")
        if self.log_everywhere("--", "scratch"):
            self.findings.add(committed, "a commit touches scratch/")
        subjects = self.git_out("log", "--format=%s", "main").splitlines()
        for s in u.commits:
            if subjects.count(s) != 1:
                self.findings.add(
                    "a commit the user made during a run is not on main exactly once",
                    f"{s!r}: {subjects.count(s)} times",
                )
        head = self.git("symbolic-ref", "HEAD").stdout.strip()
        if head != "refs/heads/main":
            self.findings.add("the main checkout is no longer on main", f"HEAD is {head or 'detached'}")
        status = self.git_out("status", "--porcelain")
        if status != u.status:
            self.findings.add("the main checkout's git status changed", f"before {u.status!r}, after {status!r}")

    def log_everywhere(self, *args: str) -> str:
        """`git log --all` (every branch, ref and worktree HEAD); a half-made worktree
        whose HEAD is still 000… makes that fail, and then every ref but HEADs is read."""
        r = self.git("log", "--all", "--format=%h %s", *args)
        if r.returncode == 0:
            return r.stdout.strip()
        return self.git_out("log", "--branches", "--tags", "--glob=refs/hive/*", "--format=%h %s", *args)

    def _check_status(self) -> None:
        r = self.hive("status", "--json")
        if r.returncode != 0:
            self.findings.add("hive status --json failed", f"exit {r.returncode}: {_tail(r.stderr, 3)}")
            return
        data = json.loads(r.stdout)
        states = {f"{t['plan']}:{t['id']}": t for t in data["tasks"]}
        for t in self.sc.tasks:
            got = states.get(t.key, {})
            if got.get("state") != "done":
                self.findings.add(
                    "a task is not done", f"{t.key} is {got.get('state')!r}: {first_line(got.get('reason', ''))[:160]}"
                )
        if data["counts"].get("in_progress", 0) != 0:
            self.findings.add(
                "hive status counts tasks in_progress after the final run",
                f"{data['counts']['in_progress']} in_progress",
            )

    def _check_leftovers(self) -> None:
        listing = self.git("worktree", "list", "--porcelain")
        if listing.returncode != 0:  # what the user would see too: not the harness's fault
            self.findings.add("`git worktree list` fails in the repository", _tail(listing.stderr, 2))
        for block in listing.stdout.strip().split("\n\n")[1:]:
            name = Path(block.splitlines()[0].split(" ", 1)[1]).name
            if "\nprunable" in block:  # its directory is gone, git still lists it
                self.findings.add("a stale (prunable) worktree entry left", name)
            else:
                self.findings.add("worktrees left", name)
        branches = [b for b in self.git_out("branch", "--format=%(refname:short)").split() if b.startswith("hive/")]
        if branches:
            self.findings.add("hive/* branches left", ", ".join(branches))
        locks = sorted(str(p.relative_to(self.root)) for p in (self.root / ".git").rglob("*.lock"))
        if locks:
            self.findings.add("git lock files left", ", ".join(locks))
        sessions = self.tmux_sessions()
        if sessions:
            self.findings.add("tmux sessions left", ", ".join(sessions))
        debug = self.root / ".hive" / "hive.log"
        if debug.exists():
            self.findings.add(".hive/hive.log (Hive's internal-error log) exists", _tail(debug.read_text(), 1)[:300])
        deadline = time.monotonic() + LINGER_S
        while (procs := self.processes()) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid, cmd in procs:
            self.findings.add("processes left after the final run", f"{pid} {cmd[:120]}")
        self.check_executor()

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

    def dump(self) -> None:
        """Everything needed to judge a failure: plan, outputs, agent timeline, events."""
        print(f"--- plan ({self.root / 'plans' / f'{PLAN}.md'})")
        print(render_plan(self.sc))
        for rec in self.runs:
            print(f"--- output of {rec.line()}")
            print(rec.output().rstrip())
        print("--- agents (.hive/fake/spawns.log)")
        for task, attempt, at, event in read_spawns(self.spawn_log):
            print(f"  {task} a{attempt} {at:.3f} {event}")
        print("--- events (.hive/events.jsonl)")
        for e in read_events(self.root):
            print(
                f"  {e.get('time', 0):.3f} {e.get('task')} a{e.get('attempt')} {e.get('from')}->{e.get('to')} "
                f"{first_line(e.get('event', ''))} {first_line(e.get('reason', ''))[:120]}"
            )


class SoakError(Exception):
    """The harness could not set a trial up (not a Hive invariant)."""


@dataclass
class TrialResult:
    seed: int
    faults: list[str]
    runs: list[str]
    findings: dict[str, list[str]]  # kind -> details
    notes: list[str]
    duration: float
    dir: Path

    @property
    def passed(self) -> bool:
        return not self.findings


TrialMaker = Callable[[Scenario, bool, bool], "Trial"]


def run_trial(
    seed: int, verbose: bool = False, keep: bool = False, trace_git: bool = False, on_ray: TrialMaker | None = None
) -> TrialResult:
    """One trial; `on_ray` makes it on the Ray executor (bench/soak_ray.py's `RaySoak.trial`)."""
    sc = make_scenario(seed, ray=on_ray is not None)
    trial = (on_ray or Trial)(sc, verbose, trace_git)
    t0 = time.monotonic()
    trial.say(f"seed {seed}: {describe_plan(sc)}; faults: {', '.join(sc.fault_names()) or 'none'}; dir {trial.dir}")
    try:
        trial.setup()
        trial.execute()
        trial.check()
    except (SoakError, OSError, ValueError, subprocess.SubprocessError) as e:
        trial.findings.add("harness error (not a Hive finding)", repr(e))
    finally:
        if verbose:
            trial.dump()
        trial.cleanup(keep)
    return TrialResult(
        seed,
        sc.fault_names(),
        [r.line() for r in trial.runs],
        trial.findings.by_kind,
        trial.notes,
        time.monotonic() - t0,
        trial.dir,
    )


# -- reading Hive's records ----------------------------------------------------
def read_spawns(log: Path) -> list[tuple[str, int, float, str]]:
    """(task, attempt, time, event) of every fake-agent start and signal, from its spawns.log."""
    rows = []
    for line in log.read_text().splitlines() if log.exists() else []:
        parts = line.split()
        if len(parts) == 4:  # a line being written right now is skipped
            rows.append((parts[0], int(parts[1]), float(parts[2]), parts[3]))
    return rows


def read_events(root: Path) -> list[dict]:
    path = root / ".hive" / "events.jsonl"
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def read_state(root: Path, task_id: str) -> dict:
    try:
        return json.loads((root / ".hive" / "state" / PLAN / f"{task_id}.json").read_text())
    except (OSError, ValueError):
        return {}


def hive_loaded(pid: int) -> bool:
    """Whether doit's process has loaded Hive, seen from outside: Hive's first act in a doit
    process is to handle SIGTERM (crashsafe.install_for_doit), which Python alone leaves at its
    default, so the SIGTERM bit of /proc/<pid>/status's SigCgt (caught signals) says it."""
    try:
        with open(f"/proc/{pid}/status") as f:
            caught = next((int(line.split()[1], 16) for line in f if line.startswith("SigCgt:")), 0)
    except (OSError, ValueError):
        return True  # gone, or unreadable: hold the run to the full rules
    return bool(caught & (1 << (signal.SIGTERM - 1)))


_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b")


def output_errors(text: str) -> list[tuple[str, str]]:
    """(kind, detail) for every traceback and internal error in a command's output.
    The kind names the failure without paths, task names or numbers, so one bug
    seen in many trials counts as one kind."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            # other processes' lines may be interleaved with the traceback's
            end = next((j for j in range(i + 1, min(i + 200, len(lines))) if _EXCEPTION.match(lines[j])), None)
            exc = lines[end] if end is not None else "?"
            frames = [ln.strip() for ln in lines[i + 1 : end] if ln.strip().startswith("File ")]
            out.append((f"traceback: {_generic(exc)[:90]}", f"{exc[:160]} (last frame: {_frame(frames)})"))
        elif "internal error:" in line:
            msg = line.split("internal error:", 1)[1].strip()
            out.append((f"internal error: {_generic(_internal(msg))[:110]}", msg[:300]))
    return out


def _internal(msg: str) -> str:
    """`CommandError("`git -C /x add -A` exited with 128:\\nfatal: cannot change to ...")` ->
    `git add -A: exit 128: fatal: cannot change to ...`."""
    m = re.search(r"`git -C \S+ ([^`]*)` exited with (\d+):(?:\\n)?(.*)", msg)
    if not m:
        return msg
    detail = re.split(r"\\n|\"\)", m.group(3))[0]
    return f"git {m.group(1)}: exit {m.group(2)}: {detail}"


def _generic(text: str) -> str:
    # a path is noise, except the name of a lock file
    text = re.sub(
        r"'?/(?:tmp|work)/\S*?([^/\s']*\.lock)?'?(?=[\s:,)]|$)",
        lambda m: f"<path>/{m.group(1)}" if m.group(1) else "<path>",
        text,
    )
    text = re.sub(r"hive/[\w.-]+-a\d+", "<branch>", text)
    text = re.sub(rf"\b{PLAN}:[\w.-]+", "<task>", text)
    return re.sub(r"\b[0-9a-f]{7,40}\b", "<sha>", text)


def _frame(frames: list[str]) -> str:
    if not frames:
        return "?"
    m = re.match(r'File "([^"]+)", line (\d+), in (\S+)', frames[-1])
    return f"{Path(m.group(1)).name}:{m.group(2)} in {m.group(3)}" if m else frames[-1][:80]


def describe_plan(sc: Scenario) -> str:
    deps = " ".join(f"{t.id}<-{','.join(t.deps)}" for t in sc.tasks if t.deps)
    return f"{len(sc.tasks)} tasks" + (f" (deps {deps})" if deps else " (independent)")


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _tail(text: str, lines: int) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except OSError:  # the group is already gone
        pass


def group_snapshot(pgid: int) -> list[str]:
    """Every process of a process group: pid, state, the kernel function it waits in,
    command line."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
            if not d.name.isdigit() or int(stat[2]) != pgid:
                continue
            wchan = (d / "wchan").read_text().strip()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            out.append(f"{d.name} {stat[0]} {wchan or '-'} {cmd[:90]}")
        except (OSError, IndexError, ValueError):
            continue
    return out


def processes_where(wanted: Callable[[list[bytes]], bool]) -> list[tuple[int, str]]:
    """(pid, command line) of every live process but this one whose environment entries
    (`NAME=value` bytes) are `wanted`."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if wanted((d / "environ").read_bytes().split(b"\0")) and not _zombie(d):
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                out.append((int(d.name), cmd))
        except OSError:
            continue
    return out


def _zombie(proc_dir: Path) -> bool:
    return (proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


# -- command line ----------------------------------------------------------------
def report(res: TrialResult) -> None:
    print(f"seed {res.seed}: faults: {', '.join(res.faults) or 'none'}")
    for line in res.runs:
        print(f"  {line}")
    for note in res.notes:
        print(f"  note: {note}")
    verdict = "PASS" if res.passed else "FAIL"
    print(f"  {verdict} ({res.duration:.1f}s)" + (f"  kept: {res.dir}" if res.dir.exists() else ""))
    findings = Findings()
    findings.by_kind = res.findings
    for line in findings.lines():
        print(f"    {line}" if line.startswith(" ") else f"    - {line}")
    sys.stdout.flush()


def summary(results: list[TrialResult], elapsed: float) -> str:
    failed = [r for r in results if not r.passed]
    lines = [
        f"soak: {len(results)} trials, {len(results) - len(failed)} passed, {len(failed)} failed"
        + (f" (seeds {' '.join(str(r.seed) for r in failed)})" if failed else "")
        + f", {elapsed:.1f}s total, {sum(r.duration for r in results) / max(len(results), 1):.1f}s per trial"
    ]
    seeds_by_kind: dict[str, list[int]] = {}
    for r in failed:
        for kind in r.findings:
            seeds_by_kind.setdefault(kind, []).append(r.seed)
    for kind, seeds in sorted(seeds_by_kind.items(), key=lambda kv: -len(kv[1])):
        lines.append(
            f"  {len(seeds):3d} trial(s): {kind}  (seeds {' '.join(map(str, seeds[:8]))}"
            f"{' ...' if len(seeds) > 8 else ''})"
        )
    return "\n".join(lines)
