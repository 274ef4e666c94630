"""Gemini CLI (`gemini`): its profile; the reader of its `--output-format stream-json`
events (`error` events, the final `result` with its status and token stats) and of the
plain lines it prints on stderr about its API calls ("Attempt 2 failed with status 429.
Retrying with backoff...", "API key not valid", "you must specify the GEMINI_API_KEY
environment variable"); where its login or key is, and the auth type it needs selected."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hive.agent_clis.base import AgentCli, Reach
from hive.agent_clis.context import AgentContext, first_set, load_json, table
from hive.agent_clis.patterns import LazyPattern
from hive.agent_clis.profile import PROMPT, AgentProfile
from hive.agent_clis.stream import ALL, StreamReader, Trouble, TroubleKind, one_line
from hive.checks import Check, fail, ok, shown

PROFILES = (
    AgentProfile(
        "gemini",
        ("gemini", "--approval-mode=yolo", "--output-format", "stream-json", "--prompt", PROMPT),
        context_file="GEMINI.md",
        mode="headless",
        stream="gemini",
        state_paths=("~/.gemini/",),
        linger=15.0,  # its token stats come with the final `result` event
        # an untrusted folder makes gemini exit (or silently leave yolo mode)
        env=(("GEMINI_CLI_TRUST_WORKSPACE", "true"),),
    ),
)


class GeminiReader(StreamReader):
    def __init__(self) -> None:
        super().__init__(cli="gemini", login_fix="set GEMINI_API_KEY or run `gemini` once and log in")

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "init":
            self.usage.model = str(event.get("model") or self.usage.model)
        elif kind in ("message", "tool_use", "tool_result"):
            if event.get("role") != "user":
                self.progress()
        elif kind == "error":
            self.reported(str(event.get("message") or ""), event.get("severity") != "warning", codes=_CODES)
        elif kind == "result":
            stats = event.get("stats") if isinstance(event.get("stats"), dict) else {}
            assert isinstance(stats, dict)
            self.usage.tokens_in = max(self.usage.tokens_in, int(stats.get("input_tokens") or 0))
            self.usage.tokens_out = max(self.usage.tokens_out, int(stats.get("output_tokens") or 0))
            models = stats.get("models")
            if isinstance(models, dict):  # "auto" routes between models: each is priced as itself
                self.usage.by_model = {
                    str(name): (int(m.get("input_tokens") or 0), int(m.get("output_tokens") or 0))
                    for name, m in models.items()
                    if isinstance(m, dict)
                }
            if event.get("status") == "error":
                error = event.get("error") if isinstance(event.get("error"), dict) else {}
                assert isinstance(error, dict)
                self.reported(str(error.get("message") or error or "error"), True, codes=_CODES)

    def text(self, line: str) -> None:
        line = _REPORT.sub("", line)
        m = _ATTEMPT.match(line)
        if m:
            number = int(m.group(1))
            status = int(m.group(2) or 0) or (429 if _QUOTA.search(line) else 0)
            if status in (429, 503) and number < _PATIENT_ATTEMPTS:
                return  # the CLI backs off and tries again by itself
            if status:
                self.reported(line, True, status)
            else:
                self.found(Trouble(TroubleKind.TRANSIENT, f"the model API is unreachable (gemini: {one_line(line)})"))
            return
        m = _WAITS.search(line)
        if m and float(m.group(1)) >= _LONG_WAIT_MS:
            self.reported(f"rate limited: {line}", True, 429)
            return
        if _AUTH.search(line):
            self.found(self.classified(line, 401) or Trouble(TroubleKind.PERMANENT, one_line(line)))
        elif _QUOTA.search(line):
            self.reported(line, True, 429)
        else:
            super().text(line)


_CODES = ALL - {502, 529}  # what the Gemini API answers with
_ATTEMPT = LazyPattern(r"^Attempt (\d+) failed(?: with status (\d+))?[.:]")
_PATIENT_ATTEMPTS = 2  # rate-limited this many times in a row: pause instead of waiting inside the CLI
_REPORT = LazyPattern(r"\s*Full report available at: \S+")  # a temp file: noise in a reason
_WAITS = LazyPattern(r"Retrying after (\d+)ms")
_LONG_WAIT_MS = 60_000
_AUTH = LazyPattern(
    r"API key not valid|you must specify the GEMINI_API_KEY|Invalid auth method selected|API_KEY_INVALID"
)
_QUOTA = LazyPattern(
    r"RetryableQuotaError|TerminalQuotaError|Max attempts reached|Quota exceeded|Resource has been exhausted"
)


# --- what the doctor checks ---------------------------------------------------------------------

VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI")


def credentials(ctx: AgentContext) -> list[Check]:
    name, profile = f"[{ctx.profile.name}] credentials", ctx.profile.name
    oauth = ctx.home / ".gemini" / "oauth_creds.json"
    if var := first_set(ctx, VARS):
        found = ok(name, f"{var} is set ({ctx.where(var)})", profile)
    elif oauth.is_file():
        found = ok(name, f"logged in with Google ({shown(oauth, ctx.home)})", profile)
    else:
        found = fail(
            name,
            f"none found: {', '.join(VARS)} not set, no {shown(oauth, ctx.home)}",
            f"export GEMINI_API_KEY (or set it in {ctx.section()} env), or log in once with `gemini`",
            profile,
        )
    return [found, auth_type(ctx)]


# What each selectable auth type needs, checked where it is cheap to tell.
_AUTH_TYPE_NEEDS: dict[str, Callable[[AgentContext], str]] = {
    "gemini-api-key": lambda ctx: "" if ctx.get("GEMINI_API_KEY") else "GEMINI_API_KEY is not set",
    "oauth-personal": lambda ctx: (
        "" if (ctx.home / ".gemini" / "oauth_creds.json").is_file() else "~/.gemini/oauth_creds.json does not exist"
    ),
}


def auth_type(ctx: AgentContext) -> Check:
    """Gemini CLI exits 41 ("Invalid auth method selected.") unless a settings file
    selects an auth type — even with GEMINI_API_KEY set. The workspace's file wins."""
    name, profile = f"[{ctx.profile.name}] auth type", ctx.profile.name
    user = ctx.home / ".gemini" / "settings.json"
    for path in (ctx.root / ".gemini" / "settings.json", user):
        data = load_json(path)[0]
        # `security.auth.selectedType`; older versions wrote `selectedAuthType` at the top
        selected = table(table(data, "security"), "auth").get("selectedType") or data.get("selectedAuthType")
        if isinstance(selected, str) and selected:
            needs = _AUTH_TYPE_NEEDS.get(selected)
            missing = needs(ctx) if needs else ""
            where = shown(path, ctx.home)
            if missing:
                return fail(
                    name,
                    f"{where} selects {selected!r}, but {missing}",
                    f"set it up, or select another auth type in {where}",
                    profile,
                )
            return ok(name, f"{selected!r} selected in {where}", profile)
    return fail(
        name,
        f'no auth type selected in {shown(user, ctx.home)}: gemini exits 41 "Invalid auth method selected."',
        f'write {{"security":{{"auth":{{"selectedType":"gemini-api-key"}}}}}} to {shown(user, ctx.home)} '
        '(or "oauth-personal" after logging in with Google)',
        profile,
    )


CLI = AgentCli(
    binary="gemini",
    profiles=PROFILES,
    install="npm install -g @google/gemini-cli",
    reader=GeminiReader,
    credentials=credentials,
    # the API with a key; Code Assist and Google's token endpoint with a Google login
    reach=Reach(
        hosts=("generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com"),
        env=("GEMINI_*", "GOOGLE_*"),
    ),
)
