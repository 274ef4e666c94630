"""The scenario of one trial, all drawn from its seed: the plan (3-7 fake-agent tasks in a random
DAG) and the faults (what, which run, task or node, and when). Nothing here runs anything: the same
seed always makes the same scenario, which is what `--replay SEED` and test_soak's fixed seeds rely on."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from pathlib import Path

PLAN = "soak"
MAX_RUNS = 8  # runs (fault runs included) to reach an exit-0 run
GRACE_S = 4  # spawn_grace_period: what a silent agent costs

# Process faults: at most one per run, as a user (or the OOM killer) would do it.
PROCESS_FAULTS = ("kill9", "sigterm", "sigint", "sigint-group")
# A process fault lands at a random time, or a random delay (seconds, from these ranges)
# after the n-th time Hive reaches a phase, to hit its narrow windows: "claim" (a task
# moves to in_progress; its worktree is being made), "signal" (an agent signals done;
# Hive commits leftovers and builds the merge), "merging" (main is about to move;
# then the worktree and branches are removed).
TRIGGERS = {"claim": (0.0, 0.08), "signal": (0.0, 0.25), "merging": (0.0, 0.04)}
# --ray (ray.py): a cluster of a head and RAY_WORKERS worker nodes, started once for all
# trials; a doit run starts ~1.5 s later than without Ray (connecting, the project's node actors)
RAY_WORKERS = 2
RAY_STARTUP = 2.0
NODE_KILL_P = 0.3
RAY_DEATH_P = 0.25  # Ray dies on a node whose machine lives: its raylet, or Hive's actor there, SIGKILLed
NODE_FAULTS = ("node-kill", "raylet-kill", "actor-kill")  # Ray only: what `target` (a worker node) suffers
# A task's agent asks its human (`hive ask`) before its work, and the soak answers it after
# ANSWER_DELAY seconds (faults.Answerer); not on Ray, whose agents cannot ask yet
ASK_P = 0.3
ANSWER_DELAY = (0.0, 0.8)
# A task has a `**Verify:**` (it goes through the merge queue, engine/merge.py) that takes this
# long: faults timed against the run then land in the queue too, a check killed among them
VERIFY_P = 0.5
VERIFY_S = (0.1, 0.8)
# ... and one such task's check is killed as it runs (the OOM killer, a user's kill), once: it
# fails like a failed check, and its task goes on in a next attempt
CHECK_KILL_P = 0.3
# ... and one (another) fails its check the first time it runs, while the tasks queued behind it
# verify on top of it: they are rebuilt without it and verified again; it merges next attempt
CHECK_FAIL_P = 0.3
# ... and the queue verifies in batches (`[merge] batch = 3`, one check at a time, so tasks gather
# behind a running check): faults land in a batch's run, its publish and its bisection
BATCH_P = 0.3
# A task's first attempt leaves a trap for Hive in a folder it may write (issue 37: a FIFO or a link
# to /dev/zero where Hive reads its signal, its branch, its questions, its discovered work; notes of
# megabytes): those that Hive must fail the attempt on (TRAPS_FAILING, held for a human: the soak
# then runs `hive retry`), the others it must drop, the run going on either way
TRAP_P = 0.3
# A task's change is reviewed (issue 39: `**Review:** fake`): its first review asks for changes, the
# next approves, so its author works twice and faults land in reviews too
REVIEW_P = 0.3
# A third of the trials run in pull-request mode (issue 45): each task pushed and proposed as a PR on
# a scripted forge (tests/forge, its CI absent: green), merged there through the API; the same
# faults land between the push, the PR and the merge call.
PR_P = 1 / 3
TRAPS_FAILING = ("signal-fifo", "signal-zero", "ref-fifo", "objects-fifo")
TRAPS = (*TRAPS_FAILING, "question-fifo", "found-zero", "notes-flood")


@dataclass(frozen=True)
class TaskSpec:
    id: str
    deps: tuple[str, ...]
    content: str
    sleep: float  # 0: no sleep
    sleep_first: bool  # sleep before the work (else between commit and signal)
    first_attempt: str = ""  # "" | "crash" | "silent": attempt 1 fails this way
    answer_delay: float | None = None  # it asks its human first; the answer comes this long after
    verify: float | None = None  # it has a Verify that takes this long (and checks its file)
    trap: str = ""  # attempt 1 leaves this trap for Hive (TRAPS) once it has committed
    reviewed: bool = False  # its change is reviewed: round 1 asks for changes, the next approves

    @property
    def question(self) -> str:
        return f"Which way for task {self.id}?"

    @property
    def answer(self) -> str:
        """The option the soak chooses (the second: never what an agent would guess first)."""
        return f"b{self.id}"

    @property
    def written(self) -> str:
        """What its file holds once merged: the answer is part of it when it asked."""
        return self.content + (f"-{self.answer}" if self.answer_delay is not None else "")

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
    check_kill: str = ""  # task whose check is killed while it runs
    check_fail: str = ""  # task whose check fails the first time it runs
    batch: int = 1  # `[merge] batch` (with max_checks = 1 when above 1)
    pr: bool = False  # pull-request mode: each task a PR on a scripted forge, merged there (issue 45)

    def fails_its_first_check(self, task: TaskSpec) -> bool:
        return task.id == self.check_fail

    def fault_names(self) -> list[str]:
        out = []
        for i, r in enumerate(self.rounds, 1):
            out += [f"r{i}:twin-start"] * (len(r.ns) > 1) + [f"r{i}:{f.describe()}" for f in r.faults]
        out += [f"{t.first_attempt}@1:{t.id}" for t in self.tasks if t.first_attempt]
        out += [f"asks:{t.id}+{t.answer_delay:.2f}s" for t in self.tasks if t.answer_delay is not None]
        out += [f"verify:{t.id}+{t.verify:.2f}s" for t in self.tasks if t.verify is not None]
        if self.rm_worktree:
            out.append(f"rm-worktree:{self.rm_worktree}+{self.rm_delay:.2f}s")
        if self.check_kill:
            out.append(f"check-kill:{self.check_kill}")
        if self.check_fail:
            out.append(f"check-fail:{self.check_fail}")
        if self.batch > 1:
            out.append(f"batch:{self.batch}")
        if self.pr:
            out.append("pr-mode")
        out += [f"trap@1:{t.id}:{t.trap}" for t in self.tasks if t.trap]
        out += [f"reviewed:{t.id}" for t in self.tasks if t.reviewed]
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
    if not ray:  # drawn last: a seed's plan and faults are what they were before tasks asked
        tasks = tuple(
            dataclasses.replace(t, answer_delay=round(rng.uniform(*ANSWER_DELAY), 2)) if rng.random() < ASK_P else t
            for t in tasks
        )
    # from a generator of its own: every other draw of a seed is what it was before tasks had checks
    checks = random.Random(f"verify {seed}")
    tasks = tuple(
        dataclasses.replace(t, verify=round(checks.uniform(*VERIFY_S), 2)) if checks.random() < VERIFY_P else t
        for t in tasks
    )
    # a check killed costs its task an attempt: only a task with attempts to spare (its first one
    # not failing by design, its worktree not deleted, no tmux server killed in the trial)
    spare = [t for t in tasks if t.verify is not None and not t.first_attempt and t.id != rm]
    tmux = any(f.kind == "tmux-kill" for r in rounds for f in r.faults)
    check_kill = checks.choice(spare).id if spare and not tmux and checks.random() < CHECK_KILL_P else ""
    # drawn last: a seed keeps every fault it had before; never the task whose check is killed
    # (one attempt lost to the checks a task at most)
    others = [t for t in spare if t.id != check_kill]
    check_fail = checks.choice(others).id if others and not tmux and checks.random() < CHECK_FAIL_P else ""
    batch = 3 if not ray and checks.random() < BATCH_P else 1  # drawn last, as each fault before it
    # from a generator of its own too; a task whose attempts other faults already spend asks none
    traps = random.Random(f"trap {seed}")
    calm = [
        t for t in tasks if not t.first_attempt and t.answer_delay is None and t.id not in (rm, check_kill, check_fail)
    ]
    if not ray and calm and traps.random() < TRAP_P:
        trapped, kind = traps.choice(calm).id, traps.choice(TRAPS)
        tasks = tuple(dataclasses.replace(t, trap=kind) if t.id == trapped else t for t in tasks)
    reviews = random.Random(f"review {seed}")  # drawn last, from its own generator too
    if not ray:
        tasks = tuple(dataclasses.replace(t, reviewed=True) if reviews.random() < REVIEW_P else t for t in tasks)
    pr = not ray and random.Random(f"pr {seed}").random() < PR_P  # drawn last, from its own generator too
    return Scenario(seed, tasks, tuple(rounds), rerun_ns, rm, delay, check_kill, check_fail, batch, pr)


def failed_check_marker(root: Path, task: TaskSpec) -> Path:
    """Made by the task's check the first time it runs (which then fails); in .hive/fake, which
    checks may write in their sandbox."""
    return root / ".hive" / "fake" / f"check-failed-{task.id}"


def render_plan(sc: Scenario, root: Path) -> str:
    parts = [
        (
            f"---\nstatus: approved\n---\n# Soak plan (seed {sc.seed})\n\n## Context\n"
            f"Generated by the soak (tests/soak/); every task writes one file and commits it.\n\n## Tasks\n"
        )
    ]
    for t in sc.tasks:
        lines = [f"### Task {t.id}: Write {t.file}", f"**Depends on:** {', '.join(t.deps) or 'none'}"]
        if t.reviewed:
            lines.append("**Review:** fake")
        if t.verify is not None and sc.fails_its_first_check(t):
            once = failed_check_marker(root, t)
            fail_once = f"{{ test -e {once} || {{ touch {once}; exit 1; }}; }}"
            lines.append(f"**Verify:** sleep {t.verify}; test -f {t.file} && {fail_once}")
        elif t.verify is not None:
            lines.append(f"**Verify:** sleep {t.verify}; test -f {t.file}")
        lines.append("")
        if t.first_attempt == "crash":
            lines.append("fake@1: crash 5")  # exits non-zero; later attempts go on below
        elif t.first_attempt == "silent":
            lines.append("fake@1: silent")  # no sign of life: a spawn failure after the grace period
        if t.sleep and t.sleep_first:
            lines.append(f"fake: sleep {t.sleep}")
        if t.answer_delay is not None:
            lines.append(f'fake: ask "{t.question}" a{t.id},{t.answer}')
        written = f"{t.content}-{{answer}}" if t.answer_delay is not None else t.content
        lines += [f"fake: write {t.file} {written}", f"fake: commit-once {t.message}"]
        if t.trap:
            lines.append(f"fake@1: leave {t.trap}")
        if t.reviewed:
            lines += ['fake-review@1: signal changes "Name the file in the commit."', "fake-review: signal done"]
        if t.sleep and not t.sleep_first:
            lines.append(f"fake: sleep {t.sleep}")
        lines.append("fake: signal done")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def describe_plan(sc: Scenario) -> str:
    deps = " ".join(f"{t.id}<-{','.join(t.deps)}" for t in sc.tasks if t.deps)
    return f"{len(sc.tasks)} tasks" + (f" (deps {deps})" if deps else " (independent)")
