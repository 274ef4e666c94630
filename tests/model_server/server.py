"""A scripted stand-in for the Anthropic, OpenAI and Gemini model APIs, on 127.0.0.1.

    with ModelServer(api_key="test-key") as server:
        env = {"ANTHROPIC_BASE_URL": server.url, ...}
        server.rate_limited_until = time.time() + 30   # configurable while it runs

See `script.py` for what the model does, `apis.py` for the wire formats.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .apis import API_BY_NAME, INPUT_TOKENS, Api, Response

SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization", "cookie"}
GEMINI_PATH = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:]+):(\w+)$")


@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names, without secrets
    body: Any  # parsed JSON, else the raw text, else None
    api: str = ""  # anthropic, responses, chat, gemini, or "" for other paths
    main: bool = False  # the main conversation (not a title, router or commit-message request)
    key_in: list[str] = field(default_factory=list)  # where it carried an API key (not the key)
    status: int = 0  # 0 while it is being answered
    at: float = field(default_factory=time.time)


class ModelServer:
    """The test owns it: every attribute below may be changed while the server runs."""

    def __init__(self, api_key: str | None = None, host: str = "127.0.0.1", port: int = 0) -> None:
        self.api_key = api_key  # None: any key (or none) is accepted
        self.rate_limited_until = 0.0  # epoch seconds: main requests before then get 429
        self.rate_limit_requests = 0  # or: this many more main requests get 429 ...
        self.rate_limit_retry_after = 1  # ... announcing this many seconds
        self.rate_limit_message: str | None = None  # the 429 body's message, instead of the API's usual one
        self.rate_limit_headers: dict[str, str] = {}  # extra headers on a 429
        self.overloaded = False  # Anthropic 529 overloaded_error, 503 for the others
        self.reply_delay = 0.0  # seconds before each main-conversation answer
        # Gemini's real answer to a bad key is 400 INVALID_ARGUMENT (reason API_KEY_INVALID);
        # 401 gives 401 UNAUTHENTICATED instead
        self.gemini_auth_code = 400
        # Gemini's 429 carries a google.rpc.RetryInfo detail (retryDelay: the seconds left),
        # as the real API's does; gemini-cli then gives up at once on a long delay
        # (TerminalQuotaError, exit 173) and waits at least 5 s on a short one
        self.gemini_retry_info = True
        self.requests: list[LoggedRequest] = []
        self._lock = threading.Lock()
        self._host, self._port = host, port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---

    def start(self) -> ModelServer:
        if self._httpd is not None:
            return self
        handler = type("Handler", (_Handler,), {"model_server": self})
        self._httpd = _Server((self._host, self._port), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="model-server", daemon=True)
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

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL, without a path (Anthropic's and Gemini's SDKs add theirs)."""
        return f"http://127.0.0.1:{self.port}"

    # --- the log ---

    def log(self, api: str | None = None, main: bool | None = None) -> list[LoggedRequest]:
        with self._lock:
            return [r for r in self.requests if (api is None or r.api == api) and (main is None or r.main == main)]

    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def _record(self, req: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(req)

    # --- deciding ---

    @staticmethod
    def offered_keys(headers: dict[str, str], query: dict[str, list[str]]) -> dict[str, str]:
        """Where the request carries an API key ("x-api-key", "authorization: bearer",
        "x-goog-api-key", "api-key", "?key=") -> the key."""
        offered: dict[str, str] = {n: headers[n] for n in ("x-api-key", "x-goog-api-key", "api-key") if n in headers}
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            offered["authorization: bearer"] = auth[7:].strip()
        if query.get("key"):
            offered["?key="] = query["key"][0]
        return offered

    def _key_ok(self, offered: dict[str, str]) -> bool:
        return self.api_key is None or self.api_key in offered.values()

    def auth_error(self, api: Api) -> Response:
        return api.error("auth-401" if api.name == "gemini" and self.gemini_auth_code == 401 else "auth")

    def respond(self, api: Api, body: Any, stream: bool, req: LoggedRequest, key_ok: bool) -> Response:
        if not key_ok:
            return self.auth_error(api)
        if not isinstance(body, dict):
            return api.error("not_found", "the request body is not a JSON object")
        conv = api.conversation(body)
        req.main = api.is_main(body, conv)
        if req.main:
            if self.overloaded:
                return api.error("overloaded")
            left = self.rate_limited_until - time.time()
            with self._lock:
                counted = self.rate_limit_requests > 0
                if counted:
                    self.rate_limit_requests -= 1
            if left > 0 or counted:
                seconds = max(1, math.ceil(left)) if left > 0 else self.rate_limit_retry_after
                announce = seconds if api.name != "gemini" or self.gemini_retry_info else None
                resp = api.error("rate_limit", self.rate_limit_message, announce)
                resp.headers = {"retry-after": str(seconds), **self.rate_limit_headers}
                return resp
            if self.reply_delay > 0:
                time.sleep(self.reply_delay)
        return api.answer(body, conv, req.main, stream)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a CLI killed mid-request) is no error of ours."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    model_server: ModelServer
    protocol_version = "HTTP/1.1"
    server_version = "scripted-model/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("content-length") or 0))
        encoding = self.headers.get("content-encoding", "").lower()
        if encoding == "gzip":
            data = gzip.decompress(data)
        elif encoding == "deflate":
            data = zlib.decompress(data)
        return data

    def do_HEAD(self) -> None:  # Claude Code's connectivity check
        split = urlsplit(self.path)
        self.model_server._record(
            LoggedRequest("HEAD", split.path, parse_qs(split.query), self._safe_headers(), None, status=200)
        )
        self._empty(200)

    def do_GET(self) -> None:
        split = urlsplit(self.path)
        self.model_server._record(
            LoggedRequest("GET", split.path, parse_qs(split.query), self._safe_headers(), None, status=200)
        )
        if split.path in ("", "/"):
            self._empty(200)
        else:
            self._send(Response(status=404, json={"error": {"message": f"no GET {split.path}"}}))

    def _empty(self, status: int) -> None:
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def _safe_headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items() if k.lower() not in SECRET_HEADERS}

    def do_POST(self) -> None:
        server = self.model_server
        split = urlsplit(self.path)
        query = parse_qs(split.query)
        raw = self._read_body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        safe_query = {k: v for k, v in query.items() if k != "key"}
        req = LoggedRequest("POST", split.path, safe_query, self._safe_headers(), body)
        server._record(req)  # at once: a test can see a request that is still being answered (status 0)
        offered = server.offered_keys(headers, query)
        req.key_in = sorted(offered)
        key_ok = server._key_ok(offered)
        path = split.path.rstrip("/")
        stream = isinstance(body, dict) and bool(body.get("stream"))
        api: Api | None = None
        resp: Response | None = None
        if path.endswith("/v1/messages/count_tokens"):
            req.api = "anthropic"
            resp = (
                Response(json={"input_tokens": INPUT_TOKENS}) if key_ok else server.auth_error(API_BY_NAME["anthropic"])
            )
        elif path.endswith("/v1/messages"):
            api = API_BY_NAME["anthropic"]
        elif path.endswith("/responses"):
            api = API_BY_NAME["responses"]
        elif path.endswith("/chat/completions"):
            api = API_BY_NAME["chat"]
        elif m := GEMINI_PATH.search(path):
            api = API_BY_NAME["gemini"]
            if isinstance(body, dict):
                body.setdefault("model", m.group(1))
            stream = m.group(2) == "streamGenerateContent"
            if m.group(2) == "countTokens":
                req.api, api = "gemini", None
                resp = (
                    Response(json={"totalTokens": INPUT_TOKENS}) if key_ok else server.auth_error(API_BY_NAME["gemini"])
                )
            elif m.group(2) not in ("generateContent", "streamGenerateContent"):
                req.api, api = "gemini", None
                resp = API_BY_NAME["gemini"].error("not_found", f"no such method: {m.group(2)}")
        if api is not None:
            req.api = api.name
            resp = server.respond(api, body, stream, req, key_ok)
        if resp is None:
            resp = Response(status=404, json={"error": {"message": f"no such endpoint: POST {split.path}"}})
        req.status = resp.status
        self._send(resp)

    def _send(self, resp: Response) -> None:
        if resp.events is None:
            data = json.dumps(resp.json).encode()
            self.send_response(resp.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in resp.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(resp.status)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for k, v in resp.headers.items():
            self.send_header(k, v)
        self.end_headers()
        for name, data in resp.events:
            text = data if isinstance(data, str) else json.dumps(data)
            chunk = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
            self._chunk(chunk.encode())
        self._chunk(b"")
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
