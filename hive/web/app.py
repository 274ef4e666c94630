"""`hive web`'s server: the Starlette app (routes behind the guard), served by uvicorn on a socket
bound here, so a port in use is a clear error and `--port 0` (any free port) prints the real one."""

from __future__ import annotations

import errno
import secrets
import socket
from collections.abc import Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from hive.buglog import record_bug
from hive.errors import HiveError
from hive.project import load_project
from hive.store.paths import Paths
from hive.web.pages import Context
from hive.web.routes import Site, routes
from hive.web.security import WILDCARDS, Guard, GuardMiddleware, check_bind, csrf_secret, machine_names


def make_app(root: Path, guard: Guard) -> Starlette:
    site = Site(root, Context(root.name, guard.csrf, guard.read_only))

    async def bug(request: Request, _exc: Exception) -> Response:
        where = record_bug(Paths(root).debug_log, f"hive web {request.method} {request.url.path}")
        return PlainTextResponse(f"hive web: internal error ({where})", 500)

    app = Starlette(
        routes=routes(),
        middleware=[Middleware(GuardMiddleware, guard=guard)],
        exception_handlers={Exception: bug},
    )
    app.state.site = site
    return app


def guard_for(host: str, port: int, token: str, read_only: bool, csrf: str | None = None) -> Guard:
    names = machine_names() if host in WILDCARDS else frozenset()
    return Guard(host, port, token, csrf or secrets.token_urlsafe(32), read_only, names)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (IPv6 when the address is one)."""
    if not 0 <= port <= 65535:
        raise HiveError(f"hive web --port {port}: a port is a number from 0 to 65535 (0: any free one)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        address = socket.getaddrinfo(host or None, port, family, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)[0][4]
    except socket.gaierror as e:
        raise HiveError(f"hive web --host {host}: not an address of this machine ({e.strerror})") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise HiveError(f"hive web: port {port} is in use; give another with --port (0: any free port)") from None
        raise HiveError(f"hive web: cannot listen on {host}:{port} ({e.strerror})") from None
    sock.listen(128)
    return sock


def url(host: str, port: int, token: str) -> str:
    shown = socket.gethostname() if host in WILDCARDS else host
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def serve(root: Path, host: str, port: int, token: str, read_only: bool, announce: Callable[[str], None]) -> None:
    """Serve until Ctrl-C or SIGTERM. The project is loaded first: a broken plan or config is
    said now, before anything listens."""
    import uvicorn  # only `hive web` pays for it

    check_bind(host, token)
    load_project(root, strict=False)  # a broken config is said now; a broken plan shows on the page
    sock = bind(host, port)
    port = sock.getsockname()[1]
    app = make_app(root, guard_for(host, port, token, read_only, csrf_secret(Paths(root).web_csrf)))
    app.state.site.warm()
    announce(url(host, port, token))
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", server_header=False, timeout_graceful_shutdown=2
    )
    uvicorn.Server(config).run(sockets=[sock])
