"""Re-open a task the human has looked at (`hive retry`, the dashboard's Retry)."""

from __future__ import annotations

from pathlib import Path

from hive.actions.runs import next_run
from hive.errors import HiveError
from hive.lifecycle import RETRYABLE, Resume, State
from hive.store.files import FileLock
from hive.store.names import parse_key
from hive.store.paths import Paths
from hive.store.state import NEW_PR, StateStore


def _waits(root: Path, plan_name: str, task_id: str) -> str:
    """What a planned task waits for, when it waits for a stopped one (issue 43: "f:b is planned"
    did not say that f:a's failure holds it): that one is what to retry."""
    from hive.lifecycle import shown_state
    from hive.project import load_project
    from hive.reports import skipped

    try:
        plan = load_project(root, strict=False).plans.plan(plan_name)
    except HiveError:
        return ""
    states = StateStore(Paths(root)).read_all()
    shown = {t.id: shown_state(st, t.text_hash) for t in plan.tasks if (st := states.get(plan.key(t.id)))}
    skip = skipped.skips(plan, shown).get(task_id)
    if skip is None:
        return ""
    those = "that one is" if len(skip.waits_for) == 1 else "those are"
    return f" — it is {skip.reason}, and runs once {those} done"


def retry(root: Path, key: str, force: bool = False) -> str:
    plan, task_id = parse_key(key)
    paths = Paths(root)
    store = StateStore(paths)
    st = store.read(plan, task_id)
    holder = FileLock(paths.claim_lock(plan, task_id)).holder()
    if holder:
        raise HiveError(f"{key} is being run right now by pid {holder}; stop that run first")
    allowed = RETRYABLE + ((State.DONE,) if force else ())
    # a change Hive held for a human (engine/hold.py): run it again, its brief says what to leave alone
    held = st.state == State.AWAITING_HUMAN and st.resume == Resume.HELD
    if st.state not in allowed and not held:
        hint = " (use --force to re-open finished work)" if st.state == State.DONE else _waits(root, plan, task_id)
        raise HiveError(f"{key} is {st.state}; only {', '.join(allowed)} tasks can be retried{hint}")
    # A refused merge keeps the agent's work on its branch: only the merge is redone.
    resume = st.resume if st.only_merge and st.state in (State.BLOCKED, State.FAILED) else ""
    store.update(
        plan,
        task_id,
        expect=(st.state,),
        state=State.PLANNED,
        attempts_used=0,
        reason="",
        permanent=False,
        resume=resume,
        merging="",
        event="retry requested",
        # its CI gets its rounds again; a done task opened again is new work: a new PR
        **(NEW_PR if st.state == State.DONE else {"ci_rounds": 0}),
    )
    then = next_run(paths, "merges it again" if resume else "runs it again")
    return f"{key}: re-opened ({st.state} → planned); {then}"
