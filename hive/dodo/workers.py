"""doit's worker processes (`doit -n N`), made safe to stop at any instant.

doit forks its workers one by one before its result loop, whose error handler is the
one that terminates them. A Ctrl-C or SIGTERM that lands while the workers are being
forked escaped that handler: the workers forked after the signal never heard of it and
the stopping doit waited for them (seen in the soak: 10 s, then an orphaned worker).
"""

from __future__ import annotations

import threading
from typing import Any

from hive import crashsafe


def stop_safely() -> None:
    from doit import runner

    mrunner: Any = runner.MRunner
    if getattr(mrunner._run_start_processes, "hive_wrapped", False):
        return
    start_workers, job_loop = mrunner._run_start_processes, mrunner.execute_task_subprocess

    def start(self: Any, job_q: Any, result_q: Any) -> list[Any]:
        started: list[Any] = []
        try:
            with crashsafe.uninterruptible():  # every worker is forked before a stop takes effect
                started.extend(start_workers(self, job_q, result_q))
        except KeyboardInterrupt:
            for worker in started:  # then each hears of it, also those forked after the signal
                worker.terminate()
            raise
        return started

    def loop(self: Any, job_q: Any, result_q: Any, reporter_class: Any) -> None:
        forked = crashsafe.in_forked_worker()
        if forked and crashsafe.worker_ready():
            result_q.put({"exit": KeyboardInterrupt, "exception": ""})  # what doit's loop sends
            return
        thread = threading.current_thread()
        if thread is not threading.main_thread():  # `-P thread`: a stopped doit waits for its goodbye
            crashsafe.worker_threads.add(thread)
        try:
            job_loop(self, job_q, result_q, reporter_class)
        except KeyboardInterrupt:
            # doit's loop catches a stop while it runs; one that escaped it came as it returned,
            # with nothing left to do in this worker but leave (quietly, as below)
            if not forked:
                raise
        finally:
            crashsafe.worker_threads.discard(thread)
            if forked:
                crashsafe.worker_finished()

    start.hive_wrapped = True  # type: ignore[attr-defined]
    mrunner._run_start_processes = start
    mrunner.execute_task_subprocess = loop
