"""A tmux server stuck in its exit (hive.adapters.tmux).

`kill-server` racing clients that create sessions can leave tmux 3.3a's server alive with
a session made after the kill: it then takes every new client's connection and closes it
unanswered, and the client says "server exited unexpectedly", for as long as that session
lives. In the soak (seed 20016) every agent after it failed to start and each task used up
its attempts within a second. The race needs many tries on a loaded machine, so here the
stuck server is a process that does what it does on its socket; the real tmux client meets it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from hive.adapters import procfs, tmux

# Takes each connection and closes it, as a tmux server does once told to exit; named as tmux names it.
STUCK_SERVER = """
import socket, sys
with open("/proc/self/comm", "w") as f:
    f.write("tmux: server")
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(64)
open(sys.argv[2], "w").close()
while True:
    s.accept()[0].close()
"""


def _tmux(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*tmux.base_argv(), *args], capture_output=True, text=True, check=False)


def stuck_server(tmp_path: Path) -> subprocess.Popen[bytes]:
    path = tmux.socket_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    ready = tmp_path / "listening"
    server = subprocess.Popen([sys.executable, "-c", STUCK_SERVER, str(path), str(ready)])
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "server exited unexpectedly" in _tmux("list-sessions").stderr, "what tmux's client says to it"
    return server


def test_a_server_stuck_in_its_exit_is_told_again_and_the_next_session_starts(tmp_path: Path, monkeypatch, capfd):
    monkeypatch.setattr(tmux, "REFUSAL_PATIENCE", 0.5)
    server = stuck_server(tmp_path)
    assert procfs.listening_on(tmux.socket_path()) == [server.pid]

    program = tmux.Program(["sleep", "30"], {"PATH": os.environ["PATH"]}, tmp_path / "env")
    pid = tmux.new_session("after", tmp_path, program, tmp_path / "log", tmp_path / "exit")

    assert server.wait(timeout=10) == -15  # told to exit with SIGTERM, what kill-server sends
    said = capfd.readouterr().out
    assert f"hive: the tmux server (pid {server.pid}) on {tmux.socket_path()} refuses every client" in said
    assert procfs.pid_alive(pid)
    assert tmux.sessions() == ["after"]
    (real,) = procfs.listening_on(tmux.socket_path())
    assert procfs.command_name(real) == "tmux: server" and real != server.pid


def test_a_refusal_that_lasts_is_the_commands_failure_when_no_server_can_be_told(tmp_path: Path, monkeypatch):
    """A process that is not tmux is never signalled: the command fails with tmux's words."""
    monkeypatch.setattr(tmux, "REFUSAL_PATIENCE", 0.3)
    monkeypatch.setattr(procfs, "command_name", lambda pid: "python3")
    server = stuck_server(tmp_path)
    try:
        assert tmux.sessions() == []
        assert not tmux.has_session("any")
        assert server.poll() is None
    finally:
        server.kill()
        server.wait()


def test_the_socket_is_found_where_tmux_puts_it():
    assert tmux.sessions() == []
    _tmux("new-session", "-d", "-s", "one", "sleep 30")
    (server,) = procfs.listening_on(tmux.socket_path())
    assert procfs.command_name(server) == "tmux: server"
    assert tmux.sessions() == ["one"]
    assert procfs.listening_on(tmux.socket_path().with_name("elsewhere")) == []


def test_a_child_the_server_just_forked_is_not_taken_for_a_server(tmp_path):
    """A tmux server forks each pane's process, which holds the listening socket until it closes it
    or execs: two "servers" were seen on one socket in CI."""
    path = tmp_path / "sock"
    code = (
        "import os, socket, sys, time\n"
        f"s = socket.socket(socket.AF_UNIX); s.bind({str(path)!r}); s.listen()\n"
        "child = os.fork()\n"
        "if child == 0:\n    time.sleep(30); os._exit(0)\n"
        "print(os.getpid(), child, flush=True); time.sleep(30)\n"
    )
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        parent, child = map(int, server.stdout.readline().split())
        assert procfs.listening_on(path) == [parent]
    finally:
        os.kill(child, signal.SIGKILL)
        server.kill()
        server.wait()
