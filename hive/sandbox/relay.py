"""`python -I -S relay.py SOCKET PORT -- ARGV...`, inside a sandbox without a network of its
own: listen on 127.0.0.1:PORT (the sandbox's own loopback, where HTTPS_PROXY/HTTP_PROXY
point), pass each connection on to the host's proxy at the unix socket SOCKET
(`hive.sandbox.proxy`), and become ARGV.

The port is bound before ARGV starts, so its first request finds the relay ready. The relay
itself is a grandchild re-parented to the sandbox's init: it ends with the sandbox's pid
namespace, when ARGV does. Standard library only, run with `-I -S` (see proxy.py).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

CHUNK = 64 * 1024


def serve(listener: socket.socket, path: str) -> None:
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_relay, args=(conn, path), daemon=True).start()


def _relay(conn: socket.socket, path: str) -> None:
    with conn:
        try:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(path)
        except OSError:
            return
        with upstream:
            other = threading.Thread(target=_copy, args=(upstream, conn), daemon=True)
            other.start()
            _copy(conn, upstream)
            other.join()


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(CHUNK):
            dst.sendall(chunk)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def main(args: list[str]) -> int:
    if len(args) < 4 or args[2] != "--":
        print("usage: python -I -S relay.py SOCKET PORT -- ARGV...", file=sys.stderr)
        return 2
    path, port, argv = args[0], int(args[1]), args[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
    except OSError as e:
        print(f"hive sandbox: cannot listen on 127.0.0.1:{port}: {e}", file=sys.stderr)
        return 127
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            # holds none of ARGV's output (a check's pipes close when its command ends)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            serve(listener, path)
        os._exit(0)
    os.wait()
    listener.close()
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"hive sandbox: cannot run {argv[0]!r}: {e}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
