"""One task's life — the action behind each doit task (SPEC "One task's run").

claim → worktree → brief → agent in tmux → wait for its signal → verify and
merge → clean up, with every step recorded in the state store first, so a run
killed between any two lines can be resumed by the next one.
"""
from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from doit.exceptions import TaskError, TaskFailed

from hive import git, names, signals, tmux, workspace
from hive.agents import AgentProfile
from hive.config import Config
from hive.context import ContextInput, prompt, render_context
from hive.continuation import continuation, dependency_results
from hive.errors import CommandError, HiveError
from hive.fsutil import HeldLock, atomic_write
from hive.merge import MergeRequest, merge
from hive.paths import Paths
from hive.plan import Plan, Task
from hive.state import INTERRUPTED, StaleState, StateStore, TaskState
from hive.supervise import Outcome, Watch, clean_tail, pid_alive, wait

HOLD_STATES = ("blocked", "too_big", "awaiting_human")


@dataclass(frozen=True)
class Job:
    """Everything one doit task needs; built by the compiler, never re-parsed."""
    root: Path
    plan: Plan
    task: Task
    config: Config

    @property
    def key(self) -> str:
        return names.task_key(self.plan.name, self.task.id)


def run_doit_task(job: Job) -> bool | TaskFailed | TaskError:
    """doit python-action: True when the task is done and merged, else TaskFailed."""
    try:
        return TaskRunner(job).run()
    except HiveError as e:
        return TaskFailed(f"{job.key}: {e}")
    except Exception:  # a bug, not a user error: keep the traceback out of the way but on disk
        log = Paths(job.root).debug_log
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as f:
            f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {job.key}\n{traceback.format_exc()}")
        return TaskError(f"{job.key}: internal error: {sys.exc_info()[1]!r} (traceback in {log})")


def say(message: str) -> None:
    """Progress for the user: stderr, because doit captures actions' stdout."""
    print(f"hive: {message}", file=sys.stderr, flush=True)


