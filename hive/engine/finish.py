"""Ending one attempt: stop what is left of its agent, act on the outcome, merge
finished work, clean up only what git proves is safe."""
from __future__ import annotations

from pathlib import Path

from hive.adapters.processes import stages
from hive.cli.stop import prefixed, stop_agent
from hive.engine import workspace
from hive.engine.attempt import retire_worktree, worktree_for_merge
from hive.engine.merge import MergeRequest, Recorders, merge
from hive.engine.supervise import Outcome
from hive.engine.task import TaskHandle, say
from hive.store.state import MERGE, MERGING, TaskState, history_entry

# The agent ended by itself (or said it is finished): hang up on it. Otherwise it is
# being stopped against its will and gets the chance to save its work first.
_FINISHED_KINDS = ("done", "blocked", "too_big", "crashed", "script_failed")


def finish(h: TaskHandle, st: TaskState, outcome: Outcome, merge_approved: bool) -> TaskState:
    finished = outcome.kind in _FINISHED_KINDS
    survivors = stop_agent(h.root, st, prefixed(say, h.key),
                           stages(h.cfg.stop_patience, finished), quiet_first=finished)
    if survivors:
        say(f"{h.key}: warning: processes {sorted(survivors)} of its agent survived SIGKILL")
    if outcome.kind == "done":
        return _merge(h, st, outcome, merge_approved)
    if outcome.kind == "blocked":
        return h.end(st, "blocked", f"blocked: {outcome.reason or 'no reason given'}", outcome.output_tail)
    if outcome.kind == "stopped":
        return h.end(st, "blocked", f"stopped by `hive stop`; `hive retry {h.key}` to run it again",
                     outcome.output_tail)
    if outcome.kind == "too_big":
        wt = Path(st.worktree)
        kept = workspace.remove_if_clean(h.root, wt) if st.worktree and wt.exists() else ""
        return h.end(st, "too_big", f"too big: {outcome.reason or 'no reason given'}", outcome.output_tail, kept)
    retire_worktree(h, st)
    return h.end(st, "failed", outcome.reason, outcome.output_tail)


def _merge(h: TaskHandle, st: TaskState, outcome: Outcome, merge_approved: bool) -> TaskState:
    name = h.context_name()
    wt = worktree_for_merge(h, st, st.worker or "w1")
    st = h.read()
    if st.resume == MERGING:
        # The agent's work is all on the branch; what is in the worktree besides it was
        # left by an interrupted merge (a checkout of main cut short leaves HEAD on the
        # branch but files and index of main: never commit that).
        workspace.reset_to_branch(wt, st.branch)
    else:
        workspace.restore_branch(wt, st.branch)
        workspace.retire_context(wt, name)
        workspace.salvage(wt, f"hive: changes {h.key} left uncommitted")
        if workspace.undo_context_changes(wt, st.base, name):
            workspace.salvage(wt, f"hive: keep the project's {name} unchanged")
        st = h.update(("in_progress",), resume=MERGING)
    if not h.cfg.auto_merge and not merge_approved:
        return h.end(st, "awaiting_human", f"review branch {st.branch} (worktree {h.rel(wt)}), then "
                     f"`hive approve {h.key}` to merge it", resume="review")
    checks = ((("Verify", h.task.verify),) if h.task.verify else ()) + \
             ((("test_command", h.cfg.test_command),) if h.cfg.require_tests else ())
    req = MergeRequest(root=h.root, lock=h.paths.locks / "merge.lock", main_branch=h.cfg.main_branch,
                       worktree=wt, branch=st.branch,
                       message=f"hive: merge {h.key} — {h.task.title}\n\nbranch {st.branch}",
                       checks=checks, check_timeout=h.task.timeout or h.cfg.task_timeout,
                       env={"HIVE_TASK": h.key, "HIVE_ROOT": str(h.root)})
    reason = outcome.reason
    result = merge(req, Recorders(intent=lambda commit: h.update(("in_progress",), merging=commit, event="merging"),
                                  merged=lambda r: record_merged(h, h.read(), r.commit, r.files, reason or r.reason),
                                  forget=lambda: h.update(("in_progress",), merging="")))
    if result.status == "merged":
        done = h.read()
        cleanup_merged(h, done)
        say(f"{h.key}: done — merged into {h.cfg.main_branch} as {result.commit[:10]} ({len(result.files)} file(s))")
        return done
    if result.status == "verify_failed":
        return h.end(st, "failed", f"verify failed: {result.reason}", result.output_tail)
    # The agent's work is safe on its branch: `hive retry` redoes only the merge
    # (after the human resolved the conflict on the branch or cleaned the checkout).
    return h.end(st, "blocked", result.reason, result.output_tail, files=result.files, resume=MERGE)


def record_merged(h: TaskHandle, st: TaskState, commit: str, files: tuple[str, ...], reason: str) -> TaskState:
    return h.update(None, state="done", merge_commit=commit, files=tuple(files), reason=reason, merging="",
                    task_hash=h.task.text_hash, resume="", feedback="", event="merged",
                    history=st.history + (history_entry(st, "done", reason),))


def cleanup_merged(h: TaskHandle, st: TaskState) -> None:
    """Remove the worktree and every attempt's branch, each only once git shows it is in main."""
    for note in workspace.cleanup_done(h.root, st, h.main_ref):
        say(f"{h.key}: {note}")
