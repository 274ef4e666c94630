"""hive/agent_clis: each CLI's output read for errors, rate limits and usage, fed in
arbitrary chunks as the log grows."""

from __future__ import annotations

import json
import time

import pytest

from hive.agent_clis import READERS
from hive.agent_clis.aider import AiderReader
from hive.agent_clis.claude import ClaudeReader
from hive.agent_clis.codex import CodexReader
from hive.agent_clis.gemini import GeminiReader
from hive.agent_clis.stream import StreamReader, TroubleKind, classify, reset_time


def fed(reader: StreamReader, *lines: object, chunk: int = 7) -> StreamReader:
    text = "".join((json.dumps(line) if isinstance(line, dict) else str(line)) + "\r\n" for line in lines)
    for i in range(0, len(text), chunk):  # a JSON event split anywhere still reads whole
        reader.feed(text[i : i + chunk])
    reader.close()
    return reader


def assistant(mid: str, tokens_in: int, tokens_out: int, **extra: object) -> dict:
    usage = {"input_tokens": tokens_in, "output_tokens": tokens_out, "cache_read_input_tokens": 0}
    return {
        "type": "assistant",
        "message": {"id": mid, "model": "claude-opus-4-8", "usage": usage, "content": []},
        **extra,
    }


def test_claude_counts_each_messages_usage_once_however_often_it_repeats():
    r = fed(ClaudeReader(), assistant("a", 1000, 1), assistant("a", 1000, 100), assistant("b", 1200, 50))
    assert (r.usage.tokens_in, r.usage.tokens_out, r.usage.model) == (2200, 150, "claude-opus-4-8")
    assert r.usage.cli_cost_usd is None and r.trouble is None


def test_claude_prefers_its_own_total_when_the_result_arrives():
    result = {"type": "result", "subtype": "success", "is_error": False, "total_cost_usd": 0.42, "usage": {}}
    r = fed(ClaudeReader(), assistant("a", 10, 5), result)
    assert r.usage.cli_cost_usd == 0.42 and r.trouble is None


def test_claude_tool_contents_about_logging_in_are_not_trouble():
    tool = {"type": "tool_use", "name": "Write", "input": {"content": "Please log in · /login · 401 Unauthorized"}}
    page = {"type": "assistant", "message": {"id": "a", "content": [tool], "usage": {}}}
    result = {"type": "user", "message": {"content": [{"type": "tool_result", "content": "rate limit 429 quota"}]}}
    assert fed(ClaudeReader(), page, result).trouble is None


@pytest.mark.parametrize(
    ("status", "kind"), [(401, TroubleKind.PERMANENT), (403, TroubleKind.PERMANENT), (500, None), (529, None)]
)
def test_claude_retry_events(status: int, kind: TroubleKind | None):
    retry = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10, "error_status": status}
    r = fed(ClaudeReader(), retry)
    assert (r.trouble.kind if r.trouble else None) == kind


def test_claude_waits_out_a_short_rate_limit_but_pauses_for_a_long_one_or_the_last_retry():
    short = {"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10, "error_status": 429,
             "retry_delay_ms": 2000}  # fmt: skip
    assert fed(ClaudeReader(), short).trouble is None
    long = {**short, "retry_delay_ms": 120_000}
    assert fed(ClaudeReader(), long).trouble.kind == TroubleKind.RATE_LIMIT  # type: ignore[union-attr]
    last = {**short, "attempt": 10}
    assert fed(ClaudeReader(), last).trouble.kind == TroubleKind.RATE_LIMIT  # type: ignore[union-attr]


def test_claude_error_results():
    def result(text: str) -> dict:
        return {"type": "result", "subtype": "success", "is_error": True, "result": text}

    r = fed(ClaudeReader(), result("Not logged in · Please run /login"))
    assert r.trouble and r.trouble.kind == TroubleKind.PERMANENT and "Not logged in" in r.trouble.reason
    r = fed(ClaudeReader(), result("Claude AI usage limit reached|1900000000"))
    assert r.trouble and (r.trouble.kind, r.trouble.resume_at) == (TroubleKind.RATE_LIMIT, 1900000000.0)
    r = fed(ClaudeReader(), result('API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}'))
    assert r.trouble and r.trouble.kind == TroubleKind.RATE_LIMIT
    r = fed(ClaudeReader(), result("something odd"))
    assert r.trouble and r.trouble.kind == TroubleKind.TRANSIENT


def test_claude_refusing_root_is_permanent_with_the_fix():
    r = fed(
        ClaudeReader(), "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"
    )
    assert r.trouble and r.trouble.kind == TroubleKind.PERMANENT and "IS_SANDBOX=1" in r.trouble.reason


