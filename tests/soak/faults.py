"""Applying a trial's faults: a signal or kill -9 to a doit run, the tmux server killed, a worker
node's death (through the executor's hook), the user committing to main mid-run, and a task's
worktree deleted under its agent; and the human who answers the agents' questions."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time

from hive.store.files import SMALL, NotAFile, read_untrusted

from .output import tail
from .processes import hive_loaded, killpg
from .records import read_spawns, read_state
from .runs import RunRecord
from .sandbox import PY, Sandbox
from .scenario import NODE_FAULTS, PLAN, PROCESS_FAULTS, TRAPS_FAILING, Scenario, TaskSpec, TimedFault

LOCK_RETRY_S = 6.0  # how long the "user" retries a git command that finds index.lock


def apply(
    sb: Sandbox,
    f: TimedFault,
    recs: list[RunRecord],
    procs: list[subprocess.Popen],
    signalled: dict[int, float],
    at: float,
) -> None:
    """Apply `f`, due now (`at` seconds into the round), to the round's runs `recs`/`procs`; a stop
    signal's time goes to `signalled` (by run), against which a run slow to stop is judged."""
    desc = f"{f.kind}@{at:.3f}s" + (f" ({f.trigger}#{f.nth}+{f.at:.3f}s)" if f.trigger else "")
    if f.kind in PROCESS_FAULTS:
        p, rec = procs[f.target], recs[f.target]
        if p.poll() is not None:
            sb.notes.append(f"{f.describe()} not applied (run {rec.label} was over)")
            return
        if f.kind == "kill9":
            killpg(p.pid, signal.SIGKILL)
            rec.killed = "kill9"
        elif f.kind == "sigint-group":
            rec.before_hive = not hive_loaded(p.pid)
            killpg(p.pid, signal.SIGINT)
        else:
            rec.before_hive = not hive_loaded(p.pid)
            os.kill(p.pid, signal.SIGTERM if f.kind == "sigterm" else signal.SIGINT)
        if f.kind != "kill9":
            rec.stop_signal = f.kind
            rec.signal_at = signalled[f.target] = time.monotonic()
        rec.faults.append(desc)
    elif f.kind == "tmux-kill":
        sb.kill_tmux()
        for rec in recs:
            rec.faults.append(desc)
    elif f.kind in NODE_FAULTS:
        desc += sb.kill_node(f.kind, f.target)
        for rec in recs:
            rec.faults.append(desc)
    elif f.kind == "user-commit":
        desc += user_commit(sb)
        for rec in recs:
            rec.faults.append(desc)


def user_commit(sb: Sandbox) -> str:
    """The user commits a new file to main in the main checkout, as people do while
    Hive runs. Never user.txt or scratch/."""
    assert sb.user is not None
    k = len(sb.user.commits) + 1
    name = f"user-{k}.txt"
    (sb.root / name).write_text(f"the user's commit {k}\n")
    subject = f"user: commit {k} during the soak"
    for argv in (["add", "--", name], ["commit", "-q", "-m", subject, "--", name]):
        r = git_retrying_lock(sb, *argv)
        if r.returncode != 0:
            sb.git("reset", "-q", "--", name)
            (sb.root / name).unlink()
            sb.findings.add(
                "the user could not commit to main during a run",
                f"git {argv[0]} exited {r.returncode}: {tail(r.stderr, 3)}",
            )
            return " (failed)"
    sb.user.commits.append(subject)
    return f" ({name})"


def git_retrying_lock(sb: Sandbox, *args: str) -> subprocess.CompletedProcess:
    """What a patient user does when git says another git process holds the lock, or that
    HEAD moved under their commit (Hive merged at that instant: git's compare-and-swap on the
    ref refuses the commit and keeps the index, so trying again is the user's answer)."""
    deadline = time.monotonic() + LOCK_RETRY_S
    while True:
        r = sb.git(*args)
        raced = ".lock" in r.stderr or "cannot lock ref" in r.stderr
        if r.returncode == 0 or not raced or time.monotonic() > deadline:
            return r
        time.sleep(0.1)


class WorktreeRemoval:
    """The scenario's `rm_worktree` fault: the task's worktree deleted `rm_delay` after its agent
    started (an attempt's start, as the agents' spawns.log shows it), once per trial."""

    def __init__(self, sc: Scenario) -> None:
        self.task = sc.rm_worktree
        self.delay = sc.rm_delay
        self.done = not sc.rm_worktree
        self.seen: tuple[int, float] | None = None  # (attempt, monotonic time its start was seen)

    def maybe_apply(self, sb: Sandbox, recs: list[RunRecord]) -> None:
        """Delete the target task's worktree `delay` after its agent started."""
        if self.done:
            return
        target = self.task
        starts = [a for t, a, _, e in read_spawns(sb.spawn_log) if t == f"{PLAN}:{target}" and e == "start"]
        if not starts:
            return
        now = time.monotonic()
        if self.seen is None or self.seen[0] != starts[-1]:
            self.seen = (starts[-1], now)
        if now - self.seen[1] < self.delay:
            return
        st = read_state(sb.root, target)
        wt = sb.agent_worktree(st)
        if st.get("state") == "done":
            self.done = True
            sb.notes.append(f"rm-worktree:{target} not applied (the task was done first)")
        elif st.get("state") == "in_progress" and st.get("attempt") == starts[-1] and wt.is_dir():
            shutil.rmtree(wt, ignore_errors=True)
            shutil.rmtree(wt, ignore_errors=True)  # again: the agent may have been writing into it
            self.done = True
            for rec in recs:
                rec.faults.append(f"rm -rf {wt.name} (attempt {starts[-1]})")


