"""hive/store/names.py: names built from plan IDs are valid refs and tmux targets, and never collide."""

from __future__ import annotations

import itertools
import re
import subprocess

import pytest

from hive.errors import HiveError
from hive.store import names

# (plan, ID) pairs a parser accepts, awkward ones included
TASKS = [
    ("auth", "1"),
    ("auth", "2.1"),
    ("auth", "2_1"),
    ("auth", "2-1"),
    ("auth", "a..b"),
    ("auth", "x.lock"),
    ("auth", "ends."),
    ("auth", "_gate-1"),
    ("auth", "HEAD"),
    ("a" * 40, "b" * 60),
    ("my_plan-2", "3.b.c"),
]


def valid_branch(name: str) -> bool:
    r = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == name


def test_branches_are_valid_git_refs():
    branches = [names.branch(plan, tid, attempt) for plan, tid in TASKS for attempt in (1, 12)]
    assert [b for b in branches if not valid_branch(b)] == []
    assert all(b.startswith("hive/") for b in branches)


def test_the_ref_check_itself_rejects_bad_names():
    assert not valid_branch("hive/a..b") and not valid_branch("hive/x.lock") and not valid_branch("hive/ends.")


SIMILAR = [
    (("auth", "2.1"), ("auth", "2_1")),
    (("auth", "2.1"), ("auth", "2-1")),
    (("a-b", "1"), ("a_b", "1")),
    (("auth", "x" * 30 + "1"), ("auth", "x" * 30 + "2")),
    (("auth", "12"), ("auth1", "2")),
]


@pytest.mark.parametrize(("a", "b"), SIMILAR)
def test_similar_tasks_get_distinct_names(a: tuple[str, str], b: tuple[str, str]):
    assert names.stem(*a) != names.stem(*b)
    assert names.branch(*a, 1) != names.branch(*b, 1)
    assert names.session("w1", *a, 1) != names.session("w1", *b, 1)
    assert names.worktree_dir("w1", *a, 1) != names.worktree_dir("w1", *b, 1)


def test_every_name_is_distinct_across_tasks_and_attempts():
    made = [names.attempt_name(plan, tid, attempt) for plan, tid in TASKS for attempt in (1, 2, 11)]
    assert len(set(made)) == len(made)
    for x, y in itertools.combinations(made, 2):
        assert not y.startswith(x + "-"), (x, y)  # no name is another's prefix plus a suffix


def test_names_are_short_safe_tmux_targets_and_file_names():
    for plan, tid in TASKS:
        session = names.session("w3", plan, tid, 7)
        assert not set(session) & set(".: /\\"), session  # tmux splits targets at '.' and ':'
        assert len(session) <= 64, session
        assert names.worktree_dir("w3", plan, tid, 7).startswith("w3-")


def test_the_same_task_always_gets_the_same_names():
    assert names.branch("auth", "2.1", 3) == names.branch("auth", "2.1", 3)
    assert names.branch("auth", "2.1", 3) != names.branch("auth", "2.1", 4)
    assert names.branch("auth", "2.1", 3).endswith("-a3")


def test_worker_ids_and_task_sessions():
    assert names.worker_id(3) == "w3"
    assert names.is_task_session(names.session(names.worker_id(12), "auth", "2.1", 3))
    for other in ("hive-plan-auth-abc123", "hive-w1-auth", "main", "hive-wx-auth-1-abc-a1", "xhive-w1-a-a1"):
        assert not names.is_task_session(other), other


def test_module_locks_are_distinct_for_similar_modules():
    assert names.module_lock("src/auth") != names.module_lock("src-auth")
    assert "/" not in names.module_lock("src/auth/../x")


def test_task_keys_round_trip_and_bad_ones_are_explained():
    assert names.parse_key(names.task_key("auth", "2.1")) == ("auth", "2.1")
    assert names.split_key("auth:a:b") == ("auth", "a:b")
    for bad in ("auth", "auth:", ":1", ""):
        with pytest.raises(HiveError, match="is not a task; write <plan>:<ID>"):
            names.parse_key(bad)


# what Docker Compose accepts as a project name
COMPOSE = re.compile(r"[a-z0-9][a-z0-9_-]*")
# IDs no parser accepts, should one ever reach a name: a shell's, a terminal's, another script's
HOSTILE = [
    ("auth", "two words"),
    ("auth", "$(rm -rf ~)"),
    ("auth", "`id`; echo"),
    ("Auth", "UPPER.Case"),
    ("auth", "-leading-dash"),
    ("auth", "_leading_underscore"),
    ("auth", "--"),
    ("auth", "ünïcødé-ταυ"),
    ("auth", "日本"),
    ("auth", "tab\there\nnewline"),
    ("-plan", "1"),
]


@pytest.mark.parametrize(("plan", "tid"), TASKS + HOSTILE)
def test_a_tasks_compose_project_is_a_name_compose_accepts(plan: str, tid: str):
    project = names.compose_project(plan, tid)
    assert COMPOSE.fullmatch(project) and project.startswith("hive-"), project
    assert project == names.compose_project(plan, tid)


def test_compose_projects_never_merge_tasks_lowercasing_or_slugging_would():
    pairs = [*SIMILAR, (("auth", "A"), ("auth", "a")), (("a-b", "1"), ("a", "b-1")), (("auth", "$(x)"), ("auth", "x"))]
    for a, b in pairs:
        assert names.compose_project(*a) != names.compose_project(*b), (a, b)


def test_a_worktrees_name_says_whose_it_is_and_its_worker():
    assert names.worktree_owner(names.worktree_dir("w12", "auth", "2.1", 3), "auth", "2.1") == (12, 3)
    assert names.worker_number(names.worker_id(12)) == 12
    for other in (
        names.worktree_dir("w1", "auth", "2_1", 3),  # a similar task's
        names.worktree_dir("w1", "auth", "2.1", 3) + "x",
        "w1-" + names.stem("auth", "2.1"),
        "README.md",
    ):
        assert names.worktree_owner(other, "auth", "2.1") is None, other
