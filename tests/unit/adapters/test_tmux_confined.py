"""A sandboxed agent's tmux session (hive.adapters.tmux, `Program.confined`): bubblewrap takes the
environment itself (`bwrap --args` from the file, which is gone once the agent starts), no Python
starts on the agent's way, and the log's writer (hive.logcap) serves the sandbox's proxy beside
the pane from its first request until the pane's process has ended. Real tmux (the test's private
server), real bubblewrap, a real HTTP server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hive import logcap, scripts
from hive.adapters import procfs, tmux
from hive.sandbox import network, policy, proxy

MARKS = {"HIVE_ROOT": "/the/repo", "HIVE_TASK": "plan:t1", "HIVE_ATTEMPT": "3"}

# what it was given, and which of its descriptors are open, in files of its folder
SHOW = """
import os, time
with open("env.out", "wb") as f:
    f.write(b"".join(k.encode() + b"=" + v.encode() + b"\\0" for k, v in os.environ.items()))
with open("fds.out", "w") as f:
    for fd in os.listdir("/proc/self/fd"):
        try:
            f.write(os.readlink(f"/proc/self/fd/{fd}") + "\\n")
        except OSError:  # the listing's own, closed by now
            pass
print("shown", flush=True)
while not os.path.exists("go"):
    time.sleep(0.02)
"""

ASKS = """
import os, sys, time, urllib.request, urllib.error
print("asked", flush=True)
while not os.path.exists("go"):
    time.sleep(0.02)
for url in sys.argv[1:]:
    try:
        print("got", urllib.request.urlopen(url, timeout=10).read().decode(), flush=True)
    except urllib.error.HTTPError as e:
        print("http", e.code, flush=True)
"""


def start(tmp_path: Path, mode: str, agent: list[str], env: dict[str, str]) -> tuple[int, Path, Path]:
    """`agent` in its sandbox (`network = mode`, 127.0.0.1 allowed) as an agent's session starts it;
    returns the pane's pid, the log and the exit file."""
    rules = policy.Rules(required=True, writable=(), hide=(), network=mode, allow=("127.0.0.1",), keep=())
    box = policy.Box(tmp_path, tuple(agent), (tmp_path,), str(tmp_path), tmp_path / "refused.jsonl")
    c = policy.confine(rules, box)
    program = tmux.Program([*c.prefix, *agent], {**env, **c.env}, tmp_path / "agent.env", c.beside, confined=True)
    log, exit_file = tmp_path / "logs" / "task.log", tmp_path / "run" / "exit"
    pid = tmux.new_session("confined", tmp_path, program, log, exit_file)
    return pid, log, exit_file


def wait_for(what: Callable[[], bool], why: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, why
        time.sleep(0.02)


def logged(log: Path, text: str) -> Callable[[], bool]:
    return lambda: log.exists() and text.encode() in log.read_bytes()


def test_bubblewrap_gives_the_agent_exactly_its_environment_and_its_file_is_gone_before_it_starts(tmp_path: Path):
    # LANG: else Python itself adds LC_CTYPE to its environment (PEP 538)
    env = {
        "PATH": "/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "SPACED": "a b",
        "LINES": "one\ntwo",
        "EQUALS": "x=y=z",
        "EMPTY": "",
        **MARKS,
    }
    pid, log, exit_file = start(tmp_path, "none", [sys.executable, "-I", "-S", "-c", SHOW], env)
    try:
        wait_for(logged(log, "shown"), "the agent starts")
        assert not (tmp_path / "agent.env").exists(), "the environment (credentials) is not left on the disk"
        pairs = (entry.partition(b"=") for entry in (tmp_path / "env.out").read_bytes().split(b"\0")[:-1])
        got = {k.decode(): v.decode() for k, _, v in pairs}
        assert got == {**env, "HIVE_EXIT_FILE": str(exit_file), "PWD": str(tmp_path), "TMPDIR": "/tmp"}
        fds = (tmp_path / "fds.out").read_text()
        assert "agent.env" not in fds, f"its environment's file is not open in the sandbox: {fds}"
        pane = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert os.path.basename(pane[0]) == b"sh" and not any(b"envexec" in w for w in pane), "no Python on its way"
        # the pane's process carries what finds the attempt's processes, so a stop knows its age
        mark = procfs.AgentMark(MARKS["HIVE_ROOT"], MARKS["HIVE_TASK"], int(MARKS["HIVE_ATTEMPT"]), pid)
        assert procfs.birth(mark) > 0
        assert pid in procfs.members(mark)
        (tmp_path / "go").write_text("")
        wait_for(exit_file.exists, "its exit status is recorded")
        assert exit_file.read_text().strip() == "0"
    finally:
        tmux.kill_session("confined")


def test_the_log_writer_serves_the_proxy_beside_the_pane_from_the_first_request_until_the_pane_ends(
    tmp_path: Path, http_server: int
):
    allowed, refused = f"http://127.0.0.1:{http_server}/late", f"http://localhost:{http_server}/no"
    env = {"PATH": "/usr/bin:/bin", **MARKS}
    pid, log, exit_file = start(tmp_path, "allowlist", [sys.executable, "-c", ASKS, allowed, refused], env)
    sock = network.socket_path(str(tmp_path))
    try:
        wait_for(logged(log, "asked"), "the agent starts")
        wait_for(sock.exists, "the log's writer listens beside the pane")
        assert not _proxies(sock), "no proxy runs before the agent's first request"
        (tmp_path / "go").write_text("")
        wait_for(exit_file.exists, "the agent ends")
        assert exit_file.read_text().strip() == "0"
        text = log.read_bytes().decode(errors="replace")
        assert "got hello /late" in text and "http 403" in text, text
        # the proxy's word on what it refused reaches the pane, and so the task's log
        assert f"hive sandbox: refused a connection to localhost:{http_server}" in text, text
        wait_for(lambda: not procfs.pid_alive(pid), "the pane's process ends with the agent (kept: remain-on-exit)")
        wait_for(lambda: not sock.parent.exists(), "the proxy's socket and folder go once the pane's process has")
        wait_for(lambda: not _proxies(sock), "the proxy ends with the pane's process")
    finally:
        tmux.kill_session("confined")


def test_a_log_writer_asked_to_serve_a_pane_already_gone_only_writes_the_log(tmp_path: Path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    sock, log = tmp_path / "proxy" / "proxy.sock", tmp_path / "task.log"
    argv = logcap.command(log, 1000, ("--beside", str(sock), "1", "/bin/true"))
    done = subprocess.run([*argv, str(gone.pid), os.devnull], input=b"words\n", capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert log.read_bytes() == b"words\n"
    assert not sock.exists(), "nothing listens for a pane that is gone"


def _proxies(sock: Path) -> list[int]:
    """Live proxies serving `sock`: the log writer's child once it became proxy.py (until then its
    command line is the writer's, which holds the proxy's only as what it will start)."""
    started = [os.fsencode(word) for word in scripts.argv(proxy.__file__)]
    found = []
    for d in Path("/proc").iterdir():
        try:
            words = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if words[: len(started)] == started and os.fsencode(sock) in words:
            found.append(int(d.name))
    return found
