"""One trial: set its repository up, run doit under the scenario's faults until a clean run exits 0,
check the invariants, clean up; `run_trial` does all of it for a seed."""

from __future__ import annotations

import dataclasses
import random
import signal
import subprocess
import time
from collections.abc import Callable

from . import faults
from .checks import run_checks
from .forge import Forge
from .output import first_line
from .processes import dump_python_stacks, group_snapshot, killpg
from .records import EventWatch, read_events, read_spawns
from .results import TrialResult
from .runs import RUN_TIMEOUT, STOP_TIMEOUT, RunRecord
from .sandbox import PY, TESTS, Sandbox, SoakError, UserWork
from .scenario import GRACE_S, MAX_RUNS, PLAN, Round, Scenario, describe_plan, make_scenario, render_plan

FAKE_AGENT = TESTS / "fake_agent.py"
FORGE_TOKEN = "soak-token"
MAX_ATTEMPTS = 3
POLL_S = 0.05
FAST_POLL_S = 0.003

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


class Trial(Sandbox):
    # [sandbox] mode: "" the default ("auto": sandboxed where bubblewrap works), "on" (`--sandbox`)
    # or "off" (`--no-sandbox`)
    sandbox_mode = ""

    def __init__(self, sc: Scenario, verbose: bool = False, trace_git: bool = False) -> None:
        super().__init__(sc, verbose, trace_git)
        self.rm_worktree = faults.WorktreeRemoval(sc)
        self.check_kill = faults.CheckKill(sc)
        self.answerer = faults.Answerer(sc)

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
        # the fake agents log their starts and signals in .hive/fake: writable in a sandbox
        mode = f'mode = "{self.sandbox_mode}"\n' if self.sandbox_mode else ""
        with open(self.root / ".hive" / "config.toml", "a") as f:
            f.write(f'\n[sandbox]\n{mode}writable = ["{self.root}/.hive/fake/"]\n')
        if self.sc.batch > 1:
            config = self.root / ".hive" / "config.toml"
            batched = f"[merge]\nbatch = {self.sc.batch}\nmax_checks = 1\n"
            config.write_text(config.read_text().replace("[merge]\n", batched, 1))
        if self.sc.pr:
            self._on_a_forge()
        (self.root / "plans" / f"{PLAN}.md").write_text(render_plan(self.sc, self.root))
        self.user = self._protect_user_work()

    def _on_a_forge(self) -> None:
        """Pull-request mode: the scripted forge (a thread of the soak: it outlives every run) with
        the repository's main as its own, `origin` pointing at it, the user's token in the env."""
        self.forge = Forge(self.dir / "forge", token=FORGE_TOKEN).start()
        self.git_out("remote", "add", "origin", str(self.forge.remote))
        self.git_out("push", "-q", "origin", "main")
        config = self.root / ".hive" / "config.toml"
        text = config.read_text().replace("[merge]\n", '[merge]\nmode = "pr"\n', 1)
        text += (
            f'\n[forge]\napi_url = "{self.forge.url}"\nrepository = "{self.forge.owner}/{self.forge.repo}"\n'
            'poll = "0.2s"\napprovals = 0\n'
        )
        config.write_text(text)
        self.env["GH_TOKEN"] = FORGE_TOKEN

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
                    faults.apply(self, f, recs, procs, signalled, now - t0)
            self.rm_worktree.maybe_apply(self, recs)
            self.check_kill.maybe_apply(self, recs)
            self.answerer.poll(self, now)
            self._police(recs, procs, signalled, now)
            for rec, p in zip(recs, procs, strict=True):
                if not rec.duration and p.poll() is not None:  # a twin may end long before the other
                    rec.duration = now - rec.started
            # a phase lasts a few milliseconds: look often while a fault waits for one
            time.sleep(FAST_POLL_S if any(f.trigger for f in pending) else POLL_S)
        self.answerer.settle(self)
        faults.retry_trapped(self, recs)
        for f in pending:
            self.notes.append(f"round {number}: {f.describe()} not applied (the run ended first)")
        for rec, p in zip(recs, procs, strict=True):
            rec.code = p.returncode
            rec.duration = rec.duration or time.monotonic() - rec.started
            self.runs.append(rec)
            if not rec.died_before_hive():
                self.scan_output(f"run {rec.label}", rec.output())
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
            rec.stacks = dump_python_stacks(p.pid, rec.out_path)
            killpg(p.pid, signal.SIGKILL)
            p.wait()

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

    def check(self) -> None:
        run_checks(self)

    def dump(self) -> None:
        """Everything needed to judge a failure: plan, outputs, agent timeline, events."""
        print(f"--- plan ({self.root / 'plans' / f'{PLAN}.md'})")
        print(render_plan(self.sc, self.root))
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


TrialMaker = Callable[[Scenario, bool, bool], "Trial"]


def run_trial(
    seed: int,
    verbose: bool = False,
    keep: bool = False,
    trace_git: bool = False,
    on_ray: TrialMaker | None = None,
    sandbox: str = "",
    pr: bool | None = None,
) -> TrialResult:
    """One trial; `on_ray` makes it on the Ray executor (ray.py's `RaySoak.trial`); `sandbox`
    is its `[sandbox] mode` ("": the default); `pr` in pull-request mode or not, whatever the
    seed drew (None: as it drew)."""
    sc = make_scenario(seed, ray=on_ray is not None)
    sc = sc if pr is None else dataclasses.replace(sc, pr=pr)
    trial = (on_ray or Trial)(sc, verbose, trace_git)
    trial.sandbox_mode = sandbox
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
