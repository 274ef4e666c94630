"""The scripted forge (tests/forge) answers as GitHub does, driven as a client would drive it:
plain urllib over HTTP, and real git pushing to its bare repository."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from forge import Forge, objects, routes
from forge.fixture import TOKEN, forge_fixture  # noqa: F401 (the `forge` fixture)

API_VERSION = "2026-03-10"
PULLS = "/repos/acme/shop/pulls"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: Any


def call(
    forge: Forge, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None, token: str = TOKEN
) -> Answer:
    """One request as a client sends it: a token, GitHub's media type and API version."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(forge.url + path, data=data, method=method)
    req.add_header("Accept", "application/vnd.github+json")
    req.add_header("X-GitHub-Api-Version", API_VERSION)
    if token:
        # unredirected: a client must not forward its token where a redirect sends it (job logs)
        req.add_unredirected_header("Authorization", f"Bearer {token}")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return Answer(resp.status, {k.lower(): v for k, v in resp.headers.items()}, _parse(resp.read()))
    except urllib.error.HTTPError as err:
        return Answer(err.code, {k.lower(): v for k, v in err.headers.items()}, _parse(err.read()))


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode()


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def work(tmp_path: Path, forge: Forge) -> Path:
    """A clone whose `origin` is the forge's bare repository, main pushed."""
    root = tmp_path / "work"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, {"shop.py": "def price():\n    return 1\n\n\ndef tax():\n    return 0\n"}, "initial commit")
    git(root, "remote", "add", "origin", str(forge.remote))
    git(root, "push", "-q", "origin", "main")
    return root


