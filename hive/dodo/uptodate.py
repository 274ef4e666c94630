"""doit's `uptodate` checks and `doit list` lines, read from Hive's state: done
means lifecycle.verdict (recorded done for the task's current text, its merge
commit on main), so losing `.doit.db` re-runs nothing."""

from __future__ import annotations

from hive.lifecycle import State, shown_state, verdict
from hive.output import safe
from hive.plan.done import StateView
from hive.plan.model import Plan, Task


class DoneCheck:
    """doit `uptodate` callable; its repr is what `doit info` shows for a pending task."""

    def __init__(self, view: StateView, key: str, text_hash: str) -> None:
        self.view, self.key, self.text_hash = view, key, text_hash

    def recorded_done(self) -> bool:
        """Done as far as the state files say (no git call): for summaries."""
        return verdict(self.view.get(self.key), self.text_hash, None).done

    def __call__(self) -> bool:
        try:
            return self.view.verdict(self.key, self.text_hash).done
        except Exception:  # noqa: BLE001 — an exception here would abort the whole doit run (exit 3)
            return False

    def __repr__(self) -> str:
        try:
            why = self.view.verdict(self.key, self.text_hash)
        except Exception as e:  # noqa: BLE001 — `doit info` must still show the task
            return f"hive: {self.key}: its state cannot be read ({e})"
        return f"hive: {self.key} is done" if why.done else safe(f"hive: {self.key} is not done: {why.reason}")


class AllDone:
    """A plan's group task is up to date when every one of its tasks is."""

    def __init__(self, checks: tuple[DoneCheck, ...]) -> None:
        self.checks = checks

    def __call__(self) -> bool:
        return all(c() for c in self.checks)

    def __repr__(self) -> str:
        pending = [c.key for c in self.checks if not c()]
        return f"hive: not done yet: {', '.join(pending[:10])}" + (" …" if len(pending) > 10 else "")


def describe(plan: Plan, task: Task, view: StateView, skipped: str = "") -> str:
    """The doc line `doit list` shows: title and current state (`skipped`: why it does not run)."""
    if not plan.approved:
        return f"{task.title}  [draft plan: hive approve {plan.path.parent.name}/{plan.path.name}]"
    st = view.get(plan.key(task.id))
    if skipped:
        state = skipped
    elif st is None or st.state == State.PLANNED:
        state = State.PLANNED  # the state's one name, in `hive status` and the dashboard too (issue 43)
    elif shown_state(st, task.text_hash) == State.PLANNED:
        state = f"planned (changed since {st.state})"
    else:
        state = st.state + (f": {_short(st.reason)}" if st.reason and st.state != State.DONE else "")
    return safe(f"{task.title}  [{state}]")  # `doit list` prints it: a reason may be an agent's


def _short(text: str, n: int = 60) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= n else line[: n - 1] + "…"
