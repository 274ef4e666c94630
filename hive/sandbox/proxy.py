"""A sandbox's one way out, run with `python -I -S proxy.py`:

- `beside SOCKET ALLOW REFUSED FD PID PIDFD`, on the host, started by `hive.adapters.envexec` (or,
  beside a sandboxed agent's tmux pane, by the log's writer, hive.logcap, with envexec's code)
  beside an agent's or a check's sandbox at the first connection to SOCKET (FD: its listening
  socket; PID: the sandbox's process; PIDFD: a pidfd of it, or -1): serve, on SOCKET, an HTTP
  proxy that lets through what ALLOW allows (comma-separated entries of `[sandbox] allow`, read
  by `rule`: `host` at any port, `host:port` at that one, `*.x.org` any name under x.org) and
  refuses the rest, each refusal told on stderr (the task's log) and recorded as a JSON line in
  REFUSED (which the agent cannot write), until that process has ended.
- `pump FD SOCKET ENDED`, inside the sandbox (started by relay.py, which bound the listening
  socket FD on the sandbox's loopback): pass each connection on to SOCKET, waiting a moment for
  a proxy still starting beside the sandbox, until the sandbox's command has ended (ENDED: a
  pidfd of it, or -1).

SOCKET lies in a folder of its own, which the sandbox is shown (not the socket itself: one made
anew, as a proxy started again makes it, would not be the one shown).

An agent's proxy lives exactly as long as its sandbox, in the same tmux pane: when `doit` is
killed the agent keeps its way out, and a re-attached run finds both; Ctrl-C or a hang-up
meant for the agent does not end it. None of this file runs on the agent's way: envexec (or the
log's writer) binds its socket and starts it beside the sandbox when it is first needed, relay.py binds the port
inside and starts `pump` at its first connection. It may import what it needs, but only from
the standard library, run with `-I -S`.

Two kinds of request come through (as from any client honouring HTTPS_PROXY/HTTP_PROXY):
`CONNECT host:port` (TLS, tunnelled untouched) and a plain `GET http://host/...` (a model
server on a local port), forwarded with `Connection: close` so each request is checked.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable

HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT = 30.0
CHUNK = 64 * 1024
HOP_HEADERS = ("proxy-connection", "proxy-authorization", "connection", "keep-alive")
# Refusals recorded per sandbox at most (each is still refused and told): an agent looping on a
# refused host must not fill the disk.
RECORDED = 1000
# How long the relay waits for a proxy still starting beside the sandbox (it binds its socket
# within ~50 ms; a machine starting many agents at once may take longer)
PROXY_WAIT = 10.0


def allowed(host: str, allow: Iterable[str], port: int | None = None) -> bool:
    """Is `host` (a name or an address, as the client asked for it) at `port` on the allowlist?
    (`port` None: not known, so only an entry for any port lets it through.)"""
    asked = _asked(host)
    for entry in allow:
        try:
            pattern, only = rule(entry)
        except ValueError:
            continue  # the config refuses such an entry; one from elsewhere allows nothing
        if only is not None and only != port:
            continue
        if asked == pattern or (pattern.startswith("*.") and asked.endswith(pattern[1:])):
            return True
    return False


def _asked(host: str) -> str:
    """A host as `rule` writes one: lower-case, no trailing dot, an IPv6 address bare and in
    its one short form."""
    host = host.lower().rstrip(".").strip("[]")
    return (_ipv6(host) or host) if ":" in host else host


# What a host name is made of (an IPv4 address is written as one); an IPv6 address is read apart
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.")
_WILDCARD = '"*" may only begin it, as "*.npmjs.org" does (any name under npmjs.org)'


def rule(entry: str) -> tuple[str, int | None]:
    """An entry of `[sandbox] allow` → (the host it names, as `_asked` writes one, `*.x.org`
    for any name under x.org; the one port it allows, None for any). Else ValueError saying
    why not, which hive.settings.config shows naming the entry (this is the one reader of
    them, so the config and the proxy cannot disagree)."""
    if not entry.strip():
        raise ValueError("it is empty")
    if any(c.isspace() for c in entry):
        raise ValueError("it has a space in it")
    if "://" in entry:
        raise ValueError(_url(entry))
    if "/" in entry:
        raise ValueError('it has a "/" (a host has no path)')
    if entry.startswith("[") or entry.count(":") > 1:
        return _address(entry)
    name, colon, port = entry.partition(":")
    return _name(name), (_port(port) if colon else None)


def _name(name: str) -> str:
    """A host name or IPv4 address, or `*.` and one: lower-case, a trailing dot dropped."""
    wild = "*." if name.startswith("*.") else ""
    bare = name.lower().removeprefix(wild)
    bare = bare[:-1] if bare.endswith(".") else bare
    if "*" in bare:
        raise ValueError(_WILDCARD)
    odd = next((c for c in bare if c not in _NAME_CHARS), None)
    if odd is not None:
        raise ValueError(f"it has {odd!r}, which a host name cannot have")
    labels = bare.split(".")
    if not bare:
        raise ValueError("it names no host")
    if "" in labels:
        raise ValueError("its name has an empty part (two dots in a row, or one at its start)")
    if any(label.startswith("-") or label.endswith("-") for label in labels):
        raise ValueError('a part of its name begins or ends with "-"')
    if len(bare) > 253 or any(len(label) > 63 for label in labels):
        raise ValueError("it is longer than a host name can be")
    return wild + bare


def _address(entry: str) -> tuple[str, int | None]:
    """An IPv6 address: `[::1]`, `[::1]:8080`, or bare `::1` (which takes no port: its last
    part would be read as one)."""
    if not entry.startswith("["):
        address = _ipv6(entry)
        if address is None:
            raise ValueError('it is not an IPv6 address, and a host:port has one ":"')
        return address, None
    inside, bracket, rest = entry[1:].partition("]")
    if not bracket or (rest and not rest.startswith(":")):
        raise ValueError('an IPv6 address in brackets is written "[::1]" or "[::1]:8080"')
    address = _ipv6(inside)
    if address is None:
        raise ValueError(f"{inside!r} in brackets is not an IPv6 address")
    return address, (_port(rest[1:]) if rest else None)


def _ipv6(text: str) -> str | None:
    """An IPv6 address in its one short form (`::1` for `0:0::1`); None for anything else."""
    try:
        return socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, text))
    except (OSError, ValueError):
        return None


def _port(text: str) -> int:
    if not text:
        raise ValueError('it has no port after ":"')
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"its port {text!r} is not a number")
    if not 1 <= int(text) <= 65535:
        raise ValueError(f"its port {int(text)} is not 1-65535")
    return int(text)


def _url(entry: str) -> str:
    """Why a URL is no entry, with the entry it may have meant."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(entry)
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is no number, a broken [IPv6]
        host = port = None
    if not host:
        return "it is a URL"
    shown = f"[{host}]" if ":" in host else host
    return f'it is a URL, whose host is "{shown}{f":{port}" if port else ""}"'


