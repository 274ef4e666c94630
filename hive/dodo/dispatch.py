"""doit's queue of tasks ready to start, kept in Hive's order.

doit's dispatcher holds the tasks it may start next in a first-in, first-out queue. A task
whose dependencies were still running when doit reached it waits aside, and when they finish
it joins that queue *behind* every task queued meanwhile. So a plan's critical path waited
behind tasks of one step: in the merge-queue benchmark's replay, the second task of the
longest chain started 7 s after its dependency merged, behind seven independent tasks, and
the run's last seconds had one task running on an idle machine.

Hive defines its tasks longest remaining chain first (plan.graph.priority_order) and keeps
each one's place in that order here (`RANKS`, not in the task's `meta`, which `doit info`
would print as if it meant something to the user). This keeps the queue in that order:
a task that becomes ready takes its place by rank, not the queue's end. Tasks without a rank
(a plan's group task, doit's own) go ahead of the ranked ones.
"""

from __future__ import annotations

from typing import Any

RANKS: dict[str, int] = {}  # task name -> its place in Hive's order, set as the loader makes the tasks


def rank(node: Any) -> int:
    return RANKS.get(node.task.name, -1)


def keep_hives_order() -> None:
    from doit import control

    dispatcher: Any = control.TaskDispatcher
    update = dispatcher._update_waiting
    if getattr(update, "hive_wrapped", False):
        return

    def _update_waiting(self: Any, processed: Any) -> None:
        before = len(self.ready)
        update(self, processed)
        if len(self.ready) > before:  # a waiting task became ready: it went to the end
            ordered = sorted(self.ready, key=rank)  # stable: equal ranks keep their order
            self.ready.clear()
            self.ready.extend(ordered)

    _update_waiting.hive_wrapped = True  # type: ignore[attr-defined]
    dispatcher._update_waiting = _update_waiting
