"""A sandbox's one way out, in two halves run with `python -I -S proxy.py`:

- `serve SOCKET ALLOW REFUSED -- ARGV...`, on the host: run ARGV (bubblewrap, with a sandbox
  that has no network of its own) while serving, on the unix socket SOCKET, an HTTP proxy that
  lets through the hosts of ALLOW (comma-separated; `*.x.org` is any name under x.org) and
  refuses the rest, each refusal told on stderr (the task's log) and recorded as a JSON line in
  REFUSED (which the agent cannot write). Exits as ARGV does.
- `relay SOCKET PORT -- ARGV...`, first thing inside the sandbox: listen on 127.0.0.1:PORT (the
  sandbox's own loopback, where HTTPS_PROXY/HTTP_PROXY point), pass each connection on to
  SOCKET, and become ARGV. The port is bound before ARGV starts, so its first request finds the
  relay ready; the relay is a grandchild re-parented to the sandbox's init, and ends with the
  sandbox's pid namespace when ARGV does.

It lives exactly as long as the sandbox, in the same tmux pane: when `doit` is killed the
agent keeps its way out, and a re-attached run finds both. bubblewrap's `--die-with-parent`
ends the sandbox if this process is killed. Like `hive.adapters.envexec` it runs as a file
with `-I -S` and imports only the standard library: it starts with every sandboxed agent.

Two kinds of request come through (as from any client honouring HTTPS_PROXY/HTTP_PROXY):
`CONNECT host:port` (TLS, tunnelled untouched) and a plain `GET http://host/...` (a model
server on a local port), forwarded with `Connection: close` so each request is checked.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable

# It starts with every sandboxed agent, in its path: modules it needs only now and then (json
# for a refusal, urllib.parse for a plain-HTTP request) are imported when they are, and none
# of contextlib, subprocess, typing (-I -S: ~11 ms to start, those imports another ~40 ms here).

HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT = 30.0
CHUNK = 64 * 1024
HOP_HEADERS = ("proxy-connection", "proxy-authorization", "connection", "keep-alive")
# Refusals recorded per sandbox at most (each is still refused and told): an agent looping on a
# refused host must not fill the disk.
RECORDED = 1000


def allowed(host: str, allow: list[str]) -> bool:
    """Is `host` (a name or an address, as the client asked for it) on the allowlist?"""
    host = host.lower().rstrip(".")
    for pattern in allow:
        pattern = pattern.lower().rstrip(".")
        if host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:])):
            return True
    return False


def split_target(target: str) -> tuple[str, int]:
    """`host:port` of a CONNECT (an IPv6 address in brackets) → (host, port)."""
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(target)
    return host.strip("[]"), int(port)


class Proxy:
    def __init__(self, path: str, allow: list[str], refused: str) -> None:
        self.allow = allow
        self.refused = refused
        self.recorded = 0
        _quietly(os.unlink, path)  # left by a proxy killed before it could remove it
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(64)
        self.path = path

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def close(self) -> None:
        _quietly(self.server.close)
        _quietly(os.unlink, self.path)

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(CONNECT_TIMEOUT)
            try:
                head, rest = _read_head(conn)
                lines = head.decode("latin-1").split("\r\n")
                method, target, version = lines[0].split(" ", 2)
                if method.upper() == "CONNECT":
                    upstream = self._tunnel(conn, target)
                else:
                    upstream = self._forward(conn, f"{method} {target} {version}", lines[1:])
            except (OSError, ValueError):
                return
            if upstream is None:
                return
            with upstream:
                conn.settimeout(None)
                upstream.settimeout(None)
                if rest:
                    upstream.sendall(rest)
                _pump(conn, upstream)

    def _tunnel(self, conn: socket.socket, target: str) -> socket.socket | None:
        """`CONNECT host:port`: a tunnel, once the host is found allowed and reached."""
        upstream = self._open(conn, *split_target(target))
        if upstream is not None:
            conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        return upstream

    def _forward(self, conn: socket.socket, first: str, headers: list[str]) -> socket.socket | None:
        """`GET http://host/path`: the request passed on as the server expects it, its
        connection closed after the answer (the next request is checked anew)."""
        from urllib.parse import urlsplit

        method, target, version = first.split(" ", 2)
        url = urlsplit(target)
        if url.scheme != "http" or not url.hostname:
            _reply(conn, 400, f"hive sandbox: not a proxy request: {first[:200]}")
            return None
        upstream = self._open(conn, url.hostname, url.port or 80)
        if upstream is not None:
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            kept = [h for h in headers if h and h.split(":", 1)[0].strip().lower() not in HOP_HEADERS]
            request = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""])
            upstream.sendall(request.encode("latin-1"))
        return upstream

    def _open(self, conn: socket.socket, host: str, port: int) -> socket.socket | None:
        """A connection to host:port if it is allowed (else the client hears why, and the
        refusal is recorded)."""
        if not allowed(host, self.allow):
            self._refuse(host, port)
            _reply(conn, 403, f"hive sandbox: {host} is not on the allowlist ([sandbox] allow)")
            return None
        try:
            return socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        except OSError as e:
            _reply(conn, 502, f"hive sandbox: cannot reach {host}:{port}: {e}")
            return None

    def _refuse(self, host: str, port: int) -> None:
        import json

        self.recorded += 1
        if self.recorded > RECORDED:
            return
        print(f"hive sandbox: refused a connection to {host}:{port} (not in [sandbox] allow)", file=sys.stderr)
        line = json.dumps({"host": host, "port": port, "at": time.time()}) + "\n"
        # one short append: whole lines even when the agent and a check refuse at once
        try:
            fd = os.open(self.refused, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError:
            return
        _quietly(os.write, fd, line.encode())
        os.close(fd)


def _read_head(conn: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(CHUNK)
        if not chunk or len(data) > HEAD_LIMIT:
            raise ValueError("no request")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _reply(conn: socket.socket, status: int, text: str) -> None:
    body = (text + "\n").encode()
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    _quietly(conn.sendall, head.encode() + body)


def _pump(a: socket.socket, b: socket.socket) -> None:
    """Bytes both ways until both sides are done."""
    other = threading.Thread(target=_copy, args=(b, a), daemon=True)
    other.start()
    _copy(a, b)
    other.join()


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(CHUNK):
            dst.sendall(chunk)
    except OSError:
        pass
    _quietly(dst.shutdown, socket.SHUT_WR)


def _quietly(fn: Callable[..., object], *args: object) -> None:
    """`fn(*args)`, whatever OSError it meets (a peer gone, a file already removed)."""
    try:
        fn(*args)
    except OSError:
        pass


def serve(args: list[str]) -> int:
    path, allow, refused, argv = args[0], [h for h in args[1].split(",") if h], args[2], args[4:]
    try:
        proxy = Proxy(path, allow, refused)
    except OSError as e:
        print(f"hive sandbox: cannot serve the proxy at {path}: {e}", file=sys.stderr)
        return 127
    child = os.fork()  # before any thread runs here; the socket is listening already
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as e:
            print(f"hive sandbox: cannot run {argv[0]!r}: {e}", file=sys.stderr)
        os._exit(127)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda n, _frame: _quietly(os.kill, child, n))
    threading.Thread(target=proxy.serve, daemon=True).start()
    _, status = os.waitpid(child, 0)
    proxy.close()
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _accept(listener: socket.socket, path: str) -> None:
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
            _pump(conn, upstream)


def relay(args: list[str]) -> int:
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
            try:
                _accept(listener, path)
            finally:
                os._exit(0)
        os._exit(0)
    os.wait()
    listener.close()
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"hive sandbox: cannot run {argv[0]!r}: {e}", file=sys.stderr)
        return 127


def main(args: list[str]) -> int:
    if args[:1] == ["serve"] and len(args) >= 6 and args[4] == "--":
        return serve(args[1:])
    if args[:1] == ["relay"] and len(args) >= 5 and args[3] == "--":
        return relay(args[1:])
    print(
        "usage: python -I -S proxy.py serve SOCKET ALLOW REFUSED -- ARGV... | relay SOCKET PORT -- ARGV...",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
