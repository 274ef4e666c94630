"""Who may use the dashboard, and how (issue 26; Gas City's lessons): it binds loopback unless it
has a token; with a token every request carries it (a cookie set from the `?token=` of the URL
`hive web` printed); the Host header must name the address it is bound to, so a web page whose
DNS name is rebound to 127.0.0.1 cannot read it; every state-changing request carries the page's
CSRF token; `--read-only` refuses them all. One ASGI middleware checks all of it before any route
runs, and gives every response headers that keep the page out of frames and its scripts to its own."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.datastructures import URL, Headers, MutableHeaders
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from hive.errors import HiveError
from hive.store.files import atomic_write

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
MAX_FORM = 1 << 20  # an answer's text, not an upload
WILDCARDS = ("0.0.0.0", "::", "")  # every interface of this machine
# the page's own scripts and styles only: text that slipped past escaping still could not run
HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # not no-referrer: with it a plain form's POST carries `Origin: null` (issue 38), and a browser
    # without scripts had no working form; same-origin sends the page's own origin, no one else's
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str) -> None:
    """Only loopback may go without a token: anyone who reaches the port could answer for you."""
    if not is_loopback(host) and not token:
        raise HiveError(
            f"hive web --host {host}: a dashboard other machines can reach needs a token; give --token T "
            f"or set [web] token in .hive/config.toml (or keep the default --host 127.0.0.1)"
        )


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def split_host(header: str) -> tuple[str, int | None]:
    """A Host header's name and port: `127.0.0.1:8765`, `[::1]:8765`, `localhost`."""
    header = header.strip().lower()
    if header.startswith("["):
        name, _, rest = header[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, port = header.partition(":")
    if port and not port.isdigit():
        return "", None
    return name, int(port) if port else None


@dataclass(frozen=True)
class Guard:
    """What this server allows: set once when it starts."""

    host: str  # the address it is bound to, as given
    port: int
    token: str  # "" = none (loopback only)
    csrf: str  # the token its pages carry for state-changing requests
    read_only: bool = False
    names: frozenset[str] = field(default_factory=frozenset)  # more Host names that mean this machine

    @property
    def cookie(self) -> str:
        # per port: browsers share cookies between the ports of one host, and two dashboards must not mix
        return f"hive_token_{self.port}"

    def host_allowed(self, header: str) -> bool:
        name, port = split_host(header)
        if not name or (port or 80) != self.port:
            return False
        bound = self.host.lower().strip("[]")
        if name == bound:
            return True
        if is_loopback(bound):
            return is_loopback(name)
        if bound in WILDCARDS:
            # an address is never a rebound DNS name; a name must be this machine's own
            return _is_ip(name) or name in self.names
        return False

    def token_ok(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())

    def csrf_ok(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.csrf.encode())


def csrf_secret(path: Path) -> str:
    """The pages' CSRF token, kept in `path` (made once, readable by this user alone), so that
    the pages open when `hive web` restarts go on working (issue 38: an answer was refused and
    its text lost)."""
    try:
        kept = path.read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        kept = ""
    if len(kept) >= 32 and path.stat().st_mode & 0o077 == 0:
        return kept
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    atomic_write(path, token + "\n", mode=0o600)
    return token


def machine_names() -> frozenset[str]:
    """The names this machine answers to, for a server bound to every interface."""
    return frozenset(n.lower() for n in (socket.gethostname(), socket.getfqdn()) if n)


class GuardMiddleware:
    """The checks, in order: Host, token, then for a state-changing request read-only and CSRF."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_headers(send)
        refusal, receive = await self._refusal(scope, receive)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _refusal(self, scope: Scope, receive: Receive) -> tuple[Response | None, Receive]:
        guard, headers = self.guard, Headers(scope=scope)
        if not guard.host_allowed(headers.get("host", "")):
            return PlainTextResponse("hive web: this Host is not the address the dashboard is bound to", 400), receive
        if guard.token:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = query.get("token", [""])[0]
            if given and guard.token_ok(given) and scope["method"] in SAFE_METHODS:
                return _enter(scope, guard, query), receive
            if not (guard.token_ok(_cookie(headers, guard.cookie)) or guard.token_ok(_bearer(headers))):
                return PlainTextResponse(
                    "hive web: open the URL `hive web` printed (it carries the token)", 401
                ), receive
        if scope["method"] in SAFE_METHODS:
            return None, receive
        if guard.read_only:
            return PlainTextResponse("hive web: this dashboard is read-only (--read-only)", 403), receive
        # `null` names no site (a sandboxed frame, a privacy setting): the CSRF token, which another
        # site cannot read, is the proof then
        origin = headers.get("origin")
        if origin and origin != "null" and not guard.host_allowed(URL(origin).netloc):
            return PlainTextResponse("hive web: a request from another site", 403), receive
        given, receive = await _csrf_given(receive, headers)
        if not guard.csrf_ok(given):
            return PlainTextResponse("hive web: missing or wrong CSRF token; reload the page", 403), receive
        return None, receive


def _enter(scope: Scope, guard: Guard, query: dict[str, list[str]]) -> Response:
    """The URL with the token: set the cookie and go to the same page without it (out of the
    history and the address bar)."""
    rest = {k: v for k, v in query.items() if k != "token"}
    target = scope.get("path", "/") + (f"?{urlencode(rest, doseq=True)}" if rest else "")
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(guard.cookie, guard.token, httponly=True, samesite="strict", path="/")
    return response


def _cookie(headers: Headers, name: str) -> str:
    for part in headers.get("cookie", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


def _bearer(headers: Headers) -> str:
    kind, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if kind.lower() == "bearer" else ""


async def _csrf_given(receive: Receive, headers: Headers) -> tuple[str, Receive]:
    """The CSRF token from the header htmx sends, else from a posted form's field (its body is
    read here and handed on to the route unchanged)."""
    if headers.get(CSRF_HEADER):
        return headers[CSRF_HEADER], receive
    if not headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return "", receive
    body, more = b"", True
    while more and len(body) <= MAX_FORM:
        message = await receive()
        if message["type"] != "http.request":
            return "", receive
        body += message.get("body", b"")
        more = message.get("more_body", False)
    if more:
        return "", receive
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    fields = parse_qs(body.decode("utf-8", errors="replace"))
    return fields.get(CSRF_FIELD, [""])[0], replay


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in HEADERS.items():
                headers.setdefault(name, value)
        await send(message)

    return sending
