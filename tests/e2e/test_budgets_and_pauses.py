"""Budgets and rate limits through `doit`, with the fake agent printing the events a
real CLI prints (Claude's stream-json): the real CLIs do the same in tests/real_cli."""

from __future__ import annotations

import json
import os
import shlex
import signal
import time

from conftest import wait_for

# one input token costs $1 at this price: usage is easy to read off
EXTRA = """
[prices]
"fake-model" = { input = 1000000, output = 0 }
"""


def configure(repo, attempts: int = 2, execution: str = "", extra: str = "") -> None:
    """The fake agent, its output read as Claude's stream-json."""
    repo.configure(attempts=attempts, extra=EXTRA + extra)
    path = repo.root / ".hive" / "config.toml"
    agent = 'context_file = "AGENTS.md"\n'
    text = path.read_text().replace(agent, f'{agent}stream = "claude"\n', 1)
    path.write_text(text.replace("[execution]\n", f"[execution]\n{execution}", 1))


def usage_event(tokens_in: int) -> str:
    message = {"id": "m1", "model": "fake-model", "content": [], "usage": {"input_tokens": tokens_in}}
    return shlex.quote(json.dumps({"type": "assistant", "message": message}, separators=(",", ":")))


def test_a_run_budget_stops_new_tasks_and_doit_says_so(repo):
    configure(repo, extra="\n[budget]\nrun_usd = 0.5\n")
    repo.write_plan(
        "b",
        f"""
    ### Task 1: Spend
    fake: print {usage_event(1)}
    fake: write a.txt a
    fake: commit spend
    fake: signal done

    ### Task 2: Would spend more
    fake: signal done
    """,
    )
    r = repo.doit("-n", "1")
    assert r.returncode == 1
    assert repo.state("b", "1")["state"] == "done"  # a running agent finishes
    assert repo.state("b", "2")["state"] == "planned" and repo.starts("b:2") == []
    assert "budget reached ($1.00 of $0.50, [budget] run_usd)" in r.stdout
    totals = repo.status_json()["totals"]
    assert totals == {"tokens_in": 1, "tokens_out": 0, "cost_usd": 1.0}


def test_a_task_over_its_budget_is_stopped_and_not_retried(repo):
    configure(repo, extra="\n[budget]\ntask_usd = 2\n")
    repo.write_plan(
        "b",
        f"""
    ### Task 1: Spend too much
    fake: print {usage_event(3)}
    fake: hang
    """,
    )
    r = repo.doit()
    assert r.returncode == 1
    st = repo.state("b", "1")
    assert (st["state"], st["attempt"], st["permanent"]) == ("failed", 1, True), st
    assert st["reason"] == "budget reached for this task ($3.00 of $2.00, [budget] task_usd)"
    assert st["history"][-1]["usage"]["cost_usd"] == 3.0


RATE_LIMITED = shlex.quote(
    json.dumps(
        {"type": "result", "is_error": True, "api_error_status": 429, "result": "API Error: Request rejected (429)"},
        separators=(",", ":"),
    )
)


# a task whose first attempt is rate-limited; its agent then waits to be stopped
LIMITED_AT_FIRST = f"""
### Task 1: Limited at first
fake@1: print {RATE_LIMITED}
fake@1: hang
fake: signal done
"""


def test_a_paused_task_shows_in_status_and_the_run_goes_on_by_itself(repo):
    configure(repo, attempts=1, execution='rate_limit_backoff = "4s"\n')
    repo.write_plan(
        "r",
        f"""
    ### Task 1: Limited at first
    fake@1: print {RATE_LIMITED}
    fake@1: hang
    fake: write a.txt a
    fake: commit after the pause
    fake: signal done
    """,
    )
    run = repo.start_doit()
    try:
        wait_for(lambda: repo.state("r", "1")["state"] == "paused", timeout=30, what="the pause")
        row = repo.status_json()["tasks"][0]
        assert row["state"] == "paused" and row["resume_at"] > time.time()
        shown = repo.hive("status").stdout
        assert "paused" in shown and "resumes at" in shown and "rate limited" in shown, shown
        assert run.wait(60) == 0
    finally:
        if run.running():
            run.proc.kill()
    st = repo.state("r", "1")
    assert (st["state"], st["attempts_used"]) == ("done", 1)  # max_attempts 1: the paused one did not count
    assert "rate-limited until" in run.output()


def test_a_run_killed_during_a_pause_is_resumed_by_the_next_run_after_the_pause(repo):
    configure(repo, attempts=1, execution='rate_limit_backoff = "3s"\n')
    repo.write_plan("r", LIMITED_AT_FIRST)
    run = repo.start_doit()
    wait_for(lambda: repo.state("r", "1")["state"] == "paused", timeout=30, what="the pause")
    resume_at = repo.state("r", "1")["resume_at"]
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(10)
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    st = repo.state("r", "1")
    assert (st["state"], st["attempt"], st["attempts_used"]) == ("done", 2, 1)
    assert st["history"][-1]["started_at"] >= resume_at - 0.01  # it waited for its resume time
