"""A tmux server stuck in its exit (hive.adapters.tmux), made with real tmux.

`kill-server` racing clients that create sessions can leave tmux 3.3a's server alive with
a session made after the kill: it then refuses every new client ("server exited
unexpectedly") for as long as that session lives. In the soak (seed 20016) every agent
after it failed to start and each task used up its attempts within a second.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path

from hive.adapters import procfs, tmux

RACERS = 6  # sessions created while the server is killed: a stuck server within ~8 tries here
TRIES = 200


def _tmux(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*tmux.base_argv(), *args], capture_output=True, text=True, check=False)


def _refused() -> bool:
    return "server exited unexpectedly" in _tmux("new-session", "-d", "-s", "probe", "sleep 30").stderr


def _stuck_server() -> int:
    """Race session-making clients against kill-server until the server is left refusing
    everyone for longer than an exit takes; its pid."""
    rng = random.Random(os.getpid())
    for n in range(TRIES):
        racers = [
            subprocess.Popen(
                [*tmux.base_argv(), "new-session", "-d", "-s", f"r{n}-{i}", "sleep 30"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for i in range(RACERS)
        ]
        time.sleep(rng.uniform(0, 0.04))
        _tmux("kill-server")
        for r in racers:
            r.wait()
        if _refused():
            time.sleep(1.0)  # an exit that is merely under way is over within ~0.1 s
            if _refused():
                (pid,) = procfs.listening_on(tmux.socket_path())
                return pid
        _tmux("kill-server")
    raise AssertionError(f"no stuck tmux server in {TRIES} tries")


def test_a_server_stuck_in_its_exit_is_told_again_and_the_next_session_starts(tmp_path: Path):
    stuck = _stuck_server()
    assert procfs.command_name(stuck).startswith("tmux")

    program = tmux.Program(["sleep", "30"], {"PATH": os.environ["PATH"]}, tmp_path / "env")
    pid = tmux.new_session("after", tmp_path, program, tmp_path / "log", tmp_path / "exit")

    assert not procfs.pid_alive(stuck)
    assert procfs.pid_alive(pid)
    assert tmux.sessions() == ["after"]  # the sessions made after the kill went with their server


def test_the_socket_is_found_where_tmux_puts_it():
    assert tmux.sessions() == []
    _tmux("new-session", "-d", "-s", "one", "sleep 30")
    (server,) = procfs.listening_on(tmux.socket_path())
    assert procfs.command_name(server) == "tmux: server"
    assert tmux.sessions() == ["one"]
    assert procfs.listening_on(tmux.socket_path().with_name("elsewhere")) == []
