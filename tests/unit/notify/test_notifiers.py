"""hive/notifiers: an event reaches a command (on stdin, no shell) and a webhook
(a JSON POST); every way that can fail comes back as one line, never raised."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from hive.notifiers import command as command_channel
from hive.notifiers import deliver as deliver_to
from hive.notifiers import webhook as webhook_channel


def deliver(event: dict, root: Path, command: tuple[str, ...], webhook: str) -> list[str]:
    """`[notify]` as the config holds it: a channel not set is absent."""
    return deliver_to(event, root, {k: v for k, v in (("command", command), ("webhook", webhook)) if v})


EVENT = {"event": "blocked", "task": "p:1", "reason": 'it\'s $(rm -rf ~) `x`; "quoted"'}


class Webhook:
    """A local HTTP server that records each POST and answers with `status`."""

    def __init__(self, status: int = 204, delay: float = 0.0) -> None:
        self.received: list[tuple[str, str, dict]] = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                hook.received.append((self.path, self.headers["Content-Type"], json.loads(body)))
                time.sleep(delay)
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    hook.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recorder(out: Path) -> tuple[str, ...]:
    """A command that appends its stdin, its cwd and $HIVE_EVENT to `out`."""
    code = (
        "import os, sys; data = sys.stdin.read(); "
        f"open({str(out)!r}, 'a').write(os.getcwd() + '|' + os.environ['HIVE_EVENT'] + '|' + data)"
    )
    return (sys.executable, "-c", code)


def test_the_command_gets_the_event_as_json_on_stdin_in_the_repo_root(tmp_path):
    out = tmp_path / "got.txt"
    assert deliver(EVENT, tmp_path, recorder(out), "") == []
    cwd, event, data = out.read_text().split("|", 2)
    assert cwd == str(tmp_path) and event == "blocked"
    assert json.loads(data) == EVENT  # the shell-looking text arrived as data, untouched
    assert not (tmp_path / "x").exists()


def test_the_webhook_gets_the_event_as_a_json_post(tmp_path, webhook):
    assert deliver(EVENT, tmp_path, (), webhook.url) == []
    assert webhook.received == [("/hook", "application/json", EVENT)]


def test_both_are_sent_when_both_are_configured(tmp_path, webhook):
    out = tmp_path / "got.txt"
    assert deliver(EVENT, tmp_path, recorder(out), webhook.url) == []
    assert out.exists() and len(webhook.received) == 1


def test_a_webhook_error_answer_is_a_problem_line(tmp_path):
    hook = Webhook(status=500)
    try:
        (problem,) = deliver(EVENT, tmp_path, (), hook.url)
    finally:
        hook.close()
    assert problem == f"notify webhook {hook.url} answered HTTP 500 Internal Server Error"


def test_a_webhook_nobody_listens_on_is_a_problem_line(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/hook"
    (problem,) = deliver(EVENT, tmp_path, (), url)
    assert problem.startswith(f"notify webhook {url} could not be reached:") and "refused" in problem


def test_a_slow_webhook_is_given_up_after_its_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr(webhook_channel, "TIMEOUT", 0.2)
    hook = Webhook(delay=1.0)
    try:
        started = time.monotonic()
        (problem,) = deliver(EVENT, tmp_path, (), hook.url)
        assert time.monotonic() - started < 0.9
    finally:
        hook.close()
    assert "timed out" in problem, problem


def test_a_missing_command_is_a_problem_line(tmp_path):
    (problem,) = deliver(EVENT, tmp_path, ("no-such-notifier-xyz", "--flag"), "")
    assert (
        problem == "notify command ['no-such-notifier-xyz', '--flag'] failed: no-such-notifier-xyz: command not found"
    )


def test_a_command_that_fails_says_its_exit_code_and_last_words(tmp_path):
    command = (sys.executable, "-c", "import sys; print('bad token', file=sys.stderr); sys.exit(2)")
    (problem,) = deliver(EVENT, tmp_path, command, "")
    assert problem.endswith("exited with 2: bad token"), problem


def test_a_command_that_is_not_executable_is_a_problem_line(tmp_path):
    script = tmp_path / "notify.sh"
    script.write_text("#!/bin/sh\n")
    (problem,) = deliver(EVENT, tmp_path, (str(script),), "")
    assert "could not start" in problem and "Permission denied" in problem, problem


def test_a_hanging_command_is_stopped_at_its_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr(command_channel, "TIMEOUT", 0.5)
    started = time.monotonic()
    (problem,) = deliver(EVENT, tmp_path, (sys.executable, "-c", "import time; time.sleep(30)"), "")
    assert time.monotonic() - started < 5
    assert "timed out after 0.5s" in problem, problem
