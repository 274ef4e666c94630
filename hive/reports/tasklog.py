"""A task's agent output as `hive logs` and the dashboard show it: read from the log Hive keeps
under `.hive/logs/`, or, for the running attempt of a task whose agent runs on another host,
through the executor from that host (the log here lags, or stands still while no run watches it).
Offsets are the log's logical ones (hive.logcap): a log whose middle was cut keeps them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hive import logcap
from hive.lifecycle import State
from hive.logcap import Chunk
from hive.output import plain, shown_line
from hive.store.state import StateStore

Reader = Callable[[int], Chunk]  # the log's next unbroken run of bytes from an offset on


def reader(root: Path, store: StateStore, plan: str, task_id: str) -> Reader:
    """The task's log, from the host that holds its newest part."""
    log = store.paths.log_file(plan, task_id)
    return remote_reader(root, store, plan, task_id, log) or file_reader(log)


def file_reader(log: Path) -> Reader:
    """The log here (none yet: nothing to show)."""
    return lambda position: logcap.chunk(log, position)


def read_all(read: Reader, position: int = 0) -> tuple[bytes, int]:
    """Everything `read` has from `position` on (a cut log's head, marker and tail), and the
    offset to go on from."""
    parts: list[bytes] = []
    while True:
        got = read(position)
        parts.append(got.shown)
        if not got.data and got.end <= position:
            return b"".join(parts), position
        position = got.end


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
    first = agent.output()
    if first is None:
        return None
    answers = [first]  # the first read there uses the answer that showed the host holds it
    here = st.log_offset  # where the running attempt starts: the earlier ones' output is in the log here

    def read(position: int) -> Chunk:
        """`position` counts the earlier attempts' bytes here, then the running one's there
        (both logical offsets: hive.logcap): following asks its host only for what is new."""
        if position < here:
            got = logcap.chunk(log, position, here)
            if got.data:
                return got
            if got.marker:  # the rest of the earlier attempts' output was dropped
                return Chunk(here, b"", got.marker)
            position = here
        since = position - here
        now = answers.pop() if answers and since == 0 else agent.output(since)
        if now is None:  # it ended there, and its output is in the log here
            return logcap.chunk(log, position)
        return Chunk(now.start + here, now.data, now.marker)

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
    lines = [line for line in shown_lines(logcap.tail(log, window)) if line.strip()]
    return lines[-1].strip() if lines else ""
