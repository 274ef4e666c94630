"""A node actor's lifeline: a small process that outlives the actor to end the agents it held.

An agent runs in tmux, not in the actor, so nothing of Ray ends it when the actor's process
ends: killed, out of memory, or gone with its raylet (the node dead to Ray while the machine
lives on). Its controller then takes the attempt as lost and runs it again elsewhere, and the
agent left here would go on working, twice, for nobody. The lifeline holds the read end of a
pipe whose write end only the actor's process holds (non-inheritable, so no agent or tmux
server keeps it): the pipe closes the instant that process ends, however it ends, and the
lifeline stops those agents as `hive stop` would, then exits.

`python -I path/to/lifeline.py FD ATTEMPTS OWNER`: FD the pipe's read end, ATTEMPTS
the node's folder of attempts, OWNER the actor's id (an attempt's `held.json` names the actor
holding it: one made after this one on the node holds its own).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HELD = "held.json"  # in an attempt's folder: {"actor", "name", "key", "attempt"}
PATIENCE = 2.0  # between the stop's stages (SIGHUP, SIGTERM, SIGKILL): nothing of its work is wanted
SECOND_LOOK = 2.0  # a session the actor asked for as it died may come a moment later


def start(attempts: Path, owner: str, log: Path) -> int:
    """Start the lifeline of the calling process (the actor `owner`); returns the write end,
    to be held open, never written, for as long as the process lives."""
    read, write = os.pipe()  # both non-inheritable (PEP 446)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        # run as a file, not `-m`: importing the package would import Ray, for the lifeline's whole life
        launcher = subprocess.Popen(
            [sys.executable, "-I", __file__, str(read), str(attempts), owner],
            pass_fds=(read,),
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    os.close(read)
    launcher.wait()  # it forks the lifeline and exits: a Ray worker that ends kills its own children
    return write


def held_by(attempts: Path, owner: str | None) -> list[dict[str, Any]]:
    """The attempts in `attempts` that actor `owner` held (None: whichever actor held them)."""
    out = []
    for folder in sorted(attempts.glob("*")):
        try:
            held = json.loads((folder / HELD).read_text())
        except (OSError, ValueError):
            try:  # an attempt of an older Hive, or one whose start stopped before this file
                held = {"name": (folder / "name").read_text().strip()}
            except OSError:
                continue
        if owner is None or held.get("actor") == owner:
            out.append({**held, "root": str(folder / "root")})
    return out


def end_agents(attempts: Path, owner: str | None, patience: float = PATIENCE) -> list[str]:
    """Stop the agents of the attempts `owner` held as the local executor ends a finished one
    (SIGHUP, then SIGTERM, then SIGKILL to every process carrying its attempt's mark: its work
    is not wanted, it runs elsewhere), and close their sessions; a line for each one stopped."""
    from hive.adapters import procfs
    from hive.executors.base import AgentRef
    from hive.executors.tmux.executor import TmuxExecutor

    tmux, said = TmuxExecutor(), []

    def end(held: dict[str, Any]) -> str:
        name, token = held.get("name", ""), tmux.locate(held.get("name", "")) or 0
        if not held.get("key"):  # only its session is known
            tmux.agent(AgentRef.named(Path(held.get("root", "/")), name)).close()
            return f"closed {name}" if token else ""
        agent = tmux.agent(AgentRef(held["root"], held["key"], int(held.get("attempt", 0)), name, token))
        ref = agent.ref
        if not token and not procfs.members(procfs.AgentMark(ref.root, ref.task, ref.attempt, 0)):
            agent.close()  # a pane kept after its agent ended
            return ""
        left = agent.stop(patience, finished=True, report=lambda line: said.append(f"{name}: {line}"))
        return f"stopped {name}" + (f": {left}" if left else "")

    found = held_by(attempts, owner)
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(found)))) as pool:
        said += [line for line in pool.map(end, found) if line]
    return said


def main(args: list[str]) -> int:
    fd, attempts, owner = int(args[0]), Path(args[1]), args[2]
    if os.fork():
        return 0  # the launcher: the lifeline goes on as its child, which is no child of the actor
    while os.read(fd, 4096):  # nothing is ever written: this returns only at the end (EOF)
        pass
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"{stamp} hive lifeline: actor {owner} ended; stopping the agents it held", flush=True)
    for line in end_agents(attempts, owner):
        print(f"  {line}", flush=True)
    time.sleep(SECOND_LOOK)
    for line in end_agents(attempts, owner):
        print(f"  {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.path[0] = str(Path(__file__).resolve().parents[3])  # `hive`'s, not this folder (run as a file)
    sys.exit(main(sys.argv[1:]))
