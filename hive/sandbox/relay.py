"""`python -I -S relay.py SOCKET PORT -- ARGV...`: the first thing inside an agent's sandbox
when its network is an allowlist. Listen on 127.0.0.1:PORT (the sandbox's own loopback, where
HTTPS_PROXY/HTTP_PROXY point), then become ARGV; a grandchild, re-parented to the sandbox's
init, waits for the first connection, then becomes `proxy.py pump`, which passes each on to the
proxy's socket SOCKET; it ends when ARGV does. Not only with the sandbox's pid namespace: its
init (bubblewrap's) waits for every process in it, and when `kill -9` of a run lands as its
check's sandbox starts, bubblewrap can miss its parent's death (it asks for the signal after it
started) and live on, its init then waiting for a grandchild that waited for a connection forever
(seen in the soak: a check's sandbox left after the run).

The port is bound before ARGV starts, so its first request finds it ready. Everything else is
left to the grandchild, and to the first request (an agent that never asks costs no more): this
is on every sandboxed agent's way, so it starts from its cached bytecode (hive.scripts) and
imports only `_socket` (`socket` costs ~10 ms).
"""

from __future__ import annotations

import _socket
import os
import sys

PROXY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "proxy.py")


def main(args: list[str]) -> int:
    if len(args) < 4 or args[2] != "--" or not args[1].isdigit():
        print("usage: python -I -S relay.py SOCKET PORT -- ARGV...", file=sys.stderr)
        return 2
    path, port, argv = args[0], int(args[1]), args[3:]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
    except OSError as e:
        print(f"hive sandbox: cannot listen on 127.0.0.1:{port}: {e}", file=sys.stderr)
        return 127
    argv_ended = _pidfd(os.getpid())  # this process, once it is ARGV: readable when it ends
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            _pump(listener, path, argv_ended)
        os._exit(0)
    os.wait()
    listener.close()
    if argv_ended >= 0:
        os.close(argv_ended)
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"hive sandbox: cannot run {argv[0]!r}: {e}", file=sys.stderr)
        return 127


def _pidfd(pid: int) -> int:
    """A pidfd of process `pid`, or -1 where the kernel has none (before Linux 5.3): then the
    grandchild ends with the sandbox's pid namespace alone."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1


def _pump(listener: _socket.socket, path: str, argv_ended: int) -> None:
    """At the first connection, become `proxy.py pump`, serving `listener` (holding none of
    ARGV's output: a check's pipes close when its command ends); if ARGV ends first, end."""
    import select

    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    ready, _, _ = select.select([listener.fileno(), *([argv_ended] if argv_ended >= 0 else [])], [], [])
    if argv_ended in ready:
        os._exit(0)
    fd = listener.fileno()
    os.set_inheritable(fd, True)
    if argv_ended >= 0:
        os.set_inheritable(argv_ended, True)
    try:
        os.execv(sys.executable, [sys.executable, "-I", "-S", PROXY, "pump", str(fd), path, str(argv_ended)])
    finally:
        os._exit(127)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
