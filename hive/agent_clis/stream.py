"""What an agent's output says, read as it streams: usage, and trouble that ends
the attempt early (a permanent failure, a rate limit, an unreachable API).

Headless CLIs print JSON events; file contents and tool results travel inside those
events, so nothing here matches text against the whole stream — each reader looks
only at the fields that carry the CLI's own errors, retries and usage.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hive.agent_clis.patterns import LazyPattern
from hive.output import shown_line as clean

MAX_REASON = 300  # characters of the CLI's own message kept in a reason
LOGIN_FIX = "check its credentials"  # a rejected login, from a CLI whose reader does not say how to log in


ALL = frozenset({400, 401, 403, 404, 429, 500, 502, 503, 529})  # the HTTP statuses the CLIs' errors name
_STATUS = LazyPattern(r"(?<!\d)([45]\d\d)(?!\d)")


def status_in(text: str, codes: frozenset[int] = ALL) -> int | None:
    """The first of `codes` that a CLI's error text names as a number of its own."""
    return next((int(m) for m in _STATUS.findall(text) if int(m) in codes), None)


class TroubleKind(StrEnum):
    PERMANENT = "permanent"  # retrying cannot help: say what to fix
    RATE_LIMIT = "rate_limit"  # wait until resume_at, then go on
    TRANSIENT = "transient"  # this attempt is lost; the next may work
    BUDGET = "budget"  # the CLI stopped at the task's budget


@dataclass(frozen=True)
class Trouble:
    kind: TroubleKind
    reason: str  # one readable line, with the fix
    resume_at: float = 0.0  # rate limits: when the CLI said it resets (0 = not said)


@dataclass
class Usage:
    tokens_in: int = 0
    tokens_out: int = 0
    cli_cost_usd: float | None = None  # the CLI's own total for the attempt, when it printed one
    model: str = ""
    by_model: dict[str, tuple[int, int]] = field(default_factory=dict)  # when the CLI splits it by model


@dataclass
class StreamReader:
    """Feed it the agent's output as it arrives; read `usage` and `trouble`."""

    cli: str = "agent"
    login_fix: str = LOGIN_FIX  # how to log this CLI in: said with a rejected key or login
    usage: Usage = field(default_factory=Usage)
    trouble: Trouble | None = None
    _partial: str = ""

    def feed(self, chunk: str) -> None:
        text = self._partial + chunk
        lines = text.split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._line(clean(line))

    def close(self) -> None:
        """The agent ended: read what is left without a newline."""
        if self._partial:
            self._line(clean(self._partial))
            self._partial = ""

    def _line(self, line: str) -> None:
        if not line.strip():
            return
        event = json_event(line)
        if event is not None:
            self.event(event)
        else:
            self.text(line)

    def event(self, event: dict[str, Any]) -> None:
        """One JSON event (CLIs with a JSON stream override this)."""

    def text(self, line: str) -> None:
        """One line of plain text (the CLI's own error messages outside the JSON stream)."""
        trouble = self.classified(line, None, plain=True)
        if trouble is not None:
            self.found(trouble)

    def found(self, trouble: Trouble) -> None:
        # the first permanent or rate-limit finding stands; a later one does not replace it
        if self.trouble is None or (
            self.trouble.kind == TroubleKind.TRANSIENT and trouble.kind != TroubleKind.TRANSIENT
        ):
            self.trouble = trouble

    def reported(self, message: str, final: bool, status: int | None = None, codes: frozenset[int] = ALL) -> None:
        """An error the CLI reported: its class; else, if it ended the turn, a transient one."""
        trouble = self.classified(message, status or status_in(message, codes))
        if trouble is None and final:
            trouble = Trouble(TroubleKind.TRANSIENT, f"{self.cli}: {one_line(message)}")
        if trouble is not None:
            self.found(trouble)

    def classified(self, message: str, status: int | None, *, plain: bool = False) -> Trouble | None:
        """`classify`, as this CLI's error: with its name and its own login fix."""
        return classify(message, status, self.cli, plain=plain, login_fix=self.login_fix)

    def progress(self) -> None:
        """The model answered: a passing network problem is over."""
        if self.trouble is not None and self.trouble.kind == TroubleKind.TRANSIENT:
            self.trouble = None

    def add_usage(self, tokens_in: int = 0, tokens_out: int = 0, model: str = "") -> None:
        self.usage.tokens_in += max(int(tokens_in or 0), 0)
        self.usage.tokens_out += max(int(tokens_out or 0), 0)
        if model:
            self.usage.model = model


