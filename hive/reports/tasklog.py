"""A task's agent output as `hive logs` and the dashboard show it: read from the log Hive keeps
under `.hive/logs/`, or, for the running attempt of a task whose agent runs on another host,
through the executor from that host (the log here lags, or stands still while no run watches it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hive.lifecycle import State
from hive.output import plain, shown_line
from hive.store.state import StateStore

Reader = Callable[[int], bytes]  # the log's bytes from an offset on


def reader(root: Path, store: StateStore, plan: str, task_id: str) -> Reader:
    """The task's log, from the host that holds its newest part."""
    log = store.paths.log_file(plan, task_id)
    return remote_reader(root, store, plan, task_id, log) or file_reader(log)


def file_reader(log: Path) -> Reader:
    def read(position: int) -> bytes:
        try:
            with open(log, "rb") as f:
                f.seek(position)
                return f.read()
        except FileNotFoundError:  # not started yet: nothing to show
            return b""

    return read


def remote_reader(root: Path, store: StateStore, plan: str, task_id: str, log: Path) -> Reader | None:
    """A task running on another host: its earlier attempts from the log here, the running
    one through the executor, from its host."""
    st = store.read(plan, task_id)
    if st.state != State.IN_PROGRESS or not st.node:
        return None
    from hive import executors
    from hive.project import load_repo_config

    config = load_repo_config(root)
    executor = executors.executor(config.executor, config, root)
    if not executor.capabilities.remote_checkout:  # the log here is the whole output
        return None
    agent = executor.agent(executors.AgentRef.of(root, st))
    local = file_reader(log)
    earlier = local(0)[: st.log_offset]
    first = agent.output()
    if first is None:
        return None
    answers = [first]  # the first read uses the answer that showed the host holds it

    def read(position: int) -> bytes:
        """`position` counts the earlier attempts' bytes here, then the running one's there:
        following asks its host only for what is new."""
        if answers:
            return (earlier + answers.pop())[position:]
        if position < len(earlier):
            return local(position)[: len(earlier) - position]
        now = agent.output(position - len(earlier))
        return local(position) if now is None else now  # None: it ended there, and its output is in the log here

    return read


def shown_lines(data: bytes) -> list[str]:
    """The lines as the terminal last showed them (no escapes, no overwritten spinner frames, no
    control characters), runs of blank lines kept to one."""
    kept: list[str] = []
    for line in data.decode(errors="replace").split("\n"):
        text = plain(shown_line(line))
        if text.strip() or (kept and kept[-1].strip()):
            kept.append(text)
    return kept


def last_line(log: Path, window: int = 4096) -> str:
    """The last line with something on it, from the end of the log (cheap on a long log)."""
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(size - window, 0))
            data = f.read()
    except FileNotFoundError:
        return ""
    lines = [line for line in shown_lines(data) if line.strip()]
    return lines[-1].strip() if lines else ""