class CheckKill:
    """The scenario's `check_kill` fault: the task's Verify (`sleep S; test -f FILE`, in its
    sandbox) SIGKILLed the first time it is seen running, once per trial. Found by its command
    line among the processes of this trial alone (its tmux socket in their environment)."""

    def __init__(self, sc: Scenario) -> None:
        task = next((t for t in sc.tasks if t.id == sc.check_kill), None)
        self.command = f"test -f {task.file}" if task else ""
        self.key = task.key if task else ""
        self.done = task is None

    def maybe_apply(self, sb: Sandbox, recs: list[RunRecord]) -> None:
        if self.done:
            return
        running = [
            (pid, cmd) for pid, cmd in sb.processes() if cmd.startswith("bash -c ") and cmd.endswith(self.command)
        ]
        if not running:
            if read_state(sb.root, self.key.split(":", 1)[1]).get("state") == "done":
                self.done = True
                sb.notes.append(f"check-kill:{self.key} not applied (the task was done first)")
            return
        for pid, _ in running:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        self.done = True
        for rec in recs:
            rec.faults.append(f"check of {self.key} killed")


_ASKED_TASK = re.compile(r"^Which way for task (\S+)\?$")


class Answerer:
    """The human at another terminal: answers each task's waiting question (`hive ask`) with
    `hive answer --choice` its `answer_delay` after first seeing it, whatever runs or not."""

    def __init__(self, sc: Scenario) -> None:
        self.tasks = {t.id: t for t in sc.tasks if t.answer_delay is not None}
        self.seen: dict[tuple[str, str], float] = {}  # (folder, question number) -> when first seen
        self.running: list[tuple[str, subprocess.Popen]] = []

    def poll(self, sb: Sandbox, now: float, at_once: bool = False) -> None:
        if not self.tasks:
            return
        self._reap(sb)
        for folder, number, task in self._waiting(sb):
            first = self.seen.setdefault((folder, number), now)
            if at_once or now - first >= (task.answer_delay or 0.0):
                self.seen[(folder, number)] = float("inf")  # answered once: never again
                cmd = [PY, "-m", "hive", "answer", task.key, "--choice", task.answer]
                proc = subprocess.Popen(
                    cmd, cwd=sb.root, env=sb.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                )
                self.running.append((task.key, proc))

    def settle(self, sb: Sandbox) -> None:
        """Between runs: what is asked is answered before the next run starts (a clean run must
        not find a question nobody will answer in time)."""
        self.poll(sb, time.monotonic(), at_once=True)
        for _, proc in self.running:
            proc.wait(timeout=30)
        self._reap(sb)

    def _waiting(self, sb: Sandbox) -> list[tuple[str, str, TaskSpec]]:
        out = []
        base = sb.root / ".hive" / "questions"
        for folder in sorted(base.iterdir()) if base.is_dir() else []:
            numbers = sorted(int(n[:-5]) for n in os.listdir(folder) if n.endswith(".json") and n[:-5].isdigit())
            if not numbers or (folder / f"{numbers[-1]}.answer.json").exists():
                continue
            if self.seen.get((folder.name, str(numbers[-1]))) == float("inf"):
                continue
            try:  # as Hive reads it: a trap a task left there (a FIFO) must not hang the soak
                text = json.loads(read_untrusted(folder / f"{numbers[-1]}.json", SMALL))["text"]
            except (OSError, ValueError, KeyError, NotAFile):
                continue
            m = _ASKED_TASK.match(text)
            if m and m.group(1) in self.tasks:
                out.append((folder.name, str(numbers[-1]), self.tasks[m.group(1)]))
        return out

    def _reap(self, sb: Sandbox) -> None:
        for key, proc in list(self.running):
            if proc.poll() is None:
                continue
            self.running.remove((key, proc))
            said = proc.stdout.read() if proc.stdout else ""
            if proc.returncode != 0 and "answered meanwhile" not in said:
                sb.findings.add("`hive answer` failed", f"{key}: exit {proc.returncode}: {tail(said, 3)}")


def retry_trapped(sb: Sandbox, recs: list[RunRecord]) -> None:
    """The human who finds a task held for a trap its agent left (TRAPS_FAILING: its attempt
    failed, not to be tried again by the run) and runs `hive retry` for it, between runs; the
    runs `recs` that held it count it among their faults (they exit 1 for it)."""
    for task in sb.sc.tasks:
        if task.trap not in TRAPS_FAILING:
            continue
        st = read_state(sb.root, task.id)
        if st.get("state") == "failed" and st.get("permanent") and _TRAPPED.search(str(st.get("reason", ""))):
            r = subprocess.run(
                [PY, "-m", "hive", "retry", task.key], cwd=sb.root, env=sb.env, capture_output=True, text=True
            )
            if r.returncode != 0:
                sb.findings.add(
                    "`hive retry` failed", f"{task.key}: exit {r.returncode}: {tail(r.stdout + r.stderr, 3)}"
                )
            else:
                sb.notes.append(f"{task.key}: retried after its trap ({task.trap})")
                for rec in recs:
                    rec.faults.append(f"{task.trap} of {task.key} held it for a human")


# the reasons Hive gives a trap it fails an attempt on
_TRAPPED = re.compile(r"its signal file is |its private git directory holds ")
