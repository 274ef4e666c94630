"""hive/sandbox/network.py and proxy.py (both halves): a sandbox with `network = "allowlist"` reaches
an allowed host through the host's proxy and nothing else; with "none" nothing at all. Real
bubblewrap, a real HTTP server on this machine's loopback (its own name decides: `127.0.0.1`
allowed, `localhost` not, the same server behind both)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hive import scripts
from hive.adapters import envexec
from hive.sandbox import network, policy, proxy
from hive.sandbox import relay as relay_py

CLIENT = """
import socket, sys, urllib.request, urllib.error
for url in sys.argv[1:3]:
    try:
        print(url, "ok", urllib.request.urlopen(url, timeout=10).read().decode())
    except urllib.error.HTTPError as e:
        print(url, "http", e.code)
    except OSError as e:
        print(url, "failed")
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=5).close()
    print("direct ok")
except OSError:
    print("direct failed")
"""


def run_inside(mode: str, tmp_path: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """`argv` in a sandbox whose network is `mode` (only 127.0.0.1 allowed), made as Hive makes
    one: Python is bound back into its /tmp when it lives there (a CI clone's virtualenv)."""
    rules = policy.Rules(required=True, writable=(), hide=(), network=mode, allow=("127.0.0.1",), keep=())
    box = policy.Box(tmp_path, tuple(argv), (), str(tmp_path), tmp_path / "refused.jsonl")
    c = policy.confine(rules, box)
    env = {"PATH": "/usr/bin:/bin", **c.env}
    return subprocess.run(c.argv(argv), capture_output=True, text=True, env=env, timeout=60, check=False)


def test_an_allowed_host_answers_through_the_proxy_and_nothing_else_gets_out(tmp_path: Path, http_server: int):
    refused = tmp_path / "refused.jsonl"
    allowed, other = f"http://127.0.0.1:{http_server}/a?b=1", f"http://localhost:{http_server}/x"
    sock = network.socket_path(str(tmp_path))
    r = run_inside("allowlist", tmp_path, [sys.executable, "-c", CLIENT, allowed, other, str(http_server)])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{allowed} ok hello /a?b=1", f"{other} http 403", "direct failed"]
    assert f"hive sandbox: refused a connection to localhost:{http_server} (not in [sandbox] allow)" in r.stderr
    assert [(x["host"], x["port"]) for x in network.refusals(refused)] == [("localhost", http_server)]
    assert not sock.parent.exists(), "the proxy removes its socket and its folder when done"


def test_without_a_network_nothing_gets_out(tmp_path: Path, http_server: int):
    url = f"http://127.0.0.1:{http_server}/"
    r = run_inside("none", tmp_path, [sys.executable, "-c", CLIENT, url, url, str(http_server)])
    assert r.stdout.splitlines() == [f"{url} failed", f"{url} failed", "direct failed"]


def test_the_proxy_exits_as_its_program_does(tmp_path: Path):
    way = network.way("allowlist", [], str(tmp_path), tmp_path / "refused.jsonl")
    r = subprocess.run([*way.outside(), "sh", "-c", "exit 7"], capture_output=True, check=False, timeout=30)
    assert r.returncode == 7


def test_a_checks_proxy_starts_only_at_its_first_request(tmp_path: Path):
    """Most checks ask the network nothing: beside one, only envexec's child waits (no proxy),
    and it is gone, socket and folder, once the check is."""
    way = network.way("allowlist", ["127.0.0.1"], str(tmp_path), tmp_path / "refused.jsonl")
    until_go = ["sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.02; done', "sh", "go"]
    check = subprocess.Popen([*way.outside(), *until_go], cwd=tmp_path)
    try:
        waiting: list[int] = []
        deadline = time.monotonic() + 10
        while not waiting and time.monotonic() < deadline:  # envexec forks it, then becomes the check
            waiting = [pid for pid in children(check.pid) if "envexec" in cmdline(pid)]
            time.sleep(0.02)
        assert len(waiting) == 1 and "import proxy" in cmdline(waiting[0]), "it waits, holding the proxy's command"
        time.sleep(0.2)
        started = [pid for pid in children(check.pid) if cmdline(pid).split()[3:4] == [proxy.__file__]]
        assert not started, "no proxy runs before the check's first request"
        (tmp_path / "go").write_text("")
        assert check.wait(timeout=30) == 0
    finally:
        check.kill()
        check.wait()
    assert way.socket is not None
    wait_gone(way.socket.parent)


def test_a_tunnel_goes_only_to_an_allowed_host(tmp_path: Path, http_server: int):
    """CONNECT (how clients reach https:// hosts) to the allowed name, then to one that is not."""
    refused = tmp_path / "refused.jsonl"
    way = network.way("allowlist", ["127.0.0.1"], str(tmp_path), refused)
    script = (
        "import socket, sys\n"
        "for host in ('127.0.0.1', 'localhost'):\n"
        "    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
        "    s.sendall(f'CONNECT {host}:{sys.argv[2]} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'.encode())\n"
        "    head = s.recv(100).decode().splitlines()[0]\n"
        "    if '200' in head:\n"
        "        s.sendall(b'GET /t HTTP/1.0\\r\\n\\r\\n')\n"
        "        answer = b''.join(iter(lambda: s.recv(1000), b''))\n"  # HTTP/1.0: until it closes
        "        print(head, answer.decode().split()[-1])\n"
        "    else:\n"
        "        print(head)\n"
    )
    assert way.socket is not None
    r = subprocess.run(
        [*way.outside(), sys.executable, "-c", script, str(way.socket), str(http_server)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert r.stdout.splitlines() == ["HTTP/1.1 200 Connection established /t", "HTTP/1.1 403 Forbidden"], r.stderr
    assert json.loads(refused.read_text())["host"] == "localhost"


@pytest.mark.parametrize(
    ("host", "expected"),
    [("api.anthropic.com", True), ("API.Anthropic.com.", True), ("evil.com", False), ("a.pypi.org", True),
     ("pypi.org.evil.com", False), ("xpypi.org", False), ("pypi.org", False)],
)  # fmt: skip
def test_the_allowlist_matches_names_exactly_or_under_a_wildcard(host: str, expected: bool):
    assert proxy.allowed(host, ["api.anthropic.com", "*.pypi.org"]) is expected


def test_model_servers_named_in_the_environment_are_found():
    env = {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:8080",
        "OPENAI_API_BASE": "https://llm.corp.example/v1",
        "HOME": "/root",
        "BROKEN_BASE_URL": "http://[::1",
    }
    assert network.hosts_in(env) == ["127.0.0.1", "llm.corp.example"]


def agent_beside_its_proxy(tmp_path: Path, agent: list[str], http_server: int) -> tuple[subprocess.Popen[str], Path]:
    """`agent` started as an agent is, with a sandbox whose allowlist is 127.0.0.1 (envexec,
    the proxy beside it); returns it running and its proxy's socket."""
    rules = policy.Rules(required=True, writable=(), hide=(), network="allowlist", allow=("127.0.0.1",), keep=())
    c = policy.confine(rules, policy.Box(tmp_path, tuple(agent), (tmp_path,), str(tmp_path), tmp_path / "r.jsonl"))
    assert c.beside and "beside" not in c.prefix, "an agent's proxy is not on its way"
    env_file = tmp_path / "agent.env"
    env_file.write_bytes(envexec.encode({"PATH": "/usr/bin:/bin", **c.env}))
    argv = [sys.executable, "-I", "-S", envexec.__file__, str(env_file), *c.beside, *c.prefix, *agent]
    return subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, text=True), network.socket_path(str(tmp_path))


def test_an_agents_proxy_starts_at_its_first_request_ignores_its_ctrl_c_and_ends_after_it(
    tmp_path: Path, http_server: int
):
    """envexec listens beside the sandbox and starts the proxy at the first request (off the
    agent's way); a Ctrl-C or hang-up meant for the agent leaves it be; it ends (socket and
    folder gone) once the agent's process has."""
    agent = [sys.executable, "-c", AGENT, f"http://127.0.0.1:{http_server}/late"]
    p, sock = agent_beside_its_proxy(tmp_path, agent, http_server)
    try:
        assert p.stdout is not None
        assert p.stdout.readline() == "asked\n"
        waiting = children(p.pid)
        assert len(waiting) == 2, waiting  # bubblewrap, and envexec's child listening for the proxy
        for pid in waiting:
            if "envexec" in cmdline(pid):
                for sig in (signal.SIGINT, signal.SIGHUP):
                    os.kill(pid, sig)
        (tmp_path / "go").write_text("")  # the agent asks through it now
        assert p.stdout.readline() == "ok hello /late\n"
        assert p.wait(timeout=30) == 0
    finally:
        p.kill()
        p.wait()
    wait_gone(sock.parent)


def test_an_agent_that_never_asks_leaves_no_proxy_socket_behind(tmp_path: Path, http_server: int):
    p, sock = agent_beside_its_proxy(tmp_path, [sys.executable, "-c", "print('quiet')"], http_server)
    out, _ = p.communicate(timeout=30)
    assert out == "quiet\n" and p.returncode == 0
    wait_gone(sock.parent)
    assert not (tmp_path / "r.jsonl").exists()


def wait_gone(path: Path) -> None:
    deadline = time.monotonic() + 10
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not path.exists(), "the proxy's socket and folder are removed once its agent has ended"


def test_the_relay_waits_for_a_proxy_still_starting(tmp_path: Path, http_server: int):
    """The relay's first connection may come before the proxy beside it has made its socket."""
    sock, port = network.socket_path(str(tmp_path)), free_port()
    relay = [*scripts.argv(relay_py.__file__), str(sock), str(port), "--"]
    client = [sys.executable, "-c", RELAYED, str(port), f"http://127.0.0.1:{http_server}/slow"]
    # its own pid namespace (its relay ends with it), on this machine's network and files
    pidns = ["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--die-with-parent", "--"]
    p = subprocess.Popen([*pidns, *relay, *client], stdout=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"})
    done = tmp_path / "done"
    try:
        time.sleep(0.5)  # the client waits for the proxy meanwhile
        serve = network.way("allowlist", ["127.0.0.1"], str(tmp_path), tmp_path / "r").outside()
        until_done = ["sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.05; done', "sh", str(done)]
        server = subprocess.Popen([*serve, *until_done])
        out, _ = p.communicate(timeout=30)
        done.write_text("")
        assert server.wait(timeout=30) == 0
    finally:
        done.write_text("")
        p.kill()
        p.wait()
    assert out == "ok hello /slow\n"


def _relays_of(sock: Path) -> list[int]:
    """Live processes (not zombies) of the relay for `sock`: its grandchild (the relay's command line
    until its first connection, `proxy.py pump` from then on)."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            cmdline = (d / "cmdline").read_bytes() if d.name.isdigit() else b""
            if str(sock).encode() in cmdline and (b"import relay" in cmdline or b"\0pump\0" in cmdline):
                if (d / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(d.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("connected", [False, True], ids=["never-asked", "asked-once"])
def test_the_relays_grandchild_ends_when_its_command_does_with_no_pid_namespace_to_end_it(
    tmp_path: Path, http_server: int, connected: bool
):
    """What kill -9 of a run as its check's sandbox started left (the soak: a sandbox that
    outlived its run, bubblewrap's init waiting for the relay's grandchild, which waited for a
    connection forever): here no namespace ends it; its command's end does, whether it waited
    for a first connection or had become the pump."""
    sock, port = network.socket_path(str(tmp_path)), free_port()
    relay = [*scripts.argv(relay_py.__file__), str(sock), str(port), "--"]
    client = [sys.executable, "-c", RELAYED, str(port), f"http://127.0.0.1:{http_server}/x"]
    server = None
    if connected:
        serve = network.way("allowlist", ["127.0.0.1"], str(tmp_path), tmp_path / "r").outside()
        server = subprocess.Popen([*serve, "sleep", "30"])
    try:
        command = client if connected else ["true"]
        r = subprocess.run(
            [*relay, *command], capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"}
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout == ("ok hello /x\n" if connected else "")
        deadline = time.monotonic() + 10
        while _relays_of(sock) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _relays_of(sock) == [], "the relay's grandchild outlived its command"
    finally:
        for pid in _relays_of(sock):
            os.kill(pid, signal.SIGKILL)
        if server is not None:
            server.kill()
            server.wait()


AGENT = """
import os, sys, time, urllib.request
print("asked", flush=True)
while not os.path.exists("go"):
    time.sleep(0.05)
print("ok", urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), flush=True)
"""

# through the relay's port directly (no HTTPS_PROXY set outside a sandbox)
RELAYED = """
import sys, urllib.request
proxy = urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{sys.argv[1]}"})
print("ok", urllib.request.build_opener(proxy).open(sys.argv[2], timeout=20).read().decode())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True, check=False)
    return [int(x) for x in out.stdout.split()]


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