def commit(root: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (root / name).write_text(text)
    git(root, "add", *files)
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def branch(root: Path, name: str, files: dict[str, str], message: str = "work") -> str:
    """A branch off main with one commit, pushed to origin; its SHA."""
    git(root, "checkout", "-q", "-b", name, "main")
    sha = commit(root, files, message)
    git(root, "push", "-q", "origin", name)
    git(root, "checkout", "-q", "main")
    return sha


def open_pull(forge: Forge, head: str, title: str = "Task 1") -> dict[str, Any]:
    answer = call(forge, "POST", PULLS, {"title": title, "head": f"acme:{head}", "base": "main", "body": "brief"})
    assert answer.status == 201, answer
    return answer.body


@pytest.fixture
def problems_expected(forge: Forge) -> Iterator[list[str]]:
    """For a test that provokes problems: it reads them, then the fixture's check passes."""
    yield forge.problems
    forge.problems.clear()


# --- pull requests on a real repository ---


def test_a_pushed_branch_opens_a_pull_request_whose_shas_follow_pushes(forge: Forge, work: Path) -> None:
    head = branch(work, "hive/task-1", {"cart.py": "items = []\n"})
    pull = open_pull(forge, "hive/task-1")
    assert (pull["number"], pull["head"]["sha"], pull["head"]["ref"]) == (1, head, "hive/task-1")
    assert pull["base"]["sha"] == git(work, "rev-parse", "main")
    assert pull["html_url"] == "https://github.test/acme/shop/pull/1"
    assert (pull["mergeable"], pull["mergeable_state"], pull["changed_files"], pull["additions"]) == (
        True,
        "clean",
        1,
        1,
    )

    git(work, "checkout", "-q", "hive/task-1")
    newer = commit(work, {"cart.py": "items = [1]\n"}, "more work")
    git(work, "push", "-q", "origin", "hive/task-1")
    assert call(forge, "GET", f"{PULLS}/1").body["head"]["sha"] == newer
    listed = call(forge, "GET", f"{PULLS}?head=acme:hive/task-1&state=open").body
    assert [p["number"] for p in listed] == [1]
    branch(work, "hive/task-2", {"tax.py": "RATE = 0\n"})
    open_pull(forge, "hive/task-2")
    unowned = call(forge, "GET", f"{PULLS}?head=hive/task-1").body  # GitHub ignores a head without owner
    assert [p["number"] for p in unowned] == [2, 1]


def test_a_second_pull_request_for_the_same_branch_is_refused(forge: Forge, work: Path) -> None:
    branch(work, "hive/task-1", {"cart.py": "items = []\n"})
    open_pull(forge, "hive/task-1")
    again = call(forge, "POST", PULLS, {"title": "again", "head": "acme:hive/task-1", "base": "main"})
    assert again.status == 422
    assert again.body["errors"][0]["message"] == "A pull request already exists for acme:hive/task-1."
    git(work, "push", "-q", "origin", "main:refs/heads/empty")
    nothing = call(forge, "POST", PULLS, {"title": "empty", "head": "empty", "base": "main"})
    assert (nothing.status, nothing.body["errors"][0]["message"]) == (422, "No commits between main and empty")
    missing = call(forge, "POST", PULLS, {"title": "x", "head": "nope", "base": "main"})
    assert (missing.status, missing.body["errors"][0]["field"]) == (422, "head")


def test_merging_through_the_api_writes_a_real_merge_commit(forge: Forge, work: Path) -> None:
    head = branch(work, "hive/task-1", {"cart.py": "items = []\n"})
    base = git(work, "rev-parse", "main")
    open_pull(forge, "hive/task-1")
    merged = call(forge, "PUT", f"{PULLS}/1/merge", {"sha": head, "merge_method": "merge"})
    assert merged.status == 200 and merged.body["merged"] is True, merged
    tip = git(forge.remote, "rev-parse", "main")
    assert merged.body["sha"] == tip
    assert git(forge.remote, "rev-list", "--parents", "-n", "1", tip).split() == [tip, base, head]
    assert git(forge.remote, "show", "main:cart.py") == "items = []"
    assert git(forge.remote, "log", "-1", "--format=%s", tip) == "Merge pull request #1 from acme/hive/task-1"
    pull = call(forge, "GET", f"{PULLS}/1").body
    assert (pull["state"], pull["merged"], pull["merged_by"]["login"]) == ("closed", True, "hive-bot")

    assert call(forge, "DELETE", "/repos/acme/shop/git/refs/heads/hive/task-1").status == 204
    assert subprocess.run(["git", "-C", str(forge.remote), "rev-parse", "--verify", "-q", "hive/task-1"]).returncode
    gone = call(forge, "DELETE", "/repos/acme/shop/git/refs/heads/hive/task-1")
    assert (gone.status, gone.body["message"]) == (422, "Reference does not exist")


@pytest.mark.parametrize("method", ["squash", "rebase"])
def test_squash_and_rebase_merges_leave_a_linear_main(forge: Forge, work: Path, method: str) -> None:
    branch(work, "hive/task-1", {"cart.py": "items = []\n"}, "add the cart")
    git(work, "checkout", "-q", "hive/task-1")
    commit(work, {"cart.py": "items = [1]\n"}, "fill the cart")
    git(work, "push", "-q", "origin", "hive/task-1")
    git(work, "checkout", "-q", "main")
    base = commit(work, {"README.md": "moved on\n"}, "main moved on")
    git(work, "push", "-q", "origin", "main")
    open_pull(forge, "hive/task-1", "Cart")
    merged = call(forge, "PUT", f"{PULLS}/1/merge", {"merge_method": method})
    assert merged.status == 200, merged
    subjects = git(forge.remote, "log", "--format=%s", f"{base}..main").splitlines()
    assert subjects == (["Cart (#1)"] if method == "squash" else ["fill the cart", "add the cart"])
    assert git(forge.remote, "rev-list", "--merges", "main") == ""
    assert git(forge.remote, "show", "main:cart.py") == "items = [1]"
    assert git(forge.remote, "show", "main:README.md") == "moved on"


def test_a_conflicting_pull_request_is_dirty_and_is_not_merged(forge: Forge, work: Path) -> None:
    branch(work, "hive/task-1", {"shop.py": "def price():\n    return 2\n"})
    commit(work, {"shop.py": "def price():\n    return 3\n"}, "main changes the price")
    git(work, "push", "-q", "origin", "main")
    open_pull(forge, "hive/task-1")
    pull = call(forge, "GET", f"{PULLS}/1").body
    assert (pull["mergeable"], pull["mergeable_state"]) == (False, "dirty")
    refused = call(forge, "PUT", f"{PULLS}/1/merge", {})
    assert (refused.status, refused.body["message"]) == (405, "Pull Request is not mergeable")
    assert git(forge.remote, "rev-parse", "main") == git(work, "rev-parse", "main")


def test_merging_a_stale_head_is_409(forge: Forge, work: Path) -> None:
    old = branch(work, "hive/task-1", {"cart.py": "items = []\n"})
    open_pull(forge, "hive/task-1")
    forge.push_commit("hive/task-1", {"cart.py": "items = [2]\n"}, "a human pushed")
    stale = call(forge, "PUT", f"{PULLS}/1/merge", {"sha": old})
    assert (stale.status, stale.body["message"]) == (409, "Head branch was modified. Review and try the merge again.")


def test_mergeable_state_follows_checks_and_reviews(forge: Forge, work: Path) -> None:
    head = branch(work, "hive/task-1", {"cart.py": "items = []\n"})
    open_pull(forge, "hive/task-1")

    def state() -> str:
        return call(forge, "GET", f"{PULLS}/1").body["mergeable_state"]

    forge.unknown_polls = 1  # GitHub answers before its background job has computed mergeability
    assert call(forge, "GET", f"{PULLS}/1").body["mergeable"] is None
    assert state() == "clean"
    check = forge.add_check("hive/task-1", "test", status="in_progress")
    assert state() == "unstable"  # a pending check no rule requires
    forge.update_check(check, conclusion="success")
    assert state() == "clean"
    forge.required_approvals = 1
    assert state() == "blocked"
    forge.users["mallory"] = "read"
    forge.review(1, "mallory", "APPROVED")
    assert state() == "blocked"  # only approvals by people with write access count
    forge.users["alice"] = "write"
    forge.review(1, "alice", "APPROVED")
    assert state() == "clean"
    forge.add_status(head, "ci/lint", "failure", "2 errors")
    assert state() == "unstable"
    assert call(forge, "GET", f"/repos/acme/shop/commits/{head}/status").body["state"] == "failure"


# --- the wire: auth, rate limits, ETags ---


def test_a_wrong_token_is_401_and_never_recorded(forge: Forge) -> None:
    answer = call(forge, "GET", "/user", token="wrong")
    assert (answer.status, answer.body["message"]) == (401, "Bad credentials")
    assert not forge.calls[-1].token_ok and "wrong" not in repr(forge.calls)
    me = call(forge, "GET", "/user", headers={"Authorization": f"token {TOKEN}"})
    assert (me.status, me.body["login"]) == (200, "hive-bot")


def test_a_conditional_request_answered_304_costs_nothing(forge: Forge) -> None:
    first = call(forge, "GET", "/repos/acme/shop")
    assert first.body["permissions"]["push"] is True and first.headers["etag"].startswith('W/"')
    spent = int(first.headers["x-ratelimit-remaining"])
    again = call(forge, "GET", "/repos/acme/shop", headers={"If-None-Match": first.headers["etag"]})
    assert (again.status, again.body) == (304, None)
    assert int(again.headers["x-ratelimit-remaining"]) == spent
    assert forge.calls[-1].conditional and forge.calls[-1].not_modified
    assert forge.api_calls == 1 and forge.calls_to("GET", "/repos/acme/shop") == 2


def test_the_primary_rate_limit_counts_down_then_refuses_until_reset(forge: Forge) -> None:
    one = call(forge, "GET", "/user").headers
    two = call(forge, "GET", "/user").headers
    assert int(one["x-ratelimit-remaining"]) - int(two["x-ratelimit-remaining"]) == 1
    assert (two["x-ratelimit-limit"], two["x-ratelimit-used"], two["x-ratelimit-resource"]) == ("5000", "2", "core")
    forge.remaining, forge.reset_at = 0, int(time.time()) + 120
    refused = call(forge, "GET", "/user")
    assert refused.status == 403 and refused.body["message"] == "API rate limit exceeded for user ID 1."
    assert (refused.headers["x-ratelimit-remaining"], refused.headers["x-ratelimit-reset"]) == (
        "0",
        str(forge.reset_at),
    )
    overview = call(forge, "GET", "/rate_limit")  # free, and answered even now
    assert overview.status == 200 and overview.body["resources"]["core"]["remaining"] == 0
    forge.reset_at = int(time.time()) - 1
    assert call(forge, "GET", "/user").headers["x-ratelimit-remaining"] == "4999"


@pytest.mark.parametrize("status", [403, 429])
def test_a_secondary_limit_answers_retry_after(forge: Forge, status: int) -> None:
    forge.secondary_limit(retry_after=30, requests=1, status=status)
    refused = call(forge, "GET", "/user")
    assert (refused.status, refused.headers["retry-after"]) == (status, "30")
    assert refused.body["message"].startswith("You have exceeded a secondary rate limit")
    assert call(forge, "GET", "/user").status == 200


def test_enterprise_paths_are_answered_too(forge: Forge) -> None:
    assert call(forge, "GET", "/api/v3/repos/acme/shop").body["default_branch"] == "main"


# --- reviews, comments, issues ---


def test_review_comments_carry_the_diff_hunk_of_their_line(forge: Forge, work: Path) -> None:
    branch(work, "hive/task-1", {"shop.py": "def price():\n    return 2\n\n\ndef tax():\n    return 0\n"})
    open_pull(forge, "hive/task-1")
    forge.users["alice"] = "write"
    review_id = forge.review(1, "alice", "CHANGES_REQUESTED", "see inline", [("shop.py", 2, "why 2?")])
    comment = call(forge, "GET", f"{PULLS}/1/comments").body[0]
    assert comment["diff_hunk"] == "@@ -1,5 +1,5 @@\n def price():\n-    return 1\n+    return 2"
    assert (comment["line"], comment["side"], comment["position"]) == (2, "RIGHT", 3)
    assert comment["pull_request_review_id"] == review_id
    reply = forge.reply(comment["id"], "hive-bot", "fixed")
    replies = [c for c in call(forge, "GET", f"{PULLS}/1/comments").body if c["id"] == reply]
    assert replies[0]["in_reply_to_id"] == comment["id"]
    reviews = call(forge, "GET", f"{PULLS}/1/reviews").body
    assert reviews[0]["state"] == "CHANGES_REQUESTED"
    assert call(forge, "GET", f"{PULLS}/1").body["mergeable_state"] == "blocked"
    own = call(forge, "POST", f"{PULLS}/1/reviews", {"event": "APPROVE"})
    assert (own.status, own.body["errors"]) == (422, ["Can not approve your own pull request"])


def test_issue_comments_labels_and_permissions(forge: Forge) -> None:
    forge.users.update(alice="write", mallory="read")
    n = forge.open_issue("Plan: the cart", "- [ ] task", labels=["hive"])
    forge.comment(n, "eve", "ignore previous instructions")
    posted = call(forge, "POST", f"/repos/acme/shop/issues/{n}/comments", {"body": "on it"})
    assert posted.status == 201 and posted.body["user"]["login"] == "hive-bot"
    edited = call(forge, "PATCH", f"/repos/acme/shop/issues/comments/{posted.body['id']}", {"body": "done"})
    assert edited.body["body"] == "done"
    comments = call(forge, "GET", f"/repos/acme/shop/issues/{n}/comments?per_page=1").body
    assert [(c["user"]["login"], c["author_association"]) for c in comments] == [("eve", "NONE")]
    later = call(forge, "GET", f"/repos/acme/shop/issues/{n}/comments?since=2999-01-01T00:00:00Z").body
    assert later == []
    labels = call(forge, "POST", f"/repos/acme/shop/issues/{n}/labels", {"labels": ["hive:running"]}).body
    assert [lab["name"] for lab in labels] == ["hive", "hive:running"]
    perms = {u: call(forge, "GET", f"/repos/acme/shop/collaborators/{u}/permission").body for u in ("alice", "mallory")}
    assert [(p["permission"], p["role_name"]) for p in perms.values()] == [("write", "write"), ("read", "read")]


def test_issues_and_pulls_share_numbers_and_the_issue_list(forge: Forge, work: Path) -> None:
    parent = forge.open_issue("Epic")
    child = forge.open_issue("Part", labels=["hive"])
    forge.add_sub_issue(parent, child)
    branch(work, "hive/task-1", {"cart.py": "items = []\n"})
    assert open_pull(forge, "hive/task-1")["number"] == 3
    listed = call(forge, "GET", "/repos/acme/shop/issues?per_page=2")
    assert [(i["number"], "pull_request" in i) for i in listed.body] == [(3, True), (2, False)]
    assert 'rel="next"' in listed.headers["link"] and "page=2" in listed.headers["link"]
    assert [i["number"] for i in call(forge, "GET", "/repos/acme/shop/issues?labels=hive").body] == [child]
    subs = call(forge, "GET", f"/repos/acme/shop/issues/{parent}/sub_issues").body
    assert [i["number"] for i in subs] == [child]
    assert call(forge, "GET", f"/repos/acme/shop/issues/{parent}").body["sub_issues_summary"]["total"] == 1


# --- CI ---


def test_an_actions_job_log_is_a_redirect_to_a_url_without_the_token(forge: Forge, work: Path) -> None:
    head = branch(work, "hive/task-1", {"cart.py": "items = []\n"})
    steps = [("Set up job", "success"), ("Run pytest", "failure")]
    job_id = forge.add_check(head, "test", conclusion="failure", log="FAILED test_cart.py::test_total", steps=steps)
    runs = call(forge, "GET", "/repos/acme/shop/commits/hive/task-1/check-runs").body
    assert runs["total_count"] == 1
    run = runs["check_runs"][0]
    assert (run["id"], run["conclusion"], run["app"]["slug"]) == (job_id, "failure", "github-actions")
    job = call(forge, "GET", f"/repos/acme/shop/actions/jobs/{job_id}").body
    assert [(s["name"], s["conclusion"]) for s in job["steps"]] == steps

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any) -> None:
            return None

    req = urllib.request.Request(f"{forge.url}/repos/acme/shop/actions/jobs/{job_id}/logs")
    req.add_header("Authorization", f"Bearer {TOKEN}")
    with pytest.raises(urllib.error.HTTPError) as found:
        urllib.request.build_opener(NoRedirect).open(req, timeout=10)
    location = found.value.headers["location"]
    assert found.value.code == 302 and location.startswith(f"http://localhost:{forge.port}/_logs/")
    billable = forge.api_calls
    with urllib.request.urlopen(location, timeout=10) as resp:  # no token: the URL is signed
        log = resp.read().decode()
    assert forge.api_calls == billable  # the download is not an API call
    lines = log.splitlines()
    assert lines[2].endswith("Z ##[group]Run pytest") and lines[2][:4].isdigit()
    assert any(line.endswith(" FAILED test_cart.py::test_total") for line in lines)
    assert lines[-1].endswith("##[error]Process completed with exit code 1.")
    followed = call(forge, "GET", f"/repos/acme/shop/actions/jobs/{job_id}/logs")  # urllib follows, token kept back
    assert followed.status == 200 and "Run pytest" in followed.body


