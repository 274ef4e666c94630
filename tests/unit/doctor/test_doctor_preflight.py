"""hive/doctor/preflight.py: what `doit` checks before a run — cheaply, once, for
the plans the run was asked for — and the one message it stops with."""

from __future__ import annotations

import pytest
from doctor_helpers import config_with, custom, plan, program, task

from hive.doctor import preflight
from hive.plan.cache import PlanSet
from hive.project import Project


@pytest.mark.parametrize(
    ("argv", "runs"),
    [
        ([], True),
        (["-n", "2"], True),
        (["run", "auth"], True),
        (["auth:3"], True),
        (["-c", "x=1"], True),
        (["list"], False),
        (["list", "--status"], False),
        (["-f", "dodo.py", "list"], False),
        (["--dir=.", "info", "auth:1"], False),
        (["forget"], False),
        (["help"], False),
    ],
)
def test_only_commands_that_run_tasks_are_checked(argv, runs):
    assert preflight.runs_tasks(argv) is runs


def test_the_plans_a_run_asked_for_or_every_approved_one():
    a, b, draft = plan("auth", task("1")), plan("db", task("1")), plan("wip", task("1"), status="draft")
    plans = [a, b, draft]
    assert preflight.selected_plans([], plans) == [a, b]
    assert preflight.selected_plans(["-n", "2", "db"], plans) == [b]
    assert preflight.selected_plans(["auth:1", "db:1"], plans) == [a, b]
    assert preflight.selected_plans(["wip"], plans) == [a, b], "a draft runs nothing: doit's defaults decide"


def project_using(tmp_path, profile, *plans):
    return Project(tmp_path, config_with(profile, default=profile.name), PlanSet(tuple(plans)))


def test_a_missing_binary_is_one_line_naming_the_profile_its_tasks_and_the_fix(tmp_path):
    project = project_using(tmp_path, custom("bot", "bot-cli"), plan("x", task("1"), task("2", "script"), task("3")))
    problems = preflight.problems(project, [], lambda p, t: True, {"PATH": str(tmp_path)})
    assert problems == [
        "agent profile 'bot' (used by plan x tasks 1, 3): `bot-cli` is not on PATH — "
        "install it or set [agents.bot] command in .hive/config.toml"
    ]
    assert preflight.message(problems) == (
        f"hive: {problems[0]}; nothing was started (`hive doctor` checks everything)"
    )


def test_nothing_to_say_when_the_binary_is_there_the_tasks_are_done_or_doit_only_lists(tmp_path):
    project = project_using(tmp_path, custom("bot", "bot-cli"), plan("x", task("1")))
    empty = {"PATH": str(tmp_path)}
    assert preflight.problems(project, [], lambda p, t: False, empty) == [], "every agent task is done"
    assert preflight.problems(project, ["list"], lambda p, t: True, empty) == []
    program(tmp_path / "bin", "bot-cli")
    assert preflight.problems(project, [], lambda p, t: True, {"PATH": str(tmp_path / "bin")}) == []


def test_claude_as_root_without_is_sandbox_stops_the_run(tmp_path, monkeypatch):
    program(tmp_path / "bin", "claude")
    monkeypatch.setattr("hive.agent_clis.claude.os.geteuid", lambda: 0)
    project = Project(tmp_path, config_with(), PlanSet((plan("x", task("1")),)))
    env = {"PATH": str(tmp_path / "bin")}
    [problem] = preflight.problems(project, [], lambda p, t: True, env)
    assert problem.startswith("agent profile 'claude' (used by plan x task 1): running as root")
    assert preflight.problems(project, [], lambda p, t: True, {**env, "IS_SANDBOX": "1"}) == []


def test_several_problems_make_one_message_with_a_line_each(tmp_path):
    one, two = custom("one", "one-cli"), custom("two", "two-cli")
    config = config_with(one, two, default="one")
    project = Project(tmp_path, config, PlanSet((plan("x", task("1"), task("2", agent="two")),)))
    message = preflight.message(preflight.problems(project, [], lambda p, t: True, {"PATH": str(tmp_path)}))
    lines = message.splitlines()
    assert len(lines) == 2 and all(line.startswith("hive: agent profile") for line in lines)
    assert lines[-1].endswith("nothing was started (`hive doctor` checks everything)")
