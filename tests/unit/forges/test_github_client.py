"""hive/forges/github.py and http.py against the scripted forge (tests/forge): the calls pull-
request mode makes, read into records; conditional requests that cost nothing when nothing changed;
the rate limit waited out, never pressed; the token never sent where it does not belong."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from forge import Forge
from forge.fixture import TOKEN, forge_fixture  # noqa: F401 (the `forge` fixture)

from hive.forges.github import GitHub
from hive.forges.http import ForgeError, RateLimited


def client(forge: Forge, tmp_path: Path) -> GitHub:
    return GitHub(forge.url, f"{forge.owner}/{forge.repo}", TOKEN, tmp_path / "state")


def task_branch(forge: Forge, name: str = "hive/p/1") -> str:
    """main with a first commit, and `name` one commit ahead of it, as a push of Hive's leaves them."""
    main = forge.push_commit("main", {"README.md": "hi\n"}, "first")
    subprocess.run(["git", "-C", str(forge.remote), "update-ref", f"refs/heads/{name}", main], check=True)
    return forge.push_commit(name, {"a.txt": "a\n"}, "task work")


def test_a_pr_is_found_by_its_head_before_one_is_opened_and_read_back(forge: Forge, tmp_path: Path):
    task_branch(forge)
    gh = client(forge, tmp_path)
    assert gh.find_pr("hive/p/1") is None
    pr = gh.open_pr("hive/p/1", "main", "Task 1", "body")
    assert (pr.number, pr.state, pr.head_ref, pr.base_ref) == (pr.number, "open", "hive/p/1", "main")
    assert gh.find_pr("hive/p/1") == gh.pr(pr.number)
    with pytest.raises(ForgeError, match="422"):
        gh.open_pr("hive/p/1", "main", "Task 1 again", "body")


def test_an_unchanged_answer_costs_nothing(forge: Forge, tmp_path: Path):
    task_branch(forge)
    gh = client(forge, tmp_path)
    number = gh.open_pr("hive/p/1", "main", "Task 1", "body").number
    gh.pr(number)
    billed = forge.api_calls
    for _ in range(5):
        gh.pr(number)
        gh.reviews(number)
    assert forge.api_calls == billed + 1  # the reviews' first answer; every other one was a 304


def test_checks_of_a_commit_with_the_actions_job_log_fetched_without_the_token(forge: Forge, tmp_path: Path):
    sha = task_branch(forge)
    forge.add_check(
        sha, "tests", conclusion="failure", log="line 1\nE assert 1 == 2\n", steps=(("Run pytest", "failure"),)
    )
    forge.add_status(sha, "lint", "success", "fine")
    gh = client(forge, tmp_path)
    checks = gh.checks(sha)
    assert [c.name for c in checks.failed] == ["tests"] and not checks.green
    [failed] = checks.failed
    assert failed.job_id and "E assert 1 == 2" in gh.job_log(failed.job_id)
    assert [s.name for s in gh.job(failed.job_id).steps if s.conclusion == "failure"] == ["Run pytest"]


def test_a_spent_hour_is_waited_out_and_no_call_is_made_meanwhile(forge: Forge, tmp_path: Path):
    gh = client(forge, tmp_path)
    forge.remaining = 0
    forge.reset_at = int(time.time()) + 120
    with pytest.raises(RateLimited) as refused:
        gh.whoami()
    assert refused.value.until >= forge.reset_at - 1
    calls = len(forge.calls)
    with pytest.raises(RateLimited):
        gh.whoami()  # not asked: the budget says to wait
    assert len(forge.calls) == calls


def test_a_secondary_limit_is_waited_out(forge: Forge, tmp_path: Path):
    gh = client(forge, tmp_path)
    forge.secondary_limit(retry_after=30)
    with pytest.raises(RateLimited) as refused:
        gh.whoami()
    assert 25 < refused.value.until - time.time() <= 31


def test_the_token_is_in_no_error_and_no_kept_file(forge: Forge, tmp_path: Path):
    gh = client(forge, tmp_path)
    gh.whoami()
    with pytest.raises(ForgeError) as failed:
        gh.issue(404404)
    assert TOKEN not in str(failed.value) and TOKEN not in repr(failed.value)
    for path in (tmp_path / "state").rglob("*"):
        if path.is_file():
            assert TOKEN not in path.read_text(errors="replace"), path
