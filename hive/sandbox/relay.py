"""`python -I -S relay.py SOCKET PORT -- ARGV...`: the first thing inside an agent's sandbox
when its network is an allowlist. Listen on 127.0.0.1:PORT (the sandbox's own loopback, where
HTTPS_PROXY/HTTP_PROXY point), then become ARGV; a grandchild, re-parented to the sandbox's
init, waits for the first connection, then becomes `proxy.py pump`, which passes each on to the
proxy's socket SOCKET; it ends with the sandbox's pid namespace when ARGV does.

The port is bound before ARGV starts, so its first request finds it ready. Everything else is
left to the grandchild, and to the first request (an agent that never asks costs no more): this
is on every sandboxed agent's way, so it is a small file (Python compiles a script each time it
runs one) that imports only `_socket` (`socket` costs ~10 ms).
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
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            _pump(listener, path)
        os._exit(0)
    os.wait()
    listener.close()
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"hive sandbox: cannot run {argv[0]!r}: {e}", file=sys.stderr)
        return 127


def _pump(listener: _socket.socket, path: str) -> None:
    """At the first connection, become `proxy.py pump`, serving `listener` (holding none of
    ARGV's output: a check's pipes close when its command ends)."""
    import select

    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    select.select([listener], [], [])
    fd = listener.fileno()
    os.set_inheritable(fd, True)
    try:
        os.execv(sys.executable, [sys.executable, "-I", "-S", PROXY, "pump", str(fd), path])
    finally:
        os._exit(127)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
