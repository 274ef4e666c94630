"""hive/notify/emit.py: nothing is sent unless [notify] asks for it, the run's budget
is told once per run, and a notification that fails is a warning (stderr and
.hive/hive.log) — never an exception."""

from __future__ import annotations

import dataclasses
import json
import socket
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from hive import notify
from hive.engine.task import TaskContext
from hive.plan.cache import PlanSet
from hive.plan.model import Plan, Task
from hive.project import Project
from hive.settings.config import Config
from hive.store.paths import Paths
from hive.store.state import TaskState
from hive.store.usage import RUN_STARTED

TASK = Task("1", "Work", 3)
PLAN = Plan("p", Path("plans/p.md"), "approved", "", "P", "", (TASK,))


def recording(out: Path) -> Config:
    code = f"import sys; open({str(out)!r}, 'a').write(sys.stdin.read())"
    return Config(notify={"command": (sys.executable, "-c", code)})


def task_run(root: Path, config: Config, st: TaskState | None = None) -> TaskContext:
    st = st or TaskState("p", "1")
    fake = SimpleNamespace(
        cfg=config, paths=Paths(root), root=root, task=TASK, job=SimpleNamespace(plan=PLAN), read=lambda: st
    )
    return cast(TaskContext, fake)


def received(out: Path) -> list[dict]:
    return [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


def test_nothing_is_run_without_a_notify_section(tmp_path, monkeypatch):
    # recorded, not raised: emit turns any exception of a delivery into a warning, so a stub
    # that raised could never fail this test (it once passed with every event sent)
    sent: list[dict] = []
    monkeypatch.setattr("hive.notify.emit.deliver", lambda payload, *args: sent.append(payload) or [])
    notify.task_stopped(task_run(tmp_path, Config()), TaskState("p", "1", "blocked"))
    notify.run_finished(Project(tmp_path, Config(), PlanSet((PLAN,))), {})
    assert sent == []
    notify.run_finished(Project(tmp_path, Config(notify={"webhook": "http://127.0.0.1:9/"}), PlanSet((PLAN,))), {})
    assert [p["event"] for p in sent] == ["run_finished"]  # the same calls send once [notify] asks


def test_a_held_task_is_told_and_a_done_one_is_not(tmp_path):
    out = tmp_path / "got.jsonl"
    h = task_run(tmp_path, recording(out))
    notify.task_stopped(h, TaskState("p", "1", "blocked", reason="blocked: no key"))
    notify.task_stopped(h, TaskState("p", "1", "done"))
    (event,) = received(out)
    assert (event["event"], event["task"], event["command"]) == ("blocked", "p:1", "hive retry p:1")


def test_the_run_budget_is_told_once_per_run(tmp_path, monkeypatch):
    out = tmp_path / "got.jsonl"
    h = task_run(tmp_path, recording(out))
    monkeypatch.setenv(RUN_STARTED, "1000.000")
    notify.run_budget(h, "budget reached ($1.00 of $0.50, [budget] run_usd)")
    notify.run_budget(h, "budget reached ($1.00 of $0.50, [budget] run_usd)")
    monkeypatch.setenv(RUN_STARTED, "2000.000")  # the next run
    notify.run_budget(h, "budget reached ($2.00 of $0.50, [budget] run_usd)")
    events = received(out)
    assert [e["reason"] for e in events] == [
        "budget reached ($1.00 of $0.50, [budget] run_usd)",
        "budget reached ($2.00 of $0.50, [budget] run_usd)",
    ]
    assert {(e["event"], e["command"]) for e in events} == {("budget", "hive status")}


def test_a_failed_notification_is_one_warning_line_and_a_log_entry(tmp_path, capfd):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = Config(notify={"command": ("no-such-notifier-xyz",), "webhook": f"http://127.0.0.1:{port}/"})
    notify.task_stopped(task_run(tmp_path, config), TaskState("p", "1", "failed", reason="crashed"))
    lines = capfd.readouterr().out.splitlines()
    assert len(lines) == 2 and all(line.startswith("hive: warning: notify ") for line in lines), lines
    assert "no-such-notifier-xyz: command not found" in lines[0] and "could not be reached" in lines[1]
    log = Paths(tmp_path).debug_log.read_text()
    assert "notify failed p:1" in log and "command not found" in log and "could not be reached" in log


def test_a_bug_while_notifying_is_logged_not_raised(tmp_path, monkeypatch, capfd):
    def bug(*args: object) -> list[str]:
        raise KeyError("oops")

    monkeypatch.setattr("hive.notify.emit.deliver", bug)
    config = dataclasses.replace(Config(), notify={"webhook": "http://127.0.0.1:9/"})
    notify.run_finished(Project(tmp_path, config, PlanSet((PLAN,))), {})
    err = capfd.readouterr().out
    assert err.startswith("hive: warning: internal error while notifying: KeyError('oops')")
    assert "Traceback" in Paths(tmp_path).debug_log.read_text()
