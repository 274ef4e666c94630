"""Talking to a forge's REST API: JSON over HTTPS with the user's token, as GitHub asks to be
talked to — every GET conditional on what was last seen (its ETag: a `304 Not Modified` costs
nothing of the rate limit, and its body is the one kept), the rate limit read from every answer
and shared by every process of a run, a secondary limit's `retry-after` and an exhausted hour
waited out, never pressed against. The standard library's HTTP client: a handful of calls does
not need a framework, and Hive's other commands pay nothing for it.

The token never leaves this module's requests: not in an error, an event, a log or a file (a
redirect elsewhere — a job's log, on a storage host — is followed without it)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import http.client
import json
import re
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive import __version__
from hive.errors import HiveError
from hive.store.files import atomic_write, locked

API_VERSION = "2026-03-10"  # the REST API version whose objects Hive reads
TIMEOUT = 30.0
HEADROOM = 0.2  # of the hour's budget left for the user's own tools: below it, Hive waits for the reset
MOST_PAGES = 20  # a listing longer than this many pages of 100 is cut (a PR's comments, say)
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


class ForgeError(HiveError):
    """The forge refused or failed a request; the message says which and why (never the token)."""

    def __init__(self, message: str, status: int = 0, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class RateLimited(ForgeError):
    """The forge's rate limit (or Hive's headroom below it) says to wait until `until`."""

    def __init__(self, until: float, why: str) -> None:
        super().__init__(f"{why}; waiting until {time.strftime('%H:%M', time.localtime(until))}")
        self.until = until


@dataclass(frozen=True)
class Response:
    status: int
    body: Any
    headers: Mapping[str, str]
    changed: bool = True  # False: 304, the body is the one kept from before


@dataclass(frozen=True)
class Budget:
    """The rate limit as the latest answer told it (shared by every process of a run)."""

    limit: int = 5000
    remaining: int = 5000
    reset: float = 0.0
    paused_until: float = 0.0  # a secondary limit's retry-after, or the hour spent

    @property
    def low(self) -> bool:
        return self.remaining < self.limit * HEADROOM

    def poll_factor(self) -> float:
        """How much slower to poll: 1 with half the hour's budget left, then more as it falls."""
        share = self.remaining / self.limit if self.limit else 1.0
        return 1.0 if share >= 0.5 else 1.0 + (0.5 - share) * 8


