"""The stream readers on what the real CLIs printed against the scripted model server
(tests/fixtures/agent_streams, recorded by tests/real_cli/record_streams.py; their
README has the exit statuses and times)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hive.agent_clis import reader
from hive.agent_clis.stream import TroubleKind

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "agent_streams"
P, R, T, B = TroubleKind.PERMANENT, TroubleKind.RATE_LIMIT, TroubleKind.TRANSIENT, TroubleKind.BUDGET

# recording -> (what the reader makes of it, tokens in, tokens out); Codex as the profile runs it (--json)
EXPECTED: dict[str, tuple[TroubleKind | None, int, int]] = {
    "claude-normal": (None, 4000, 400),
    "claude-rate_limited-recovers": (None, 4000, 400),  # Claude waited out a short retry-after itself
    "claude-bad_key": (P, 0, 0),  # at its first api_retry, not after ten
    "claude-bad_key-noretry": (P, 0, 0),
    "claude-no_key": (P, 0, 0),
    "claude-rate_limited": (R, 0, 0),
    "claude-rate_limited-noretry": (R, 0, 0),
    "claude-usage_limit": (R, 0, 0),
    "claude-usage_limit-headers": (R, 0, 0),
    "claude-overloaded": (None, 0, 0),  # Claude is still retrying its 529s: not yet
    "claude-overloaded-noretry": (R, 0, 0),  # it gave up: pause
    "claude-unreachable": (T, 0, 0),
    "claude-max_budget": (B, 1000, 0),
    "codex-json-normal": (None, 4000, 400),
    "codex-json-normal-mock_model": (None, 4000, 400),
    "codex-json-bad_key": (P, 0, 0),
    "codex-json-bad_key-noretry": (P, 0, 0),
    "codex-json-no_key": (P, 0, 0),
    "codex-json-rate_limited": (R, 0, 0),
    "codex-json-rate_limited-noretry": (R, 0, 0),
    "codex-json-rate_limited-recovers": (R, 4000, 400),  # its inner retries were spent: Hive pauses it
    "codex-json-unreachable": (T, 0, 0),
    "gemini-normal": (None, 5000, 500),
    "gemini-rate_limited-recovers": (None, 5000, 500),  # one failed attempt: Gemini retries by itself
    "gemini-bad_key": (P, 0, 0),
    "gemini-bad_key-401": (P, 0, 0),
    "gemini-bad_key-noretry": (P, 0, 0),
    "gemini-no_key": (P, 0, 0),
    "gemini-rate_limited": (R, 1000, 100),
    "gemini-rate_limited-noretry": (R, 1000, 100),
    "gemini-unreachable": (T, 0, 0),
    "aider-normal": (None, 964, 16),
    "aider-normal-nostream": (None, 1000, 100),
    "aider-rate_limited-recovers": (None, 972, 16),
    "aider-bad_key": (P, 0, 0),
    "aider-no_key": (P, 0, 0),
    "aider-rate_limited": (R, 0, 0),
    "aider-unreachable": (T, 0, 0),
}


def test_every_recording_of_a_profiles_command_line_is_covered():
    recorded = {p.stem for p in STREAMS.glob("*.txt") if not p.name.startswith("codex-") or "-json-" in p.name}
    assert recorded == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_stream(name: str):
    kind, tokens_in, tokens_out = EXPECTED[name]
    r = reader(name.split("-")[0])
    assert r is not None
    r.feed((STREAMS / f"{name}.txt").read_text(errors="replace"))
    r.close()
    assert (r.trouble.kind if r.trouble else None) == kind, r.trouble
    assert (r.usage.tokens_in, r.usage.tokens_out) == (tokens_in, tokens_out)
    if r.trouble:
        assert "\n" not in r.trouble.reason and len(r.trouble.reason) < 500 and "/tmp/" not in r.trouble.reason


def test_the_clis_own_totals_and_reset_times_are_read():
    def read(name: str):
        r = reader(name.split("-")[0])
        assert r is not None
        r.feed((STREAMS / f"{name}.txt").read_text(errors="replace"))
        r.close()
        return r

    assert read("claude-normal").usage.cli_cost_usd == 0.03
    assert read("aider-normal-nostream").usage.cli_cost_usd == 0.0045
    usage_limit = read("claude-usage_limit").trouble
    assert usage_limit is not None and usage_limit.resume_at > 1_700_000_000
    gemini = read("gemini-normal").usage
    assert sum(i for i, _ in gemini.by_model.values()) == 5000 and len(gemini.by_model) == 2