def json_event(line: str) -> dict[str, Any] | None:
    line = line.strip()
    if not (line.startswith("{") and line.endswith("}")):  # an event is a whole line; text may quote JSON
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def one_line(text: str, limit: int = MAX_REASON) -> str:
    """The message in one line: an API error's own message when the text quotes one."""
    text = " ".join(clean(str(text)).split())
    quoted = _api_message(text)
    if quoted:
        text = quoted
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _api_message(text: str) -> str:
    """The `message` of an API error object quoted in a line ({"error": {"message": ...}})."""
    start = text.find('{"error"')
    if start < 0:
        return ""
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return ""
    error = value.get("error") if isinstance(value, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        return ""
    code = error.get("code") or error.get("status") if isinstance(error, dict) else None
    return f"{code}: {message}" if code else message


_AUTH = LazyPattern(
    r"invalid[ _-]?(x-)?api[ _-]?key|authentication_error|incorrect api key|api key not valid|unauthenticated"
    r"|not logged in|please run /login|invalid auth|permission_denied|\b401\b.*unauthori[sz]ed|unauthori[sz]ed"
    r"|missing environment variable",
    re.IGNORECASE,
)
_ROOT = LazyPattern(r"cannot be used with root/sudo privileges", re.IGNORECASE)
_MODEL = LazyPattern(
    r"model[^.]{0,60}(not found|does not exist|not supported|is not available|invalid)|model_not_found"
    r"|invalid model|unknown model",
    re.IGNORECASE,
)
_FLAGS = LazyPattern(r"unknown option|unexpected argument|unrecognized (option|argument)|invalid option", re.IGNORECASE)
_LIMIT = LazyPattern(
    r"rate[ _-]?limit|too many requests|resource_exhausted|usage limit|quota|overloaded|\b429\b|\b529\b",
    re.IGNORECASE,
)
_UNREACHABLE = LazyPattern(
    r"reconnecting|econnrefused|enotfound|connection refused|failed to connect|error sending request"
    r"|stream disconnected|network error|fetch failed|connection error|unable to connect|timed out",
    re.IGNORECASE,
)


def classify(
    message: str, status: int | None, cli: str, *, plain: bool = False, login_fix: str = LOGIN_FIX
) -> Trouble | None:
    """What an error the CLI reported means for the attempt. `plain`: a line of the
    CLI's plain-text output, where only unmistakable messages count (ordinary output
    may mention any of these words). `login_fix`: how to log this CLI in."""
    text = one_line(message)
    where = f"{cli}: {text}"
    if status in (401, 403) or (not plain and _AUTH.search(text)) or (plain and _PLAIN_AUTH.search(text)):
        return Trouble(
            TroubleKind.PERMANENT,
            f"not logged in or the API key is invalid ({where}); {login_fix}, then `hive retry` (`hive doctor` checks)",
        )
    if _ROOT.search(text):
        return Trouble(
            TroubleKind.PERMANENT,
            f"it refuses to run as root ({where}); run Hive as a normal user, or export IS_SANDBOX=1 "
            f"inside a sandbox, then `hive retry`",
        )
    if status == 429 or status == 529 or (not plain and _LIMIT.search(text)) or (plain and _PLAIN_LIMIT.search(text)):
        return Trouble(TroubleKind.RATE_LIMIT, f"rate limited ({where})", resume_at=reset_time(text))
    if (status == 404 or not plain) and _MODEL.search(text):
        return Trouble(TroubleKind.PERMANENT, f"the model is not available ({where}); set another model in its profile")
    if status == 400 and not plain:
        return Trouble(TroubleKind.PERMANENT, f"the API rejected the request ({where}); check the profile's flags")
    if _FLAGS.search(text) and (not plain or text.lower().startswith(("error", "usage"))):
        return Trouble(
            TroubleKind.PERMANENT, f"the command line was rejected ({where}); fix the profile's command in config"
        )
    if not plain and (status is None or status >= 500) and _UNREACHABLE.search(text):
        return Trouble(TroubleKind.TRANSIENT, f"the model API is unreachable ({where})")
    return None


# Plain-text output is anything the agent printed, a task's own files included:
# only the CLIs' exact error sentences count there.
_PLAIN_AUTH = LazyPattern(
    r"^(error:?\s*)?(invalid api key|not logged in · please run /login)|^error: .*\b401\b"
    r"|AuthenticationError|Incorrect API key provided",
    re.IGNORECASE,
)
_PLAIN_LIMIT = LazyPattern(r"^(error:?\s*)?.*usage limit reached|RateLimitError|^error: .*\b429\b", re.IGNORECASE)


_EPOCH = LazyPattern(r"\|(\d{10})\b")
_RESETS_IN = LazyPattern(
    r"(?:try again|resets?|retry) in (\d+(?:\.\d+)?)\s*(s|sec|seconds?|m|min|minutes?|h|hours?)\b", re.IGNORECASE
)
_RESETS_AT = LazyPattern(r"resets? at (\d{1,2})(?::(\d{2}))?\s*(am|pm)?", re.IGNORECASE)


def reset_time(text: str, now: float | None = None) -> float:
    """When a rate-limit message says the limit resets (epoch seconds), or 0."""
    now = time.time() if now is None else now
    m = _EPOCH.search(text)
    if m:
        return float(m.group(1))
    m = _RESETS_IN.search(text)
    if m:
        unit = m.group(2)[0].lower()
        return now + float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[unit]
    m = _RESETS_AT.search(text)
    if m:
        hour, minute = int(m.group(1)) % 12 if m.group(3) else int(m.group(1)), int(m.group(2) or 0)
        if (m.group(3) or "").lower() == "pm":
            hour += 12
        local = time.localtime(now)
        at = time.mktime((*local[:3], hour, minute, 0, 0, 0, -1))
        return at if at > now else at + 86400
    return 0.0