class Client:
    """One forge API, as the user's token reaches it. `state`: where the kept answers and the
    shared budget live (`.hive/forge/`)."""

    def __init__(self, api_url: str, token: str, state: Path) -> None:
        parts = urllib.parse.urlsplit(api_url.rstrip("/"))
        self.scheme, self.host, self.prefix = parts.scheme, parts.netloc, parts.path
        self.token = token
        self.state = state
        self._memo: dict[str, Response] | None = None  # within one look: each GET asked once

    @contextlib.contextmanager
    def one_look(self) -> Iterator[None]:
        """Within it, a GET asked again is answered from the first answer, without a request:
        one look at a PR reads each thing once, however many questions ask for it."""
        self._memo = {}
        try:
            yield
        finally:
            self._memo = None

    # --- the one way a request goes ------------------------------------------------------------

    def get(self, path: str, params: Mapping[str, Any] | None = None, conditional: bool = True) -> Response:
        return self.request("GET", path, params=params, conditional=conditional)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        conditional: bool = False,
    ) -> Response:
        budget = self.budget()
        now = time.time()
        if budget.paused_until > now:
            raise RateLimited(budget.paused_until, "the forge's rate limit")
        if budget.low and budget.reset > now:
            raise RateLimited(budget.reset, f"the forge's rate limit is nearly spent ({budget.remaining} left)")
        url = self.prefix + path + (f"?{urllib.parse.urlencode(params)}" if params else "")
        if method == "GET" and self._memo is not None and url in self._memo:
            return self._memo[url]
        kept = self._kept(url) if conditional and method == "GET" else None
        headers = self._headers(body is not None)
        if kept is not None:
            headers["If-None-Match"] = kept["etag"]
        status, answer, raw = self._send(method, url, headers, body)
        self._note_budget(status, answer)
        if status == 304 and kept is not None:
            return self._remember(method, url, Response(200, kept["body"], answer, changed=False))
        data = _json(raw)
        if status >= 400:
            raise self._refusal(method, path, status, data, answer)
        if conditional and method == "GET" and answer.get("etag"):
            self._keep(url, answer["etag"], data)
        return self._remember(method, url, Response(status, data, answer))

    def _remember(self, method: str, url: str, response: Response) -> Response:
        if method == "GET" and self._memo is not None:
            self._memo[url] = response
        return response

    def pages(self, path: str, params: Mapping[str, Any] | None = None) -> list[Any]:
        """Every item of a listing, page by page (conditional: an unchanged first page, 304, keeps
        the last answer's items)."""
        items: list[Any] = []
        query = {"per_page": 100, **(params or {})}
        response = self.get(path, query)
        for _ in range(MOST_PAGES):
            items += response.body if isinstance(response.body, list) else []
            found = _NEXT.search(response.headers.get("link", ""))
            if not found:
                break
            nxt = urllib.parse.urlsplit(found.group(1))
            response = self.get(nxt.path.removeprefix(self.prefix), dict(urllib.parse.parse_qsl(nxt.query)))
        return items

    def text_elsewhere(self, path: str) -> str:
        """A text the API answers with a redirect to another host (an Actions job's log): the
        redirect followed without the token, which is for the API alone."""
        status, answer, raw = self._send("GET", self.prefix + path, self._headers(False), None)
        self._note_budget(status, answer)
        if status in (301, 302, 303, 307, 308) and answer.get("location"):
            return _fetch_plain(answer["location"])
        if status >= 400:
            raise self._refusal("GET", path, status, _json(raw), answer)
        return raw.decode(errors="replace")

    # --- the budget, shared through a file ---------------------------------------------------

    def budget(self) -> Budget:
        try:
            data = json.loads((self.state / "budget.json").read_text())
            return Budget(**{k: data[k] for k in ("limit", "remaining", "reset", "paused_until") if k in data})
        except (OSError, ValueError, TypeError):
            return Budget()

    def _note_budget(self, status: int, headers: Mapping[str, str]) -> None:
        if "x-ratelimit-remaining" not in headers and status not in (403, 429):
            return
        with locked(self.state / "budget.lock"):
            old = self.budget()
            limit = _int(headers.get("x-ratelimit-limit"), old.limit)
            remaining = _int(headers.get("x-ratelimit-remaining"), old.remaining)
            reset = float(_int(headers.get("x-ratelimit-reset"), int(old.reset)))
            paused = old.paused_until
            if status in (403, 429) and (headers.get("retry-after") or remaining == 0):
                wait = _int(headers.get("retry-after"), 0)
                paused = max(paused, time.time() + wait if wait else reset or time.time() + 60)
            new = Budget(limit, remaining, reset, paused)
            if new != old:  # a 304 leaves it as it was: no write on most polls
                atomic_write(self.state / "budget.json", json.dumps(dataclasses.asdict(new)), durable=False)

    # --- the wire ------------------------------------------------------------------------------

    def _headers(self, has_body: bool) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"hive-agents/{__version__}",
            "Authorization": f"Bearer {self.token}",
        }
        if has_body:
            headers["Content-Type"] = "application/json"
        return headers

    def _send(self, method: str, url: str, headers: dict[str, str], body: Any) -> tuple[int, dict[str, str], bytes]:
        conn_type = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        conn = conn_type(self.host, timeout=TIMEOUT)
        try:
            conn.request(method, url, body=None if body is None else json.dumps(body).encode(), headers=headers)
            reply = conn.getresponse()
            raw = reply.read()
            return reply.status, {k.lower(): v for k, v in reply.getheaders()}, raw
        except (OSError, http.client.HTTPException) as e:
            raise ForgeError(f"cannot reach the forge at {self.scheme}://{self.host}: {self.redact(str(e))}") from None
        finally:
            conn.close()

    def _refusal(self, method: str, path: str, status: int, data: Any, headers: Mapping[str, str]) -> ForgeError:
        message = data.get("message", "") if isinstance(data, dict) else ""
        errors = data.get("errors") if isinstance(data, dict) else None
        if isinstance(errors, list):
            message += "".join(f"; {e.get('message') or e.get('code')}" for e in errors if isinstance(e, dict))
        if status in (403, 429) and (headers.get("retry-after") or headers.get("x-ratelimit-remaining") == "0"):
            return RateLimited(self.budget().paused_until, f"the forge's rate limit ({self.redact(message)})")
        return ForgeError(f"{method} {path}: {status} {self.redact(message) or 'no reason given'}", status, data)

    def redact(self, text: str) -> str:
        return text.replace(self.token, "[token]") if self.token else text

    def _kept(self, url: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self._cache(url).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and "etag" in data else None

    def _keep(self, url: str, etag: str, body: Any) -> None:
        atomic_write(self._cache(url), json.dumps({"etag": etag, "body": body}), durable=False)

    def _cache(self, url: str) -> Path:
        return self.state / "etags" / f"{hashlib.sha256(url.encode()).hexdigest()[:32]}.json"


def _fetch_plain(url: str) -> str:
    """A URL outside the API (no token), its text."""
    parts = urllib.parse.urlsplit(url)
    conn_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = conn_type(parts.netloc, timeout=TIMEOUT)
    try:
        conn.request("GET", parts.path + (f"?{parts.query}" if parts.query else ""), headers={"User-Agent": "hive"})
        reply = conn.getresponse()
        return reply.read().decode(errors="replace") if reply.status == 200 else ""
    except (OSError, http.client.HTTPException):
        return ""
    finally:
        conn.close()


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")


def _int(value: str | None, default: int) -> int:
    try:
        return int(float(value)) if value is not None else default
    except ValueError:
        return default
