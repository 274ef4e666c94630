"""hive/engine/supervise.py with a stream reader: a headless CLI's event stream is
interpreted (errors, rate limits, usage), never matched as text against prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hive.agent_clis.claude import ClaudeReader
from hive.agent_clis.codex import CodexReader
from hive.agent_clis.stream import Usage
from hive.engine.supervise import POLL, UNREACHABLE_PATIENCE
from hive.lifecycle import Kind
from tests.unit.engine.test_supervise import Scene


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    return Scene(tmp_path)


def event(**fields: object) -> str:
    return json.dumps(fields)


LOGIN_PAGE = event(
    type="assistant",
    message={
        "id": "msg_1",
        "model": "claude-opus-4-8",
        "content": [
            {
                "type": "tool_use",
                "name": "Write",
                "input": {"file_path": "login.html", "content": "<h1>Please log in</h1><a href='/login'>sign in</a>"},
            }
        ],
        "usage": {"input_tokens": 1000, "output_tokens": 100},
    },
)


def test_a_task_that_builds_a_login_page_is_not_a_stall(scene: Scene):
    scene.clock.after(1, lambda: scene.say(LOGIN_PAGE))
    scene.clock.after(3, lambda: scene.say(event(type="user", message={"content": "Please log in /login"})))
    scene.clock.after(5, lambda: scene.signal(Kind.DONE))
    assert scene.wait(scene.watch(reader=ClaudeReader())).kind == Kind.DONE


def test_a_bad_key_fails_at_the_first_retry_with_one_readable_line(scene: Scene):
    retry = event(type="system", subtype="api_retry", attempt=1, max_retries=10, retry_delay_ms=600, error_status=401)
    scene.clock.after(1, lambda: scene.say(retry))
    outcome = scene.wait(scene.watch(reader=ClaudeReader()))
    assert outcome.kind == Kind.AGENT_ERROR
    assert outcome.reason.startswith("not logged in or the API key is invalid (claude: API error 401")
    assert "ANTHROPIC_API_KEY" in outcome.reason and "\n" not in outcome.reason and "{" not in outcome.reason
    assert 1 <= scene.clock.elapsed < 1 + 2 * POLL


def test_a_rate_limit_the_cli_gave_up_on_pauses_with_its_reset_time(scene: Scene):
    result = event(type="result", subtype="success", is_error=True, result="Claude usage limit reached|1900000000")
    scene.clock.after(1, lambda: scene.say(result))
    outcome = scene.wait(scene.watch(reader=ClaudeReader()))
    assert (outcome.kind, outcome.resume_at) == (Kind.RATE_LIMITED, 1900000000.0)


def test_an_unreachable_api_fails_the_attempt_after_its_patience_not_never(scene: Scene):
    for second in range(1, 200, 2):
        scene.clock.after(second, lambda: scene.say(event(type="error", message="Reconnecting... 2/5 (error)")))
    outcome = scene.wait(scene.watch(reader=CodexReader()))
    assert outcome.kind == Kind.CRASHED and "unreachable" in outcome.reason
    assert UNREACHABLE_PATIENCE <= scene.clock.elapsed < UNREACHABLE_PATIENCE + 3


def test_a_passing_network_problem_is_forgotten_when_the_model_answers(scene: Scene):
    scene.clock.after(1, lambda: scene.say(event(type="error", message="Reconnecting... 1/5")))
    scene.clock.after(20, lambda: scene.say(event(type="item.completed", item={"type": "agent_message"})))
    scene.clock.after(40, lambda: scene.signal(Kind.DONE))
    assert scene.wait(scene.watch(reader=CodexReader())).kind == Kind.DONE


def test_a_missing_binary_is_a_permanent_failure_that_names_it(scene: Scene):
    scene.clock.after(0.5, lambda: scene.say("hive: cannot run 'claude': [Errno 2] No such file or directory"))
    scene.clock.after(0.6, lambda: scene.exit(127))
    outcome = scene.wait(scene.watch(reader=ClaudeReader(), command="claude"))
    assert outcome.kind == Kind.AGENT_ERROR
    assert outcome.reason.startswith("command not found (exit 127: hive: cannot run 'claude': [Errno 2]")


def test_an_exit_with_the_clis_own_error_gives_that_error_not_spawn_failed(scene: Scene):
    not_logged_in = event(type="result", subtype="success", is_error=True, result="Not logged in · Please run /login")
    scene.clock.after(0.5, lambda: scene.say(not_logged_in))
    scene.clock.after(0.5, lambda: scene.exit(1))
    outcome = scene.wait(scene.watch(reader=ClaudeReader()))
    assert outcome.kind == Kind.AGENT_ERROR and "Not logged in" in outcome.reason


def test_exit_zero_after_work_without_hive_done_is_not_a_spawn_failure(scene: Scene):
    scene.clock.after(0.5, lambda: scene.say(LOGIN_PAGE))
    scene.clock.after(2, lambda: scene.exit(0))
    outcome = scene.wait(scene.watch(reader=ClaudeReader()))
    assert outcome.kind == Kind.CRASHED
    assert outcome.reason == "the agent exited (status 0) without running `hive done`"


class Meter:
    def __init__(self, cap: float | None = None) -> None:
        self.seen: list[tuple[int, int, float | None]] = []
        self.cap = cap

    def record(self, usage: Usage) -> str | None:
        self.seen.append((usage.tokens_in, usage.tokens_out, usage.cli_cost_usd))
        cost = usage.tokens_out * 0.01
        return f"over ({cost})" if self.cap is not None and cost >= self.cap else None


def test_usage_is_recorded_as_it_streams_at_most_once_a_second(scene: Scene):
    meter = Meter()
    for i in range(1, 6):
        message = {"id": f"m{i}", "usage": {"input_tokens": 1000, "output_tokens": 100}, "content": []}
        scene.clock.after(i * 0.1, lambda m=message: scene.say(event(type="assistant", message=m)))
    scene.clock.after(3, lambda: scene.signal(Kind.DONE))
    assert scene.wait(scene.watch(reader=ClaudeReader(), meter=meter)).kind == Kind.DONE
    assert meter.seen[-1] == (5000, 500, None)
    assert len(meter.seen) <= 3


def test_a_task_over_its_budget_is_stopped(scene: Scene):
    message = {"id": "m1", "usage": {"input_tokens": 1000, "output_tokens": 500}, "content": []}
    scene.clock.after(1, lambda: scene.say(event(type="assistant", message=message)))
    outcome = scene.wait(scene.watch(reader=ClaudeReader(), meter=Meter(cap=2.0)))
    assert (outcome.kind, outcome.reason) == (Kind.OVER_BUDGET, "over (5.0)")


@pytest.mark.parametrize("reader", [ClaudeReader, CodexReader])
def test_without_a_signal_or_trouble_a_reader_changes_nothing(scene: Scene, reader):
    scene.say("plain words")
    outcome = scene.wait(scene.watch(reader=reader(), timeout=30))
    assert outcome.kind == Kind.TIMEOUT


def test_a_profile_that_lingers_may_end_its_turn_after_signalling_so_its_usage_counts(scene: Scene):
    meter = Meter()
    turn = event(type="turn.completed", usage={"input_tokens": 3000, "output_tokens": 300})
    scene.clock.after(1, lambda: scene.say(event(type="item.started", item={"type": "command_execution"})))
    scene.clock.after(2, lambda: scene.signal(Kind.DONE))
    scene.clock.after(4, lambda: scene.say(turn))
    scene.clock.after(4.5, lambda: scene.exit(0))
    outcome = scene.wait(scene.watch(reader=CodexReader(), meter=meter, linger=15))
    assert outcome.kind == Kind.DONE and meter.seen[-1] == (3000, 300, None)
    assert 4.5 <= scene.clock.elapsed < 5


def test_lingering_ends_at_its_limit(scene: Scene):
    scene.say("working")
    scene.signal(Kind.DONE)
    assert scene.wait(scene.watch(reader=CodexReader(), linger=15)).kind == Kind.DONE
    assert 15 <= scene.clock.elapsed < 15.1