class TaskRunner:
    def __init__(self, job: Job) -> None:
        self.job = job
        self.task = job.task
        self.cfg = job.config
        self.paths = Paths(job.root)
        self.store = StateStore(self.paths)
        self.plan_name = job.plan.name
        self.main_ref = f"refs/heads/{self.cfg.main_branch}"
        self.merge_approved = False   # a human asked for this merge (hive retry / approve)

    # -- the whole life -------------------------------------------------
    def run(self) -> bool | TaskFailed:
        if not self.job.plan.approved:
            return TaskFailed(f"{self.job.key}: plan is draft: run `hive approve {self._plan_file()}` first")
        if not git.try_rev_parse(self.job.root, self.main_ref):
            return TaskFailed(f"{self.job.key}: branch {self.cfg.main_branch!r} does not exist or has no commits; "
                              f"commit something first or set [merge] main_branch in .hive/config.toml")
        claim = HeldLock(self.paths.claim_lock(self.plan_name, self.task.id))
        self._wait_for_claim(claim)
        try:
            return self._run_claimed()
        finally:
            claim.release()

    def _run_claimed(self) -> bool | TaskFailed:
        while True:
            st = self._read()
            step = self._decide(st)
            if step == "done":
                return True
            if step == "hold":
                return self._held(st)
            if step == "checkpoint":
                st = self._update(st, ("planned",), state="awaiting_human", task_hash=self.task.text_hash,
                                  reason=f"checkpoint ({self.task.type}): answer with `hive approve {self.job.key}`")
                return self._held(st)
            with self._slot() as worker:
                if step == "attach":
                    say(f"{self.job.key}: re-attaching to its running agent (tmux session {st.session})")
                    outcome = self._watch(st)
                elif step == "signalled":
                    outcome = self._pending_signal(st)
                elif step == "merge":
                    self.merge_approved = True
                    st = self._start_merge_only(st, worker)
                    outcome = Outcome("done", st.reason)
                else:
                    try:
                        st = self._start_attempt(st, worker)
                        outcome = self._watch(st)
                    except (HiveError, CommandError) as e:
                        outcome = Outcome("spawn_failed", f"agent_spawn_failed: could not start: {e}")
                st = self._finish(self._read(), outcome)
            if st.state == "done":
                return True
            if st.state == "failed" and st.attempts < self.cfg.max_attempts:
                say(f"{self.job.key}: attempt {st.attempt} failed ({_first_line(st.reason)}); "
                    f"starting attempt {st.attempt + 1} of {self.cfg.max_attempts}")
                continue
            return self._held(st)

    def _decide(self, st: TaskState) -> str:
        """What to do with the task as recorded (SPEC "Task states" re-run table)."""
        if st.merging and st.state != "done" and git.is_ancestor(self.job.root, st.merging, self.main_ref):
            self._record_merged(st, st.merging, st.files, "merged before the last run stopped")
            return "done"
        if st.state == "done":
            if st.task_hash == self.task.text_hash and st.merge_commit and \
                    git.is_ancestor(self.job.root, st.merge_commit, self.main_ref):
                return "done"
            why = "its text in the plan changed" if st.task_hash != self.task.text_hash else \
                f"its merge commit is no longer on {self.cfg.main_branch}"
            self._update(st, ("done",), state="planned", attempts=0, reason="", merge_commit="",
                         event=f"reopened: {why}")
            say(f"{self.job.key}: re-opened because {why}")
            return self._decide(self._read())
        if st.state == "in_progress":
            if st.session and pid_alive(st.pane_pid) and tmux.has_session(st.session):
                return "attach"
            if signals.read(self.paths.signal_file(self.plan_name, self.task.id, st.attempt)):
                return "signalled"
            self._update(st, ("in_progress",), state="failed", reason=INTERRUPTED,
                         attempts=max(st.attempts - 1, 0), history=st.history + (self._history(st, "interrupted", INTERRUPTED),),
                         event="interrupted: its agent is gone and no run held it")
            return "new"
        if st.state in HOLD_STATES:
            return "hold"
        if st.state == "failed" and st.reason != INTERRUPTED and st.attempts >= self.cfg.max_attempts:
            return "hold"
        if self.task.is_checkpoint:
            return "checkpoint"
        if st.state == "planned" and st.resume == "merge":
            return "merge"
        return "new"

    # -- starting an attempt ---------------------------------------------
    def _start_attempt(self, st: TaskState, worker: str) -> TaskState:
        root, attempt = self.job.root, st.attempt + 1
        base = git.rev_parse(root, self.main_ref)
        self._retire_worktree(st)
        start = self._continue_from(st, base)
        branch = names.branch(self.plan_name, self.task.id, attempt)
        session = names.session(self.plan_name, self.task.id, attempt)
        wt = root / self.cfg.worktree_base / names.worktree_dir(worker, self.plan_name, self.task.id, attempt)
        log = self.paths.log_file(self.plan_name, self.task.id)
        # Recorded before anything is created, so a crash at any later line leaves
        # a record that names what to resume or clean up.
        st = self._update(st, ("planned", "failed"), state="in_progress", attempt=attempt,
                          attempts=st.attempts + 1, worker=worker, pid=os.getpid(), session=session,
                          worktree=str(wt), branch=branch, base=base, started_at=time.time(), reason="",
                          task_hash=self.task.text_hash, pane_pid=0, merging="", output_tail="", resume="",
                          log_offset=_log_start(log, self.job.key, attempt, worker))
        workspace.create(root, wt, branch, start)
        profile = self._profile()
        env = self._agent_env(st, wt, worker)
        brief = self._brief(st, wt, profile)
        copied = workspace.copy_files(root, wt, self.cfg.worktree_copy)
        workspace.set_excludes(self.paths, root, wt, self.paths.excludes_file(self.plan_name, self.task.id, attempt),
                               [brief.name, *copied])
        if self.cfg.worktree_setup:
            setup = workspace.run_setup(wt, self.cfg.worktree_setup, env, self.cfg.task_timeout)
            if setup.code != 0:
                raise HiveError(f"worktree setup command failed (exit {setup.code}): {self.cfg.worktree_setup}\n"
                                f"{clean_tail(setup.output, 15)}")
            workspace.set_excludes(self.paths, root, wt, self.paths.excludes_file(self.plan_name, self.task.id, attempt),
                                   [brief.name, *copied, *workspace.untracked(wt)])
        argv = self._command(st, wt, brief, profile)
        tmux.new_session(session, wt, argv, log, self.paths.exit_file(self.plan_name, self.task.id, attempt),
                         env, unset=_UNSET_FOR_AGENTS)
        pane = tmux.pane(session)
        st = self._update(st, ("in_progress",), pane_pid=pane.pid if pane else 0, event="spawned")
        say(f"{self.job.key}: attempt {attempt} started — {'script' if self._is_script() else 'agent ' + profile.name}"
            f" in tmux session {session} (`hive attach {self.job.key}`), worktree {_rel(wt, root)}")
        return st

    def _retire_worktree(self, st: TaskState) -> None:
        """A previous attempt's worktree: its leftovers are committed to its branch
        (the next attempt starts from there), then it is removed."""
        wt = Path(st.worktree) if st.worktree else None
        if wt and wt.exists():
            workspace.retire_context(wt, self._context_name())
            git.commit_all(wt, f"hive: unfinished work of {self.job.key} attempt {st.attempt}")
            workspace.remove_if_clean(self.job.root, wt)

    def _continue_from(self, st: TaskState, base: str) -> str:
        """A new attempt builds on the last attempt's commits, if it made any (a
        script is deterministic and starts afresh)."""
        if not self._is_script() and st.branch and git.branch_exists(self.job.root, st.branch) and \
                not git.is_ancestor(self.job.root, f"refs/heads/{st.branch}", base):
            return f"refs/heads/{st.branch}"
        return base

    def _brief(self, st: TaskState, wt: Path, profile: AgentProfile) -> Path:
        name = self._context_name()
        text = render_context(ContextInput(
            key=self.job.key, attempt=st.attempt, branch=st.branch, main_branch=self.cfg.main_branch,
            context_file=name, task=self.task, plan=self.job.plan,
            dependencies=dependency_results(self.store, self.job.plan, self.task),
            continuation=continuation(self.paths, self.job.root, st) if st.attempt > 1 else None,
            project_instructions=workspace.tracked_text(wt, name)))
        workspace.place_context(wt, name, text)
        atomic_write(self.paths.context_copy(self.plan_name, self.task.id, st.attempt), text)
        return wt / name

    def _command(self, st: TaskState, wt: Path, brief: Path, profile: AgentProfile) -> list[str]:
        if self._is_script():
            script = self.paths.hive / "scripts" / f"{names.attempt_name(self.plan_name, self.task.id, st.attempt)}.sh"
            atomic_write(script, self.task.script)
            return ["bash", "-e", str(script)]
        return profile.argv(prompt(self.job.key, self.task.title, str(brief)), str(brief))

    def _agent_env(self, st: TaskState, wt: Path, worker: str) -> dict[str, str]:
        shim = _ensure_shim(self.paths)
        slot = int(worker.lstrip("w") or 1)
        env = {"HIVE_TASK": self.job.key, "HIVE_ATTEMPT": str(st.attempt), "HIVE_ROOT": str(self.job.root),
               "HIVE_WORKTREE": str(wt), "HIVE_PORT": str(41000 + 10 * slot), "HIVE_TMUX_SOCKET": tmux.socket(),
               "PATH": f"{shim}{os.pathsep}{os.environ.get('PATH', '')}"}
        env.update(dict(self._profile().env))
        return env

    def _start_merge_only(self, st: TaskState, worker: str) -> TaskState:
        """`hive retry` of a refused merge: the work is on the branch; only merge again."""
        wt = Path(st.worktree)
        if not wt.exists():
            wt = self.job.root / self.cfg.worktree_base / names.worktree_dir(worker, self.plan_name, self.task.id,
                                                                            st.attempt)
            workspace.ensure_ignored_dir(wt.parent)
            git.git(self.job.root, "worktree", "add", str(wt), st.branch)
        say(f"{self.job.key}: retrying the merge of branch {st.branch}")
        return self._update(st, ("planned",), state="in_progress", worker=worker, pid=os.getpid(),
                            worktree=str(wt), resume="", reason="retrying the merge")

    # -- waiting ------------------------------------------------------------
    def _watch(self, st: TaskState) -> Outcome:
        script = self._is_script()
        profile = None if script else self._profile()
        watch = Watch(session=st.session, pane_pid=st.pane_pid,
                      signal_path=self.paths.signal_file(self.plan_name, self.task.id, st.attempt),
                      exit_file=self.paths.exit_file(self.plan_name, self.task.id, st.attempt),
                      log_path=self.paths.log_file(self.plan_name, self.task.id), log_offset=st.log_offset,
                      started_at=st.started_at, timeout=self.task.timeout or self.cfg.task_timeout,
                      stuck_threshold=self.cfg.stuck_threshold,
                      grace=None if script else self.cfg.spawn_grace_period,
                      exit_zero_is_done=bool(profile and profile.exit_zero_is_done),
                      stall_patterns=profile.stall_patterns if profile else ())
        return wait(watch, on_stuck=lambda idle: self._stuck(st, idle))

    def _pending_signal(self, st: TaskState) -> Outcome:
        sig = signals.read(self.paths.signal_file(self.plan_name, self.task.id, st.attempt))
        say(f"{self.job.key}: found its `hive {sig.kind}` signal from attempt {st.attempt} (sent while no run watched)")
        return Outcome(sig.kind, sig.reason)

    def _stuck(self, st: TaskState, idle: float) -> None:
        self.store.update(self.plan_name, self.task.id, event=f"stuck: no output for {idle / 60:.0f} min")
        say(f"{self.job.key}: no output for {idle / 60:.0f} min — check it with `hive attach {self.job.key}`")

    # -- finishing ----------------------------------------------------------
    def _finish(self, st: TaskState, outcome: Outcome) -> TaskState:
        tmux.kill_session(st.session)
        wt = Path(st.worktree)
        if outcome.kind == "done":
            return self._merge(st, wt, outcome)
        if outcome.kind == "blocked":
            return self._end(st, "blocked", f"blocked: {outcome.reason or 'no reason given'}", outcome)
        if outcome.kind == "too_big":
            kept = workspace.remove_if_clean(self.job.root, wt) if wt.exists() else ""
            return self._end(st, "too_big", f"too big: {outcome.reason or 'no reason given'}", outcome, kept)
        self._retire_worktree(st)
        return self._end(st, "failed", outcome.reason, outcome)

    def _merge(self, st: TaskState, wt: Path, outcome: Outcome) -> TaskState:
        name = self._context_name()
        workspace.retire_context(wt, name)
        git.commit_all(wt, f"hive: changes {self.job.key} left uncommitted")
        if workspace.undo_context_changes(wt, st.base, name):
            git.commit_all(wt, f"hive: keep the project's {name} unchanged")
        if not self.cfg.auto_merge and not self.merge_approved:
            return self._end(st, "awaiting_human", f"review branch {st.branch} (worktree {_rel(wt, self.job.root)}), "
                             f"then `hive approve {self.job.key}` to merge it", outcome, resume="review")
        checks = ((("Verify", self.task.verify),) if self.task.verify else ()) + \
                 ((("test_command", self.cfg.test_command),) if self.cfg.require_tests else ())
        req = MergeRequest(root=self.job.root, lock=self.paths.locks / "merge.lock", main_branch=self.cfg.main_branch,
                           worktree=wt, branch=st.branch,
                           message=f"hive: merge {self.job.key} — {self.task.title}\n\nbranch {st.branch}",
                           checks=checks, check_timeout=self.task.timeout or self.cfg.task_timeout,
                           env={"HIVE_TASK": self.job.key, "HIVE_ROOT": str(self.job.root)})
        result = merge(req, lambda commit: self._update(st, ("in_progress",), merging=commit, event="merging"))
        if result.status == "merged":
            st = self._record_merged(self._read(), result.commit, result.files, outcome.reason or result.reason)
            say(f"{self.job.key}: done — merged into {self.cfg.main_branch} as {result.commit[:10]} "
                f"({len(result.files)} file(s))")
            return st
        if result.status == "verify_failed":
            return self._end(st, "failed", f"verify failed: {result.reason}", Outcome("failed", "", result.output_tail))
        # The agent's work is safe on its branch: `hive retry` redoes only the merge
        # (after the human resolved the conflict on the branch or cleaned the checkout).
        return self._end(st, "blocked", result.reason, Outcome("blocked", "", result.output_tail),
                         files=result.files, resume="merge")

    def _record_merged(self, st: TaskState, commit: str, files: tuple[str, ...], reason: str) -> TaskState:
        st = self.store.update(self.plan_name, self.task.id, state="done", merge_commit=commit, files=tuple(files),
                               reason=reason, merging="", task_hash=self.task.text_hash, resume="",
                               history=st.history + (self._history(st, "done", reason),), event="merged")
        self._cleanup_merged(st)
        return st

    def _cleanup_merged(self, st: TaskState) -> None:
        """Remove the worktree and every attempt's branch — each only once git shows it is in main."""
        tmux.kill_session(st.session)
        kept = [workspace.remove_if_merged(self.job.root, Path(st.worktree), self.main_ref)] if st.worktree else []
        for h in st.history:
            kept.append(workspace.delete_branch_if_merged(self.job.root, h.get("branch", ""), self.main_ref))
        for note in filter(None, kept):
            say(f"{self.job.key}: {note}")

    def _end(self, st: TaskState, state: str, reason: str, outcome: Outcome, kept: str = "",
             files: tuple[str, ...] = (), resume: str = "") -> TaskState:
        st = self.store.update(self.plan_name, self.task.id, state=state, reason=reason,
                               output_tail=outcome.output_tail, files=files, resume=resume, merging="",
                               history=st.history + (self._history(st, state, reason),))
        say(f"{self.job.key}: {state} — {_first_line(reason)}" + (f" ({kept})" if kept else ""))
        return st

    def _held(self, st: TaskState) -> TaskFailed:
        how = {"blocked": f"resolve it, then `hive retry {self.job.key}`",
               "too_big": f"split it in the plan, or `hive retry {self.job.key}`",
               "awaiting_human": f"answer with `hive approve {self.job.key}`",
               "failed": f"`hive retry {self.job.key}` after fixing the cause (logs: `hive logs {self.job.key}`)"}
        lines = [f"{self.job.key} is {st.state}: {st.reason}", how.get(st.state, "")]
        if st.state == "blocked" and st.worktree and Path(st.worktree).exists():
            lines.append(f"its work is kept in {st.worktree} (branch {st.branch})")
        if st.output_tail:
            lines.append("last output:\n" + st.output_tail)
        return TaskFailed("\n".join(x for x in lines if x))

    # -- helpers ------------------------------------------------------------
    def _read(self) -> TaskState:
        return self.store.read(self.plan_name, self.task.id)

    def _update(self, st: TaskState, expect: tuple[str, ...], event: str = "", **changes: object) -> TaskState:
        try:
            return self.store.update(self.plan_name, self.task.id, expect=expect, event=event, **changes)
        except StaleState as e:
            raise HiveError(f"{self.job.key} changed to {e.current.state} under us (is another run or a "
                            f"`hive` command changing it?)") from None

    def _history(self, st: TaskState, outcome: str, reason: str) -> dict:
        return {"attempt": st.attempt, "outcome": outcome, "reason": reason, "branch": st.branch, "base": st.base,
                "worker": st.worker, "log_offset": st.log_offset, "finished_at": round(time.time(), 3)}

    def _wait_for_claim(self, claim: HeldLock) -> None:
        said = False
        while not claim.try_acquire():
            if not said:
                say(f"{self.job.key}: another process (pid {claim.holder()}) is running it; waiting for it")
                said = True
            time.sleep(0.2)

    def _slot(self) -> "_Slot":
        return _Slot(self.paths, self.cfg.max_workers, self.job.key)

    def _profile(self) -> AgentProfile:
        name = self.task.agent or self.job.plan.agent or self.cfg.default_agent
        return self.cfg.agents[name]

    def _context_name(self) -> str:
        return "HIVE_TASK.md" if self._is_script() else self._profile().context_file

    def _is_script(self) -> bool:
        return self.task.type == "script"

    def _plan_file(self) -> str:
        return _rel(self.job.plan.path, self.job.root)


