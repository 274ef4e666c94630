"""Re-open a task the human has looked at (`hive retry`, the dashboard's Retry)."""

from __future__ import annotations

from pathlib import Path

from hive.actions.runs import next_run
from hive.errors import HiveError
from hive.lifecycle import RETRYABLE, Resume, State
from hive.store.files import HeldLock
from hive.store.names import parse_key
from hive.store.paths import Paths
from hive.store.state import StateStore


def retry(root: Path, key: str, force: bool = False) -> str:
    plan, task_id = parse_key(key)
    paths = Paths(root)
    store = StateStore(paths)
    st = store.read(plan, task_id)
    holder = HeldLock(paths.claim_lock(plan, task_id)).holder()
    if holder:
        raise HiveError(f"{key} is being run right now by pid {holder}; stop that run first")
    allowed = RETRYABLE + ((State.DONE,) if force else ())
    # a change Hive held for a human (engine/hold.py): run it again, its brief says what to leave alone
    held = st.state == State.AWAITING_HUMAN and st.resume == Resume.HELD
    if st.state not in allowed and not held:
        hint = " (use --force to re-open finished work)" if st.state == State.DONE else ""
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
    )
    then = next_run(paths, "merges it again" if resume else "runs it again")
    return f"{key}: re-opened ({st.state} → planned); {then}"
