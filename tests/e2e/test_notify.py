"""Notifications through real `doit` runs: `[notify] command` gets one JSON object per
event on stdin, `[notify] webhook` gets it as a POST (a local HTTP server here), and a
notifier that is missing or unreachable only warns — the run's result and exit code
stay what they would have been."""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from test_budgets_and_pauses import LIMITED_AT_FIRST, usage_event
from test_budgets_and_pauses import configure as configure_priced_stream

ONE_TASK_THAT_WORKS = """
### Task 1: Works
fake: write a.txt a
fake: commit works
fake: signal done
"""

KEYS = {"event", "task", "plan", "title", "state", "reason", "command", "logs", "repo", "time", "text"}


def recorder(out: Path) -> str:
    """A [notify] section whose command appends each event (stdin) to `out`."""
    code = f"import sys; open({str(out)!r}, 'a').write(sys.stdin.read())"
    return f"\n[notify]\ncommand = {json.dumps([sys.executable, '-c', code])}\n"


def received(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


class Webhook:
    """A stdlib HTTP server on 127.0.0.1 that keeps every JSON body POSTed to it."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                assert self.headers["Content-Type"] == "application/json"
                hook.events.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hive"
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    hook.server.shutdown()
    hook.server.server_close()


def test_a_command_receives_blocked_and_run_finished_with_the_commands_to_answer(repo, tmp_path):
    out = tmp_path / "events.jsonl"
    repo.configure(extra=recorder(out))
    repo.write_plan(
        "p",
        """
    ### Task 1: Needs a key
    fake: signal blocked no API key for the payment provider

    ### Task 2: Works
    fake: write a.txt a
    fake: commit works
    fake: signal done
    """,
    )
    r = repo.doit("-c", "-n", "1")
    assert r.returncode == 1, r.stderr
    blocked, finished = received(out)
    assert set(blocked) == KEYS | {"attempt"}
    assert blocked["event"] == "blocked" and blocked["task"] == "p:1" and blocked["plan"] == "p"
    assert blocked["title"] == "Needs a key" and blocked["state"] == "blocked"
    assert blocked["reason"] == "blocked: no API key for the payment provider"
    assert (blocked["command"], blocked["logs"]) == ("hive retry p:1", "hive logs p:1")
    assert blocked["repo"] == str(repo.root)
    assert finished["event"] == "run_finished" and finished["command"] == "hive status"
    assert finished["counts"]["done"] == 1 and finished["counts"]["blocked"] == 1
    assert finished["state"] == "completed_with_failures" and finished["plans"] == ["p"]
    assert "warning" not in r.stderr


def test_a_webhook_receives_a_task_that_failed_for_good(repo, webhook):
    repo.configure(attempts=1, extra=f'\n[notify]\nwebhook = "{webhook.url}"\n')
    repo.write_plan(
        "w",
        """
    ### Task 1: Crashes
    fake: crash 3
    """,
    )
    r = repo.doit()
    assert r.returncode == 1
    failed, finished = webhook.events
    assert (failed["event"], failed["task"], failed["state"]) == ("failed", "w:1", "failed")
    assert (failed["command"], failed["logs"]) == ("hive retry w:1", "hive logs w:1")
    assert failed["text"].startswith("hive: w:1 (Crashes): failed: ")
    assert finished["event"] == "run_finished" and finished["counts"]["failed"] == 1


def test_an_unreachable_webhook_and_a_missing_command_only_warn(repo):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    repo.configure(extra=f'\n[notify]\ncommand = ["no-such-notifier-xyz"]\nwebhook = "http://127.0.0.1:{port}/hive"\n')
    repo.write_plan(
        "p",
        """
    ### Task 1: Works
    fake: write a.txt a
    fake: commit works
    fake: signal done

    ### Task 2: Needs a human
    **Depends on:** 1
    fake: signal blocked needs a human
    """,
    )
    r = repo.doit()
    assert r.returncode == 1  # task 2 is blocked, as without notifications
    assert repo.state("p", "1")["state"] == "done" and repo.file_on_main("a.txt") == "a\n"
    assert repo.state("p", "2")["state"] == "blocked"
    warnings = [line for line in r.stdout.splitlines() if line.startswith("hive: warning: notify")]
    # two for the blocked task, two at the end of the run
    assert len(warnings) == 4, r.stdout
    assert "hive: warning: notify command ['no-such-notifier-xyz'] failed: no-such-notifier-xyz: command not found" in (
        r.stdout
    )
    assert f"hive: warning: notify webhook http://127.0.0.1:{port}/hive could not be reached" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr
    log = (repo.root / ".hive" / "hive.log").read_text()
    assert "notify blocked p:2" in log and "notify run_finished" in log


def test_a_run_without_a_held_task_still_exits_0_when_the_notifier_fails(repo):
    repo.configure(extra='\n[notify]\ncommand = ["no-such-notifier-xyz"]\n')
    repo.write_plan("p", ONE_TASK_THAT_WORKS)
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert "hive: warning: notify command" in r.stdout


def test_events_chosen_in_the_config_are_the_ones_sent_task_done_and_run_started_included(repo, tmp_path):
    out = tmp_path / "events.jsonl"
    repo.configure(extra=recorder(out) + 'events = ["run_started", "task_done", "run_finished"]\n')
    repo.write_plan("p", ONE_TASK_THAT_WORKS)
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    got = received(out)
    assert [e["event"] for e in got] == ["run_started", "task_done", "run_finished"]
    started, done, _ = got
    assert (
        started["reason"] == "1 task(s) to do"
        and started["text"] == "hive: run started: 1 task(s) to do — `hive status`"
    )
    commit = repo.state("p", "1")["merge_commit"]
    assert done["task"] == "p:1" and done["state"] == "done" and done["command"] == f"git show {commit[:10]}"
    assert all(set(e) >= KEYS for e in got)


def test_a_checkpoint_is_told_once_with_the_command_that_answers_it(repo, tmp_path):
    out = tmp_path / "events.jsonl"
    repo.configure(extra=recorder(out))
    repo.write_plan(
        "c",
        """
    ### Task 1: Pick a database
    **Type:** checkpoint:decision
    **Options:** Postgres, SQLite
    Postgres scales; SQLite is one file.
    """,
    )
    assert repo.doit().returncode == 1
    checkpoint, _ = received(out)
    assert (checkpoint["event"], checkpoint["task"], checkpoint["state"]) == ("checkpoint", "c:1", "awaiting_human")
    assert checkpoint["command"] == "hive approve c:1 --choice Postgres|SQLite" and checkpoint["logs"] == ""
    assert checkpoint["title"] == "Pick a database"
    assert repo.doit().returncode == 1  # still unanswered: not told again, only the run's end
    assert [e["event"] for e in received(out)] == ["checkpoint", "run_finished", "run_finished"]


def test_a_branch_waiting_for_review_is_a_checkpoint_answered_by_approving_it(repo, tmp_path):
    out = tmp_path / "events.jsonl"
    repo.configure(extra="auto_merge = false\n" + recorder(out))  # the config's last table is [merge]
    repo.write_plan(
        "v",
        """
    ### Task 1: Reviewed work
    fake: write a.txt a
    fake: commit reviewed work
    fake: signal done
    """,
    )
    assert repo.doit().returncode == 1
    review, _ = received(out)
    assert (review["event"], review["state"], review["command"]) == ("checkpoint", "awaiting_human", "hive approve v:1")
    assert review["reason"].startswith("review branch ") and review["logs"] == "hive logs v:1"


def test_a_gate_is_its_own_event(repo, tmp_path):
    out = tmp_path / "events.jsonl"
    repo.configure(extra=recorder(out))
    repo.write_plan(
        "g",
        """
    ### Task 1: Schema
    <!-- checkpoint -->
    fake: write s.sql create
    fake: commit schema
    fake: signal done

    ### Task 2: Use it
    **Depends on:** 1
    fake: signal done
    """,
    )
    assert repo.doit().returncode == 1
    gate, finished = received(out)
    assert (gate["event"], gate["task"], gate["command"]) == ("gate", "g:_gate-1", "hive approve g:_gate-1")
    assert finished["counts"]["done"] == 1 and finished["state"] == "awaiting_human"


def test_a_rate_limit_pause_is_told_and_the_run_goes_on(repo, tmp_path):
    out = tmp_path / "events.jsonl"
    configure_priced_stream(repo, attempts=1, execution='rate_limit_backoff = "1s"\n', extra=recorder(out))
    repo.write_plan("r", LIMITED_AT_FIRST)
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    paused, finished = received(out)
    assert (paused["event"], paused["task"], paused["state"], paused["command"]) == (
        "paused",
        "r:1",
        "paused",
        "hive status",
    )
    assert "resumes at" in paused["reason"]
    assert finished["state"] == "complete" and finished["counts"]["done"] == 1


def test_the_run_budget_is_told_once_and_a_task_over_its_budget_is_a_budget_event(repo, tmp_path):
    out = tmp_path / "events.jsonl"
    configure_priced_stream(repo, extra="\n[budget]\nrun_usd = 0.5\ntask_usd = 0.5\n" + recorder(out))
    repo.write_plan(
        "b",
        f"""
    ### Task 1: Spend
    fake: print {usage_event(1)}
    fake: hang

    ### Task 2: Would spend more
    fake: signal done

    ### Task 3: Would spend more too
    fake: signal done
    """,
    )
    r = repo.doit("-c", "-n", "1")
    assert r.returncode == 1
    events = received(out)
    assert [e["event"] for e in events] == ["budget", "budget", "run_finished"], events
    task, run = events[:2]
    assert (task["task"], task["state"], task["command"]) == ("b:1", "failed", "hive retry b:1")
    assert task["reason"] == "budget reached for this task ($1.00 of $0.50, [budget] task_usd)"
    assert run["task"] in ("b:2", "b:3") and run["command"] == "hive status"
    assert run["reason"] == "budget reached ($1.00 of $0.50, [budget] run_usd)"
    assert r.stdout.count("not started — budget reached") == 2  # both refused, told once
