"""Human answers: approving a plan file, answering checkpoints and gates, reviews (`hive approve`
and the dashboard's buttons)."""

from __future__ import annotations

import re
from pathlib import Path

from hive.actions.runs import next_run
from hive.adapters import proc
from hive.errors import CommandError, HiveError
from hive.lifecycle import Resume, State
from hive.output import tail
from hive.plan import discovered
from hive.plan.graph import load_plan
from hive.plan.model import Plan, Task
from hive.reports.checkpoint import checkpoint_kind, how_to_answer
from hive.settings.config import Config
from hive.store.files import atomic_write
from hive.store.names import parse_key
from hive.store.paths import Paths
from hive.store.state import StateStore, TaskState

_STATUS_LINE = re.compile(r"^(status\s*:\s*)(\S.*?)?\s*$", re.MULTILINE)


def approve_plan(path: Path, config: Config) -> list[str]:
    """Validate the plan (every error at once) and set `status: approved` in its front
    matter, leaving every other byte of the file as it was. Returns lines for the user:
    its warnings (valid, but maybe not what was meant), then what was done."""
    if not path.is_file():
        raise HiveError(f"{path}: no such plan file")
    plan, _, problems = load_plan(path, config)
    if problems:
        raise HiveError(*problems, f"{path}: not approved — fix the problems above and run `hive approve` again")
    text = path.read_bytes().decode("utf-8")  # bytes: keep every line ending as it is
    newline = "\r\n" if "\r\n" in text else "\n"
    if text.startswith("---"):
        end = text.find(f"{newline}---", 3)
        head, rest = text[:end], text[end:]
        if _STATUS_LINE.search(head):
            head = _STATUS_LINE.sub(lambda m: f"{m.group(1)}approved", head, count=1)
        else:
            head = head + f"{newline}status: approved"
        new = head + rest
    else:
        new = f"---{newline}status: approved{newline}---{newline}" + text
    if new != text:
        atomic_write(path, new)
    return [
        *(f"warning: {w}" for w in plan.warnings),
        f"{plan.name}: approved ({len(plan.tasks)} task{'' if len(plan.tasks) == 1 else 's'}) — run `doit` to start",
    ]


def approve_task(
    root: Path,
    key: str,
    choice: str | None = None,
    done: bool = False,
    reject: str | None = None,
    reject_task: str | None = None,
) -> str:
    """Answer a checkpoint or gate (or approve a reviewed branch when auto_merge is off)."""
    plan_name, task_id = parse_key(key)
    from hive.project import load_project

    project = load_project(root)
    plan = project.plans.plan(plan_name)
    item = discovered.find(Paths(root), plan_name, task_id)
    if item is not None:
        if choice or done or reject_task:
            raise HiveError(
                f"{key} is discovered work: approve it with `hive approve {key}` or discard it with "
                f'`hive approve {key} --reject "why"`'
            )
        if reject is not None:
            return discovered.reject(Paths(root), item, reject)
        added = discovered.approve(Paths(root), project.config, plan, item)
        return f"{added} — {next_run(Paths(root), 'runs it')}" if plan.approved else f"{added} (the plan is a draft)"
    try:
        task = plan.task(task_id)
    except KeyError:
        raise HiveError(f"plan {plan_name} has no task {task_id!r}") from None
    store = StateStore(Paths(root))
    st = store.read(plan_name, task_id)
    if st.state != State.AWAITING_HUMAN:
        unreached = task.is_checkpoint and st.state == State.PLANNED
        hint = " (it has not been reached yet: run `doit` first)" if unreached else ""
        raise HiveError(f"{key} is {st.state}, not awaiting an answer{hint}")
    if st.resume in (Resume.REVIEW, Resume.HELD):
        return _answer_review(store, st, key, reject)
    if st.resume == Resume.ANSWER:  # approving would record it done without the work its agent has left
        raise HiveError(
            f'{key}\'s agent asked a question: answer it with `hive answer {key} "..."` (`hive status` shows it)'
        )
    if reject is not None:
        return _reject(store, plan, task, key, reject, reject_task)
    answer = _answer(key, task, choice, done)
    if done and task.verify:
        _verify_done(root, store, st, key, task.verify, project.config.task_timeout)
    store.update(
        plan_name,
        task_id,
        expect=(State.AWAITING_HUMAN,),
        state=State.DONE,
        answer=answer,
        reason=f"answered: {answer}",
        merge_commit=_main_head(root, project.config.main_branch),
        event=f"answered: {answer}",
    )
    return f"{key}: {answer} — {next_run(Paths(root), 'goes on from it')}"


