"""Where everything lives in a Hive repo. Plan and task names reach the
filesystem only through `names`, so `../x` can never escape `.hive/`."""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

from hive.errors import HiveError
from hive.store import names

# doit's cache (relative to the repo root, where doit runs), and what the repo's local
# exclude file ignores: the db and the journal sqlite leaves beside it when doit is
# killed mid-write (seen in the soak as a stray file in the user's `git status`)
DOIT_DB = ".doit.db"
DOIT_DB_EXCLUDE = f"/{DOIT_DB}*"
# ... and the bytecode Python writes for dodo.py when doit imports it (a `__pycache__/` in the
# user's `git status` after their first `doit`)
DODO_BYTECODE_EXCLUDE = "/__pycache__/dodo.*.pyc"
LOCAL_EXCLUDES = (DOIT_DB_EXCLUDE, DODO_BYTECODE_EXCLUDE)


@dataclass(frozen=True)
class Paths:
    root: Path

    @property
    def hive(self) -> Path:
        return self.root / ".hive"

    @property
    def config(self) -> Path:
        return self.hive / "config.toml"

    @property
    def plans(self) -> Path:
        return self.root / "plans"

    @property
    def state(self) -> Path:
        return self.hive / "state"

    @property
    def locks(self) -> Path:
        return self.hive / "locks"

    @property
    def events(self) -> Path:
        return self.hive / "events.jsonl"

    @property
    def run_record(self) -> Path:
        """When the latest `doit` run began and its pid (store.usage): what a run's budget counts from."""
        return self.hive / "run.json"

    @property
    def bin(self) -> Path:
        return self.hive / "bin"

    @property
    def salvage(self) -> Path:
        return self.hive / "salvage"

    def pause_file(self, profile: str) -> Path:
        """A rate-limited agent profile's pause: no task starts on it before its time (folder `holds/`, as
        older runs wrote it)."""
        slug = re.sub(r"[^A-Za-z0-9._-]", "_", profile)
        if slug != profile:
            slug += "-" + hashlib.sha1(profile.encode()).hexdigest()[:8]
        return self.hive / "holds" / f"{slug}.json"

    def salvaged(self, name: str) -> Path:
        """Where a directory git does not know is moved aside, stamped so nothing is overwritten."""
        return self.salvage / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"

    @property
    def web_csrf(self) -> Path:
        """The CSRF token of `hive web`'s pages (private to the user): the same after a restart,
        so an open page's forms still work (hive.web.security)."""
        return self.hive / "web" / "csrf"

    @property
    def debug_log(self) -> Path:
        return self.hive / "hive.log"

    def notified(self, name: str) -> Path:
        """Marks a notification sent once per run (`hive.notify`), e.g. the run's budget."""
        return self.hive / "notify" / _safe(name)

    def state_file(self, plan: str, task_id: str) -> Path:
        return self.state / _safe(plan) / f"{_safe(task_id)}.json"

    @property
    def state_lock(self) -> Path:
        return self.locks / "state.lock"

    @property
    def merge_lock(self) -> Path:
        return self.locks / "merge.lock"

    @property
    def parallel_lock(self) -> Path:
        """Shared by parallel-safe tasks, exclusive for a `Parallel-safe: no` one."""
        return self.locks / "parallel.lock"

    def module_lock(self, module: str) -> Path:
        return self.locks / "modules" / f"{names.module_lock(module)}.lock"

    def slot_lock(self, number: int) -> Path:
        return self.locks / "slots" / f"{names.worker_id(number)}.lock"

    @property
    def shim(self) -> Path:
        """`hive` for agents: runs this very Hive, wherever it is installed."""
        return self.bin / "hive"

    @property
    def queue(self) -> Path:
        """The merge queue (store/queue.py)."""
        return self.hive / "queue.json"

    @property
    def verified(self) -> Path:
        """Every tree whose checks passed, one JSON line each (engine/merge.py)."""
        return self.hive / "verified.jsonl"

    def check_slot(self, number: int) -> Path:
        return self.locks / "checks" / f"c{number}.lock"

    def claim_lock(self, plan: str, task_id: str) -> Path:
        return self.locks / "claims" / f"{names.stem(plan, task_id)}.lock"

    def signal_dir(self, plan: str, task_id: str, attempt: int) -> Path:
        """The attempt's own folder for its signal: the one `.hive` folder (with its task's
        notes and questions) a sandboxed agent may write, so it cannot signal for another."""
        return self.hive / "signals" / names.attempt_name(plan, task_id, attempt)

    def signal_file(self, plan: str, task_id: str, attempt: int) -> Path:
        return self.signal_dir(plan, task_id, attempt) / "signal.json"

    def review_dir(self, plan: str, task_id: str, attempt: int, round_: int, try_: int) -> Path:
        """A reviewer's own folder for its verdict (`hive done` / `hive changes`), as an attempt's
        signal folder is its agent's (engine/review.py)."""
        return self.hive / "signals" / names.review_name(plan, task_id, attempt, round_, try_)

    def found_dir(self, plan: str, task_id: str, attempt: int) -> Path:
        """What a sandboxed attempt discovered (`hive discover`), until Hive files it in its plan's
        folder (`found`): the sandbox shows it there, so the agent cannot touch the others'."""
        return self.hive / "found" / names.attempt_name(plan, task_id, attempt)

    def refused_file(self, plan: str, task_id: str) -> Path:
        """The connections its sandbox's proxy refused to a task's agents and checks, one JSON
        line each (written by the proxy, outside the sandbox's reach)."""
        return self.hive / "refused" / f"{names.stem(plan, task_id)}.jsonl"

    def private_gitdir(self, plan: str, task_id: str, attempt: int) -> Path:
        """A sandboxed attempt's own git directory (hive.sandbox.gitdir)."""
        return self.hive / "gitdirs" / names.attempt_name(plan, task_id, attempt)

    @property
    def notes(self) -> Path:
        return self.hive / "notes"

    def notes_file(self, plan: str, task_id: str) -> Path:
        return self.notes / f"{names.stem(plan, task_id)}.jsonl"

    @property
    def questions(self) -> Path:
        return self.hive / "questions"

    def questions_dir(self, plan: str, task_id: str) -> Path:
        """A task's questions and answers (`store.questions`)."""
        return self.questions / names.stem(plan, task_id)

    def log_file(self, plan: str, task_id: str) -> Path:
        return self.hive / "logs" / _safe(plan) / f"{_safe(task_id)}.log"

    def context_copy(self, plan: str, task_id: str, attempt: int) -> Path:
        return self.hive / "contexts" / f"{names.attempt_name(plan, task_id, attempt)}.md"

    def stop_file(self, plan: str, task_id: str, attempt: int) -> Path:
        return self.hive / "signals" / f"{names.attempt_name(plan, task_id, attempt)}.stop"

    def env_file(self, plan: str, task_id: str, attempt: int) -> Path:
        return self.hive / "run" / f"{names.attempt_name(plan, task_id, attempt)}.env"

    def exit_file(self, plan: str, task_id: str, attempt: int) -> Path:
        return self.hive / "run" / f"{names.attempt_name(plan, task_id, attempt)}.exit"

    def excludes_file(self, plan: str, task_id: str, attempt: int) -> Path:
        return self.hive / "excludes" / f"{names.attempt_name(plan, task_id, attempt)}"

    def script_file(self, plan: str, task_id: str, attempt: int) -> Path:
        return self.hive / "scripts" / f"{names.attempt_name(plan, task_id, attempt)}.sh"

    def checkpoint_file(self, plan: str, task_id: str) -> Path:
        return self.hive / "checkpoints" / _safe(plan) / f"{_safe(task_id)}.md"

    @property
    def discovered(self) -> Path:
        return self.hive / "discovered"

    def discovered_dir(self, plan: str) -> Path:
        return self.discovered / _safe(plan)

    def discovered_item(self, plan: str, item: str, settled: bool = False) -> Path:
        """A discovered item waiting for review, or (`settled`) answered."""
        folder = self.discovered_dir(plan)
        return (folder / "settled" if settled else folder) / f"{_safe(item)}.json"

    def planning_file(self, slug: str, kind: str) -> Path:
        """A `hive plan` session's files: its brief, its log, its exit status, its environment;
        for `--split`, the tasks the planner writes and the plan they would make if invalid."""
        where = {
            "brief": ("planning", ".md"),
            "tasks": ("planning", "-tasks.md"),
            "proposed": ("planning", "-proposed.md"),
            "log": ("logs/planning", ".log"),
            "exit": ("run", ".plan-exit"),
            "env": ("run", ".plan-env"),
        }
        folder, suffix = where[kind]
        return self.hive / folder / f"{_safe(slug)}{suffix}"

    @property
    def plan_cache(self) -> Path:
        return self.hive / "cache" / "plans"

    @property
    def report(self) -> Path:
        return self.hive / "report.md"

    @property
    def ignore_file(self) -> Path:
        return self.hive / ".gitignore"


def _safe(name: str) -> str:
    """Plan names and IDs are validated by the parser; this guards the CLI's inputs too."""
    if not names.SAFE_RE.match(name):
        raise HiveError(f"{name!r} is not a valid plan or task ID (letters, digits, '.', '_', '-')")
    return name


def find_root(start: Path | None = None) -> Path:
    """The repo root: the nearest directory with `.hive/` or `dodo.py` and `plans/`."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / ".hive").is_dir() or ((d / "dodo.py").is_file() and (d / "plans").is_dir()):
            return d
    raise HiveError(f"{here}: not inside a Hive repository (no .hive/ found); run `hive init` in your git repo first")