class _Slot:
    """A worker slot: one of `max_workers` lock files, held while an agent runs, so
    the cap holds across every doit process on the repo. Its number is the worker id."""

    def __init__(self, paths: Paths, size: int, key: str) -> None:
        self.locks = [HeldLock(paths.locks / "slots" / f"w{i}.lock") for i in range(1, size + 1)]
        self.key = key
        self.held: HeldLock | None = None

    def __enter__(self) -> str:
        said = False
        while True:
            for i, lock in enumerate(self.locks, 1):
                if lock.try_acquire():
                    self.held = lock
                    return f"w{i}"
            if not said:
                say(f"{self.key}: waiting for a free worker slot (max_workers={len(self.locks)})")
                said = True
            time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        if self.held:
            self.held.release()


_UNSET_FOR_AGENTS = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED",
                     "GEMINI_CLI", "GEMINI_CLI_NO_RELAUNCH", "TMUX", "TMUX_PANE", "GIT_DIR", "GIT_WORK_TREE",
                     "GIT_INDEX_FILE", "VIRTUAL_ENV_PROMPT")


def _ensure_shim(paths: Paths) -> Path:
    """`.hive/bin/hive` runs this very Hive, so agents find `hive` even when it lives in a venv."""
    import shlex
    shim = paths.bin / "hive"
    text = f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m hive \"$@\"\n"
    if not shim.exists() or shim.read_text() != text:
        atomic_write(shim, text)
        shim.chmod(0o755)
    return paths.bin


def _log_start(log: Path, key: str, attempt: int, worker: str) -> int:
    """Separate attempts in the task's log; returns where this attempt's output starts."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"\n===== hive: {key} attempt {attempt} ({worker}) {time.strftime('%Y-%m-%d %H:%M:%S')} =====\n")
        return f.tell()


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
