"""A node actor's lifeline (hive/executors/ray/lifeline.py), without Ray: this test process
stands for the actor. When it lets go of the pipe, as a dying process does, the agents of the
attempts it held end, in their tmux sessions on the real (private) server, and no one else's."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import wait_for

from hive.adapters import procfs, tmux
from hive.executors.base import AgentRef, Launch
from hive.executors.ray import lifeline
from hive.executors.tmux.executor import TmuxExecutor

# ignores SIGHUP (what ending a finished agent sends first), so only the stop's later stages end it
STUBBORN = ["sh", "-c", "trap '' HUP; echo started; while :; do sleep 0.2; done"]


def _attempt(attempts: Path, folder: str, actor: str, key: str) -> AgentRef:
    """An attempt held by `actor`, its agent running in tmux as a node starts one."""
    home = attempts / folder
    home.mkdir(parents=True)
    name = f"hive-w1-{key.replace(':', '-')}-a1"
    (home / lifeline.HELD).write_text(json.dumps({"actor": actor, "name": name, "key": key, "attempt": 1}))
    env = {"HIVE_ROOT": str(home / "root"), "HIVE_TASK": key, "HIVE_ATTEMPT": "1"}
    ref = AgentRef(str(home / "root"), key, 1, name)
    return (
        TmuxExecutor()
        .start(Launch(ref, STUBBORN, env, home, home / "output.log", home / "exit", home / "agent.env"))
        .ref
    )


def _running(ref: AgentRef) -> bool:
    return bool(procfs.members(procfs.AgentMark(ref.root, ref.task, ref.attempt, ref.token)))


def _lifelines(attempts: Path) -> dict[int, int]:
    """pid: parent pid of the lifelines watching `attempts`."""
    out = {}
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            parent = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError):
            continue
        if any(a.endswith(b"lifeline.py") for a in argv) and str(attempts).encode() in argv:
            out[pid] = parent
    return out


def test_the_agents_of_an_actor_that_ends_are_stopped_and_no_others(isolated: Path, tmp_path: Path) -> None:
    attempts = tmp_path / "attempts"
    mine = _attempt(attempts, "a", "actor-1", "p:1")
    other = _attempt(attempts, "b", "actor-2", "p:2")  # held by an actor made after actor-1 died
    try:
        wait_for(lambda: _running(mine) and _running(other), what="both agents")
        hold = lifeline.start(attempts, "actor-1", tmp_path / "lifeline.log")
        watching = _lifelines(attempts)
        assert len(watching) == 1 and os.getpid() not in watching.values(), "no child: Ray ends a worker's"
        wait_for(lambda: "started" in tmux.capture(mine.name), what="the agent's first words")
        assert _running(mine), "nothing ends while the actor lives"

        os.close(hold)  # what the actor's process ending does to its end of the pipe

        # its processes end first, then its session (a CI run under load saw the one without the other)
        wait_for(
            lambda: not _running(mine) and not tmux.has_session(mine.name),
            timeout=15,
            what="the held agent stopped and its session gone",
        )
        assert _running(other), "an agent another actor holds goes on"
        wait_for(lambda: not _lifelines(attempts), timeout=10, what="the lifeline to exit")
        said = (tmp_path / "lifeline.log").read_text()
        assert "hive lifeline: actor actor-1 ended; stopping the agents it held" in said
        assert f"{mine.name}: sending SIGTERM" in said  # it ignored the SIGHUP
        assert f"stopped {mine.name}" in said and other.name not in said
    finally:
        for ref in (mine, other):
            TmuxExecutor().agent(ref).stop(1.0, True, lambda line: None)


def test_which_attempts_an_actor_held(tmp_path: Path) -> None:
    attempts = tmp_path / "attempts"
    for folder, held in {"a": {"actor": "x", "name": "s-a", "key": "p:1", "attempt": 2}, "b": {"actor": "y"}}.items():
        (attempts / folder).mkdir(parents=True)
        (attempts / folder / lifeline.HELD).write_text(json.dumps(held))
    (attempts / "c").mkdir()
    (attempts / "c" / "name").write_text("s-c\n")  # an attempt of a Hive before held.json: its session only
    (attempts / "d").mkdir()  # one whose start stopped before it wrote anything

    assert lifeline.held_by(attempts, "x") == [
        {"actor": "x", "name": "s-a", "key": "p:1", "attempt": 2, "root": str(attempts / "a" / "root")}
    ]
    assert [h["name"] for h in lifeline.held_by(attempts, None) if "name" in h] == ["s-a", "s-c"]
    assert lifeline.held_by(tmp_path / "none", None) == []