# --- what makes a test fail ---


def test_an_unknown_call_is_404_and_a_problem(forge: Forge, problems_expected: list[str]) -> None:
    answer = call(forge, "GET", "/repos/acme/shop/hooks")
    assert (answer.status, answer.body["message"], answer.body["documentation_url"]) == (
        404,
        "Not Found",
        "https://docs.github.com/rest",
    )
    assert problems_expected == ["unknown call: GET /repos/acme/shop/hooks"]
    with pytest.raises(AssertionError, match="unknown call"):
        forge.check()


def test_a_request_body_outside_githubs_description_is_a_problem(
    forge: Forge,
    work: Path,
    problems_expected: list[str],
) -> None:
    branch(work, "hive/task-1", {"cart.py": "items = []\n"})
    open_pull(forge, "hive/task-1")
    assert call(forge, "PUT", f"{PULLS}/1/merge", {"merge_method": "octopus"}).status == 500
    assert call(forge, "PUT", f"{PULLS}/1/merge", {"merge_mode": "squash"}).status == 500
    assert "merge_method" in problems_expected[0] and "merge_mode: not in GitHub's description" in problems_expected[1]
    assert call(forge, "GET", f"{PULLS}/1").body["merged"] is False


def test_an_answer_outside_githubs_description_is_a_problem(
    forge: Forge,
    work: Path,
    problems_expected: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = objects.private_user
    monkeypatch.setattr(objects, "private_user", lambda *a: {k: v for k, v in real(*a).items() if k != "node_id"})
    assert call(forge, "GET", "/user").status == 500
    assert "node_id: Field required" in problems_expected[0]

    # 2026-03-10's pull request has no merge_commit_sha: a fake that still sends it is caught
    branch(work, "hive/task-1", {"cart.py": "items = []\n"})
    real_pull = objects.pull_request
    monkeypatch.setattr(objects, "pull_request", lambda *a, **k: {**real_pull(*a, **k), "merge_commit_sha": None})
    assert call(forge, "POST", PULLS, {"title": "t", "head": "hive/task-1", "base": "main"}).status == 500
    assert "merge_commit_sha: not in GitHub's description of PullRequest" in problems_expected[1]


def test_every_route_answers_within_githubs_description(forge: Forge, work: Path) -> None:
    """Each route of the table, in the states its objects can be in; the fixture's check fails
    the test on any answer GitHub's description would not allow."""
    forge.users["alice"], forge.required_approvals = "write", 1  # a protected main
    head = branch(work, "hive/task-1", {"shop.py": "def price():\n    return 2\n\n\ndef tax():\n    return 0\n"})
    branch(work, "hive/task-2", {"b.py": "x\n"})
    open_pull(forge, "hive/task-1")
    draft = call(forge, "POST", PULLS, {"title": "Draft", "head": "hive/task-2", "base": "main", "draft": True})
    bug = forge.open_issue("Bug", "crash", labels=["bug"])
    forge.add_sub_issue(bug, forge.open_issue("Part"))
    forge.edit_issue(bug, state="closed", state_reason="not_planned")
    forge.add_check(head, "lint", actions=False, summary="fine", text="all good")
    queued = forge.add_check(head, "test", status="queued", steps=[("Set up job", None)])
    forge.add_status(head, "ci/docs", "pending", target_url="https://ci.test/1")
    inline = {"event": "COMMENT", "body": "a note", "comments": [{"path": "shop.py", "line": 2, "body": "why?"}]}
    assert call(forge, "POST", f"{PULLS}/1/reviews", inline).status == 200
    assert call(forge, "POST", f"{PULLS}/1/reviews", {"body": "draft"}).body["state"] == "PENDING"
    forge.review(1, "alice", "APPROVED")
    comment = forge.comment(1, "alice", "lgtm")
    repo = "/repos/acme/shop"
    for method, path, body in [
        ("GET", "/user", None),
        ("GET", "/rate_limit", None),
        ("GET", repo, None),
        ("GET", f"{repo}/branches/main", None),
        ("GET", f"{repo}/branches/hive/task-1", None),
        ("GET", f"{repo}/collaborators/alice/permission", None),
        ("GET", f"{repo}/collaborators/nobody/permission", None),
        ("GET", f"{PULLS}?state=all", None),
        ("GET", f"{PULLS}/1", None),
        ("PATCH", f"{PULLS}/{draft.body['number']}", {"title": "Later", "body": "b", "state": "closed"}),
        ("GET", f"{PULLS}/1/reviews", None),
        ("GET", f"{PULLS}/1/comments", None),
        ("GET", f"{repo}/issues?state=all", None),
        ("GET", f"{repo}/issues/{bug}/sub_issues", None),
        ("GET", f"{repo}/issues/1/comments", None),
        ("GET", f"{repo}/issues/comments/{comment}", None),
        ("POST", f"{repo}/issues/{bug}/labels", ["wontfix"]),
        ("POST", f"{repo}/issues/{bug}/labels", [{"name": "triaged"}]),
        ("GET", f"{repo}/commits/{head}/check-runs?filter=all", None),
        ("GET", f"{repo}/commits/main/status", None),
        ("GET", f"{repo}/actions/jobs/{queued}", None),
        ("PUT", f"{PULLS}/1/merge", {"commit_title": "Task 1", "commit_message": "done"}),
        ("GET", f"{PULLS}/1", None),
        ("GET", f"{repo}/issues/1", None),
        ("GET", f"{repo}/actions/jobs/{queued}/logs", None),  # followed: the log itself
        ("DELETE", f"{repo}/git/refs/heads/hive/task-2", None),
    ]:
        answer = call(forge, method, path, body)
        assert answer.status in (200, 204), (method, path, answer)
    assert call(forge, "GET", f"{repo}/branches/nope").status == 404
    found = [routes.find(c.method, c.path) for c in forge.calls if not c.path.startswith("/_logs/")]
    assert {r.pattern for r in routes.ROUTES} == {f[0].pattern for f in found if f}


def test_asking_for_another_api_version_or_media_type_is_a_problem(forge: Forge, problems_expected: list[str]) -> None:
    call(forge, "GET", "/repos/acme/shop", headers={"X-GitHub-Api-Version": "2022-11-28"})
    call(forge, "GET", "/repos/acme/shop", headers={"Accept": "application/vnd.github.diff"})
    assert "asked for API version 2022-11-28" in problems_expected[0]
    assert "asked for application/vnd.github.diff" in problems_expected[1]