def test_codex_usage_and_errors():
    done = {"type": "turn.completed", "usage": {"input_tokens": 1000, "cached_input_tokens": 0, "output_tokens": 100}}
    r = fed(CodexReader(), {"type": "thread.started"}, done, done)
    assert (r.usage.tokens_in, r.usage.tokens_out, r.trouble) == (2000, 200, None)
    r = fed(CodexReader(), {"type": "error", "message": "Reconnecting... 1/5 (stream disconnected)"})
    assert r.trouble and r.trouble.kind == TroubleKind.TRANSIENT
    r = fed(CodexReader(), {"type": "turn.failed", "error": {"message": "unexpected status 401 Unauthorized"}})
    assert r.trouble and r.trouble.kind == TroubleKind.PERMANENT
    r = fed(CodexReader(), {"type": "error", "message": "exceeded retry limit, last status: 429 Too Many Requests"})
    assert r.trouble and r.trouble.kind == TroubleKind.RATE_LIMIT


def test_gemini_stats_and_errors():
    result = {"type": "result", "status": "success", "stats": {"input_tokens": 2000, "output_tokens": 200}}
    r = fed(GeminiReader(), {"type": "init", "model": "gemini-2.5-pro"}, result)
    assert (r.usage.tokens_in, r.usage.tokens_out, r.usage.model, r.trouble) == (2000, 200, "gemini-2.5-pro", None)
    error = {"type": "result", "status": "error", "error": {"message": "[API Error: 429 RESOURCE_EXHAUSTED]"}}
    r = fed(GeminiReader(), error)
    assert r.trouble and r.trouble.kind == TroubleKind.RATE_LIMIT


def test_aider_summary_lines_and_litellm_errors():
    r = fed(AiderReader(), "Tokens: 1.2k sent, 340 received. Cost: $0.01 message, $0.02 session.", "x",
            "Tokens: 2.0k sent, 1.1k received. Cost: $0.03 message, $0.05 session.")  # fmt: skip
    assert (r.usage.tokens_in, r.usage.tokens_out, r.usage.cli_cost_usd) == (3200, 1440, 0.05)
    r = fed(AiderReader(), "litellm.AuthenticationError: AuthenticationError: OpenAIException - Incorrect API key")
    assert r.trouble and r.trouble.kind == TroubleKind.PERMANENT
    r = fed(AiderReader(), "litellm.RateLimitError: RateLimitError: OpenAIException - try again in 20s")
    assert r.trouble and r.trouble.kind == TroubleKind.RATE_LIMIT and r.trouble.resume_at > time.time() + 15


def test_plain_text_counts_only_unmistakable_errors():
    r = fed(StreamReader(), "def login(): return 'Please log in'", "rate limit: 10 per second", "HTTP 401 page")
    assert r.trouble is None


def test_ansi_codes_and_carriage_returns_do_not_hide_an_event():
    retry = json.dumps({"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 3, "error_status": 401})
    r = fed(ClaudeReader(), f"\x1b[2K\r{retry}")
    assert r.trouble and r.trouble.kind == TroubleKind.PERMANENT


def test_reset_times():
    now = 1_000_000.0
    assert reset_time("limit reached|1900000000", now) == 1900000000.0
    assert reset_time("Please try again in 20s", now) == now + 20
    assert reset_time("resets in 2 hours", now) == now + 7200
    at = reset_time("Your limit resets at 3pm", now)
    assert now < at <= now + 86400 and time.localtime(at).tm_hour == 15
    assert reset_time("no time here", now) == 0.0


def test_classify_gives_one_line_without_the_raw_payload_size():
    trouble = classify("x" * 5000 + "\n" + "invalid x-api-key", 401, "claude")
    assert trouble and "\n" not in trouble.reason and len(trouble.reason) < 600


@pytest.mark.parametrize(
    ("message", "status", "kind", "words"),
    [
        ("model: claude-nope-9 not found", 404, TroubleKind.PERMANENT, "model is not available"),
        (
            '{"error":{"code":"model_not_found","message":"The model `x` does not exist"}}',
            None,
            TroubleKind.PERMANENT,
            "model is not available",
        ),
        ("error: unexpected argument '--bogus' found", None, TroubleKind.PERMANENT, "command line was rejected"),
        ("Forbidden", 403, TroubleKind.PERMANENT, "API key is invalid"),
        ("Internal server error", 500, None, ""),
    ],
)
def test_classify_invalid_models_bad_flags_and_server_errors(message, status, kind, words):
    trouble = classify(message, status, "codex")
    assert (trouble.kind if trouble else None) == kind
    assert trouble is None or words in trouble.reason


@pytest.mark.parametrize(
    ("kind", "fix"),
    [
        ("claude", "set ANTHROPIC_API_KEY or run `claude` once and /login"),
        ("codex", "set OPENAI_API_KEY or run `codex login`"),
        ("gemini", "set GEMINI_API_KEY or run `gemini` once and log in"),
        ("aider", "set the API key of aider's model (e.g. OPENAI_API_KEY or ANTHROPIC_API_KEY)"),
        ("text", "check its credentials"),  # a CLI Hive does not know
    ],
)
def test_a_rejected_key_says_how_to_log_in_that_cli(kind, fix):
    found = fed(READERS[kind](), "Error: Invalid API key").trouble
    assert found is not None and found.kind == TroubleKind.PERMANENT
    assert f"; {fix}, then `hive retry`" in found.reason
