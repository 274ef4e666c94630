"""hive/doctor/profiles_used.py: which profiles approved plans still need, and for which tasks."""

from __future__ import annotations

from doctor_helpers import config_with, custom, plan, task

from hive.doctor.profiles_used import pending, profiles_in_use
from hive.store.state import TaskState


def test_only_agent_tasks_of_approved_plans_count_with_the_task_plan_default_rule():
    config = config_with(custom("bot", "bot"))
    plans = [
        plan("auth", task("1"), task("2", "script"), task("3", agent="bot"), task("4", "checkpoint:human-verify")),
        plan("db", task("1"), agent="codex"),
        plan("draft", task("1", agent="gemini"), status="draft"),
    ]
    uses = {u.profile.name: u for u in profiles_in_use(config, plans)}
    assert set(uses) == {"claude", "bot", "codex"}, "script, checkpoint and draft tasks start no agent"
    assert uses["claude"].describe() == "plan auth task 1"
    assert uses["bot"].describe() == "plan auth task 3"
    assert uses["codex"].describe() == "plan db task 1"


def test_a_profile_used_by_several_plans_names_each_and_long_lists_stay_one_line():
    config = config_with()
    many = plan("big", *(task(str(i)) for i in range(1, 21)))
    [use] = profiles_in_use(config, [plan("a", task("1"), task("3")), many])
    assert use.describe() == "plans a (tasks 1, 3), big (tasks 1, 2, 3, 4, 5, 6, 7, 8, … (20 tasks))"


def test_done_tasks_need_no_agent():
    one, two = task("1", agent="codex"), task("2")
    p = plan("p", one, two)
    states = {"p:1": TaskState("p", "1", state="done", task_hash=one.text_hash)}
    uses = profiles_in_use(config_with(), [p], pending(states))
    assert [(u.profile.name, u.describe()) for u in uses] == [("claude", "plan p task 2")]


def test_a_done_task_whose_text_changed_counts_again():
    one = task("1", agent="codex")
    states = {"p:1": TaskState("p", "1", state="done", task_hash="an older text")}
    uses = profiles_in_use(config_with(), [plan("p", one)], pending(states))
    assert [u.profile.name for u in uses] == ["codex"]


def test_an_unknown_profile_name_is_left_to_the_plan_validator():
    config = config_with(default="script")  # `[agent] default = "script"` names no profile
    assert profiles_in_use(config, [plan("p", task("1"))]) == []