def _verify_done(root: Path, store: StateStore, st: TaskState, key: str, verify: str, timeout: float) -> None:
    """A manual step with a `**Verify:**` is done when its check says so ("I'll verify after",
    seed 001): run in the repository like a task's Verify; if it fails, the checkpoint stays
    awaiting the human, with what the check printed."""
    try:
        check = proc.run_users_command(verify, root, {"HIVE_TASK": key, "HIVE_ROOT": str(root)}, timeout)
        code, output = check.code, check.output
    except CommandError as e:  # it timed out
        code, output = e.code, e.output
    if code == 0:
        return
    said = tail(output, 30)
    reason = f"--done, but its Verify failed (exit {code}): {verify}"
    store.update(st.plan, st.id, expect=(State.AWAITING_HUMAN,), reason=reason, output_tail=said, event=reason)
    raise HiveError(
        f"{key}: its Verify failed (exit {code}): {verify}" + (f"\n{said}" if said else ""),
        f"{key} stays awaiting you: finish the step, then `hive approve {key} --done` again",
    )


def _answer(key: str, task: Task, choice: str | None, done: bool) -> str:
    kind = checkpoint_kind(task)
    if kind == "decision":
        options = {o.lower(): o for o in task.options}
        if choice is None or choice.lower() not in options:
            given = f"{choice!r} is not one of its options" if choice else "it needs --choice"
            raise HiveError(
                f"{key} is a decision: {given}; answer with one of: " + ", ".join(f"--choice {o}" for o in task.options)
            )
        return f"choice: {options[choice.lower()]}"
    if choice is not None:
        raise HiveError(f"{key} is a {kind} checkpoint, not a decision: answer with `{how_to_answer(key, task)}`")
    if kind == "human-action":
        if not done:
            raise HiveError(f"{key} is a manual step: do it, then answer with `hive approve {key} --done`")
        return "done"
    if done:
        raise HiveError(f"{key} is a {kind} checkpoint: answer with `hive approve {key}`")
    return "approved"


def _reject(store: StateStore, plan: Plan, task: Task, key: str, text: str, target: str | None) -> str:
    """Re-open the task before the checkpoint with the human's feedback for its next agent."""
    before = [d for d in task.depends_on if not d.startswith("_gate-")]
    if target is None:
        if len(before) != 1:
            raise HiveError(
                f"{key} has no task before it to re-open"
                if not before
                else f"{key} depends on {', '.join(before)}: say which to re-open with --task ID"
            )
        target = before[0]
    elif target not in before:
        raise HiveError(f"--task {target}: {key} does not depend on it; choose one of: {', '.join(before)}")
    prior = store.read(plan.name, target)
    if prior.state == State.IN_PROGRESS:
        raise HiveError(
            f"{plan.key(target)} is running right now; stop it (`hive stop {plan.key(target)}`) "
            f"or wait for it before rejecting"
        )
    store.update(
        plan.name,
        target,
        state=State.PLANNED,
        attempts_used=0,
        reason="",
        feedback=text,
        answer="",
        event=f"rejected at {key}: {text}",
    )
    store.update(
        plan.name,
        task.id,
        expect=(State.AWAITING_HUMAN,),
        state=State.PLANNED,
        reason="",
        answer="",
        event=f"rejected: {text}",
    )
    return (
        f"{plan.key(target)}: re-opened ({prior.state} → planned) with your feedback; `doit` runs it again, "
        f"then stops at {key} again"
    )


def _answer_review(store: StateStore, st: TaskState, key: str, reject: str | None) -> str:
    """A branch that waits for a human's look: a review (`auto_merge = false`), or a change Hive
    held (engine/hold.py; its next attempt is told why, as its history says, and the human's words).
    `--reject` sends it back as `hive changes` does: one way back to its author, a human's review."""
    if reject is not None:
        from hive.actions.review import send_back

        return send_back(store.paths.root, key, reject, via="hive approve --reject")
    store.update(
        st.plan,
        st.id,
        expect=(State.AWAITING_HUMAN,),
        state=State.PLANNED,
        resume=Resume.MERGE,
        reason="branch approved for merging",
        event="review approved",
    )
    return f"{key}: approved — {next_run(store.paths, f'merges branch {st.branch}')}"


def _main_head(root: Path, main_branch: str) -> str:
    from hive.adapters import git

    return git.rev_parse(root, f"refs/heads/{main_branch}")