def split_target(target: str) -> tuple[str, int]:
    """`host:port` of a CONNECT (an IPv6 address in brackets) → (host, port)."""
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(target)
    return host.strip("[]"), int(port)


class Proxy:
    def __init__(self, server: socket.socket, path: str, allow: list[str], refused: str) -> None:
        self.server = server  # listening at `path`
        self.path = path
        self.allow = allow
        self.refused = refused
        self.recorded = 0

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
        _quietly(os.rmdir, os.path.dirname(self.path))  # made for this socket alone

    def _handle(self, conn: socket.socket) -> None:
        try:
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
            try:
                conn.settimeout(None)
                upstream.settimeout(None)
                if rest:
                    upstream.sendall(rest)
                _pump(conn, upstream)
            finally:
                upstream.close()
        finally:
            conn.close()

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
        if not allowed(host, self.allow, port):
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


def _hosts(allow: str) -> list[str]:
    return [h for h in allow.split(",") if h]


def beside(args: list[str]) -> int:
    """Serve the listening socket `listening` (at `path`, started by envexec at its first
    connection) until the process `pid` (its pidfd `fd`, or -1) has ended: the agent's pane,
    which ends once its sandbox has. A signal meant for the agent (Ctrl-C in `hive attach`,
    the pane's hang-up) leaves it be while the sandbox lives."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    path, allow, refused, listening, pid, fd = args[0], args[1], args[2], int(args[3]), int(args[4]), int(args[5])
    proxy = Proxy(socket.socket(fileno=listening), path, _hosts(allow), refused)
    threading.Thread(target=proxy.serve, daemon=True).start()
    try:
        _wait_for(pid, fd)
    finally:
        proxy.close()
    return 0


def _wait_for(pid: int, fd: int) -> None:
    """Until process `pid` has ended: its pidfd `fd` turns readable then (or, without one,
    a second's polling sees the pid gone or this process re-parented)."""
    if fd >= 0:
        select.select([fd], [], [])
        return
    while os.getppid() == pid:
        time.sleep(1.0)


def pump(args: list[str]) -> int:
    """Pass each connection to the listening socket FD (the relay's, in the sandbox) on to the
    proxy at SOCKET, until the sandbox's command has ended (ENDED: a pidfd of it, or -1)."""
    fd, path, ended = int(args[0]), args[1], int(args[2])
    listener = socket.socket(fileno=fd)
    watched = [fd, *([ended] if ended >= 0 else [])]
    while True:
        ready, _, _ = select.select(watched, [], [])
        if ended in ready:
            return 0
        conn, _ = listener.accept()
        threading.Thread(target=_relay, args=(conn, path), daemon=True).start()


def _relay(conn: socket.socket, path: str) -> None:
    try:
        upstream = _connect(path)
        if upstream is None:
            return
        try:
            _pump(conn, upstream)
        finally:
            upstream.close()
    finally:
        conn.close()


def _connect(path: str) -> socket.socket | None:
    """A connection to the proxy at `path`, waiting for one that is still starting."""
    deadline = time.monotonic() + PROXY_WAIT
    while True:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
            return upstream
        except (FileNotFoundError, ConnectionRefusedError):
            upstream.close()
            if time.monotonic() > deadline:
                return None
            time.sleep(0.02)
        except OSError:
            upstream.close()
            return None


def main(args: list[str]) -> int:
    if args[:1] == ["beside"] and len(args) == 7:
        return beside(args[1:])
    if args[:1] == ["pump"] and len(args) == 4:
        return pump(args[1:])
    print(
        "usage: python -I -S proxy.py beside SOCKET ALLOW REFUSED FD PID PIDFD | pump FD SOCKET ENDED",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
