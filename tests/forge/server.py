"""A scripted GitHub (REST API v3, version 2026-03-10) on 127.0.0.1, backed by a real bare git
repository, for tests of pull-request mode:

    with Forge(tmp_path / "forge", token="t0k") as forge:
        git push <forge.remote> main hive/task-1          # real git, a local path
        client(api_url=forge.url, token="t0k")            # urllib, httpx, githubkit, ...
        forge.review(1, "alice", "APPROVED")              # people and CI, scripted
        forge.remaining = 0                               # knobs, changed while it runs
        forge.check()                                     # AssertionError for any problem

It answers as GitHub does: authentication, the primary rate limit (x-ratelimit-* headers; a
304 costs nothing), secondary limits (retry-after), ETags, pagination (Link). It cannot drift
from GitHub: each request body and each answer is checked against GitHub's OpenAPI description
(schema.py), and a call it does not know is a problem too: `forge.problems` lists them, they
are answered 500 (404 for an unknown call), and `check()` fails the test.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import objects, routes, schema
from .routes import Reply, Request
from .schema import models as m
from .state import ApiError, State

ENTERPRISE_PREFIX = "/api/v3"  # GitHub Enterprise Server's API lives under it
RATE_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
JSON_MEDIA = ("application/vnd.github+json", "application/vnd.github.v3+json")  # the plain objects


@dataclass
class Call:
    """One request, as a test or a benchmark counts them. The token itself is never kept."""

    method: str
    path: str  # without the /api/v3 prefix and the query
    query: dict[str, list[str]]
    body: Any = None  # the request's JSON
    at: float = field(default_factory=time.time)
    status: int = 0  # 0 while it is being answered
    conditional: bool = False  # it carried If-None-Match or If-Modified-Since
    not_modified: bool = False  # ... and was answered 304
    token_ok: bool = False  # its Authorization header carried the forge's token
    billable: bool = False  # it counted against the rate limit
    prefixed: bool = False  # it was asked under /api/v3, as GitHub Enterprise Server is


class Forge(State):
    """The test owns it: every attribute below may be changed while the server runs."""

    def __init__(
        self,
        root: Path,
        token: str = "t0k",
        owner: str = "acme",
        repo: str = "shop",
        login: str = "hive-bot",
        enterprise: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(root, owner, repo, login)
        self.token = token
        self.enterprise = enterprise  # url ends in /api/v3 (both forms are answered either way)
        self.web = "https://github.test"  # where html_url points
        self.limit = 5000  # x-ratelimit-limit
        self.remaining = 5000  # x-ratelimit-remaining; 0: every billable call is refused (403)
        self.reset_at = int(time.time()) + 3600  # x-ratelimit-reset, epoch seconds; then remaining = limit
        self.log_host = "localhost"  # job logs are served from another host name, as GitHub's blob storage
        self.calls: list[Call] = []
        self.problems: list[str] = []
        self._secondary = (0, 0, 403)  # requests still refused, their retry-after, their status
        self._secret = secrets.token_bytes(16)
        self._host, self._port = host, port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---

    def start(self) -> Forge:
        if self._httpd is None:
            handler = type("Handler", (_Handler,), {"forge": self})
            self._httpd = _Server((self._host, self._port), handler)
            self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="forge", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> Forge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The API's base URL, as https://api.github.com (or https://HOST/api/v3): no trailing slash."""
        return f"http://127.0.0.1:{self.port}" + (ENTERPRISE_PREFIX if self.enterprise else "")

    @property
    def site(self) -> objects.Site:
        return objects.Site(self.url, self.web, self.owner, self.repo)

    # --- what tests read and set ---

    def secondary_limit(self, retry_after: int = 60, requests: int = 1, status: int = 403) -> None:
        """The next `requests` calls are refused as over a secondary rate limit (403 or 429)."""
        with self._lock:
            self._secondary = (requests, retry_after, status)

    @property
    def api_calls(self) -> int:
        """Calls that counted against the rate limit."""
        with self._lock:
            return sum(c.billable for c in self.calls)

    def calls_to(self, method: str, path: str) -> int:
        """How many calls were `method` to a path that `path` (a regex) matches whole."""
        with self._lock:
            return sum(c.method == method and re.fullmatch(path, c.path) is not None for c in self.calls)

    def check(self) -> None:
        with self._lock:
            if self.problems:
                raise AssertionError("the scripted forge saw problems:\n- " + "\n- ".join(self.problems))

    def problem(self, text: str) -> None:
        with self._lock:
            self.problems.append(text)

    def log_url(self, job_id: int) -> str:
        return f"http://{self.log_host}:{self.port}/_logs/{job_id}?sig={self._sign(job_id)}"

    def _sign(self, job_id: int) -> str:
        return hmac.new(self._secret, str(job_id).encode(), hashlib.sha256).hexdigest()[:32]

    # --- answering ---

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Reply:
        split = urlsplit(target)
        path = re.sub("/+", "/", split.path)
        prefixed = path == ENTERPRISE_PREFIX or path.startswith(ENTERPRISE_PREFIX + "/")
        if prefixed:
            path = path[len(ENTERPRISE_PREFIX) :] or "/"
        path = path.rstrip("/") or "/"
        query = parse_qs(split.query)
        if path.startswith("/_logs/"):
            return self._log_download(method, path, query, headers)
        call = Call(method, path, {k: v for k, v in query.items() if k != "access_token"})
        call.conditional = "if-none-match" in headers or "if-modified-since" in headers
        call.prefixed = prefixed
        with self._lock:
            self.calls.append(call)  # at once: a test can see a call that is still being answered
        reply = self._checked(call, self._api(call, headers, raw))
        reply.headers.update(self._rate_headers())
        reply.headers.setdefault("x-github-api-version-selected", schema.API_VERSION)
        reply.headers.setdefault("x-github-request-id", secrets.token_hex(8).upper())
        call.status = reply.status
        return reply

    def _checked(self, call: Call, reply: Reply) -> Reply:
        """The reply, if its body fits GitHub's description of it (errors too); else a 500."""
        wrong = schema.problems(reply.model, reply.body) if reply.model is not None else []
        if not wrong:
            return reply
        self.problem(f"{call.method} {call.path}: the answer ({reply.status}) is not GitHub's: {wrong}")
        return Reply(500, objects.error("the forge's answer does not fit GitHub's description", 500))

    def _api(self, call: Call, headers: dict[str, str], raw: bytes) -> Reply:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        call.token_ok = scheme.lower() in ("bearer", "token") and hmac.compare_digest(
            value.strip().encode(), self.token.encode()
        )
        if not call.token_ok:
            return Reply(401, objects.error("Bad credentials", 401), m.BasicError)
        refused = self._headers_refused(call, headers)
        if refused:
            return refused
        found = routes.find(call.method, call.path)
        refused = self._limited(billable=found is None or found[0].billable)
        if refused:
            return refused
        if found is None or not self._ours(found[1]):
            if found is None:
                self.problem(f"unknown call: {call.method} {call.path}")
            self._spend(call)  # a repository it does not know is GitHub's 404, and costs a call
            return Reply(404, objects.error("Not Found", 404), m.BasicError)
        route, params = found
        reply = self._routed(route, Request(call.method, call.path, call.query, None, params), call, raw)
        reply = self._conditional(call, headers, reply)
        if route.billable and not call.not_modified:
            self._spend(call)
        return reply

    def _headers_refused(self, call: Call, headers: dict[str, str]) -> Reply | None:
        """Problems with what the request asks for that GitHub would answer differently: another
        API version or media type than the one whose objects the forge serves; no User-Agent
        (GitHub refuses those)."""
        where = f"{call.method} {call.path}"
        version = headers.get("x-github-api-version")
        if version and version != schema.API_VERSION:
            self.problem(f"{where}: asked for API version {version}; the forge answers {schema.API_VERSION}")
        for media in headers.get("accept", "").split(","):
            media = media.split(";")[0].strip()
            if media.startswith("application/vnd.github") and media not in JSON_MEDIA:
                self.problem(f"{where}: asked for {media}; the forge answers {' or '.join(JSON_MEDIA)} only")
        if not headers.get("user-agent"):
            self.problem(f"{where}: no User-Agent header (GitHub refuses the request)")
            message = "Request forbidden by administrative rules. Please make sure your request has a User-Agent header"
            return Reply(403, objects.error(message, 403), m.BasicError)
        return None

    def _ours(self, params: dict[str, str]) -> bool:
        return params.get("owner", self.owner) == self.owner and params.get("repo", self.repo) == self.repo

    def _routed(self, route: routes.Route, req: Request, call: Call, raw: bytes) -> Reply:
        try:
            call.body = req.body = json.loads(raw) if raw else None
        except ValueError:
            self.problem(f"{call.method} {call.path}: the body is not JSON: {raw[:200]!r}")
            return Reply(500, objects.error("Problems parsing JSON", 500))
        if route.body is not None:
            wrong = schema.problems(route.body, req.body if req.body is not None else {})
            if wrong:
                self.problem(f"{call.method} {call.path}: the request body is not GitHub's: {wrong}")
                return Reply(500, objects.error("the request body does not fit GitHub's description", 500))
        try:
            with self._lock:
                return route.handler(self, req)
        except ApiError as exc:
            model = m.BasicError if exc.errors is None else _error_model(exc.errors)
            return Reply(exc.status, objects.error(exc.message, exc.status, route.docs, exc.errors), model)
        except Exception:  # noqa: BLE001 (not swallowed: a bug of the forge's own is a problem that fails the test)
            self.problem(f"{call.method} {call.path}: the forge failed:\n{traceback.format_exc()}")
            return Reply(500, objects.error("the forge failed", 500))

    def _limited(self, billable: bool) -> Reply | None:
        """A refusal for the primary or a secondary rate limit, or None. GET /rate_limit is
        answered even at 0 remaining."""
        with self._lock:
            if time.time() >= self.reset_at:  # a new window
                self.remaining, self.reset_at = self.limit, int(time.time()) + 3600
            left, retry_after, status = self._secondary
            if left > 0:
                self._secondary = (left - 1, retry_after, status)
                request_id = secrets.token_hex(4).upper()
                message = (
                    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
                    f"If you reach out to GitHub Support for help, please include the request ID {request_id}."
                )
                body = objects.error(message, status, f"{RATE_DOCS}#about-secondary-rate-limits")
                return Reply(status, body, m.BasicError, {"retry-after": str(retry_after)})
            if billable and self.remaining <= 0:
                message = f"API rate limit exceeded for user ID {self.user_id(self.login)}."
                return Reply(403, objects.error(message, 403, RATE_DOCS), m.BasicError)
        return None

    def _spend(self, call: Call) -> None:
        with self._lock:
            call.billable = True
            self.remaining = max(0, self.remaining - 1)

    def _rate_headers(self) -> dict[str, str]:
        with self._lock:
            return {
                "x-ratelimit-limit": str(self.limit),
                "x-ratelimit-remaining": str(self.remaining),
                "x-ratelimit-reset": str(self.reset_at),
                "x-ratelimit-used": str(self.limit - self.remaining),
                "x-ratelimit-resource": "core",
            }

    def _conditional(self, call: Call, headers: dict[str, str], reply: Reply) -> Reply:
        """GET answers carry a weak ETag of their body; asking with it again gets 304 and no body."""
        if call.method != "GET" or reply.status != 200 or isinstance(reply.body, str):
            return reply
        etag = 'W/"' + hashlib.sha256(json.dumps(reply.body, sort_keys=True).encode()).hexdigest()[:40] + '"'
        reply.headers["etag"] = etag
        offered = [t.strip() for t in headers.get("if-none-match", "").split(",")]
        if etag in offered or f'"{etag[3:-1]}"' in offered:
            call.not_modified = True
            return Reply(304, None, None, {"etag": etag})
        return reply

    def _log_download(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str]) -> Reply:
        """The signed log URL a job's /logs redirects to: no token needed, and none may be sent
        (it is another host on GitHub: a client that forwards its token leaks it)."""
        call = Call(method, path, {"sig": ["..."]} if "sig" in query else {})
        with self._lock:
            self.calls.append(call)
        if "authorization" in headers:
            self.problem(f"{method} {path}: the API token was sent to the log download URL (another host on GitHub)")
        job_id = path.rsplit("/", 1)[1]
        sig = (query.get("sig") or [""])[0]
        with self._lock:
            check = self.checks.get(int(job_id)) if job_id.isdigit() else None
            if method != "GET" or check is None or not hmac.compare_digest(sig.encode(), self._sign(check.id).encode()):
                call.status = 403
                return Reply(403, "AuthenticationFailed: Server failed to authenticate the request.")
            call.status = 200
            return Reply(200, objects.job_log(check))


def _error_model(errors: list[Any]) -> Any:
    return m.ValidationErrorSimple if all(isinstance(e, str) for e in errors) else m.ValidationError


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-answer is no error of ours."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    forge: Forge
    protocol_version = "HTTP/1.1"
    server_version = "scripted-forge/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _serve(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = self.forge.answer(self.command, self.path, headers, raw)
        if reply.body is None:
            data, kind = b"", None
        elif isinstance(reply.body, str):
            data, kind = reply.body.encode(), "text/plain; charset=utf-8"
        else:
            data, kind = json.dumps(reply.body).encode(), "application/json; charset=utf-8"
        self.send_response(reply.status)
        if kind:
            self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve
