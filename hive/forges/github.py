"""GitHub (github.com, or GitHub Enterprise Server by its API URL) through its REST API v3: the
calls pull-request mode and issue plans make, each answer read into hive.forges.base's records.
Every GET is conditional (hive.forges.http): asked again, an unchanged answer costs nothing."""

from __future__ import annotations

import re
import time
import urllib.parse
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from hive.forges.base import (
    CheckRun,
    Checks,
    Comment,
    Issue,
    Job,
    Merged,
    PullRequest,
    Repository,
    Review,
    ReviewComment,
    Step,
)
from hive.forges.http import Client, ForgeError

_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z ")  # each line of an Actions log


class GitHub:
    name = "GitHub"

    def __init__(self, api_url: str, repository: str, token: str, state: Path) -> None:
        self.repository = repository
        self.client = Client(api_url, token, state)
        self._repo = f"/repos/{repository}"
        self._permissions: dict[str, str] = {}
        self._me: str | None = None

    # --- the repository ------------------------------------------------------------------------

    def repo(self) -> Repository:
        data = self.client.get(self._repo).body
        return Repository(
            full_name=str(data.get("full_name", self.repository)),
            default_branch=str(data.get("default_branch", "")),
            can_push=bool((data.get("permissions") or {}).get("push")),
            url=str(data.get("html_url", "")),
        )

    def whoami(self) -> str:
        """The token's user (asked once): what it wrote — Hive's own comments and reviews — is
        never read back as someone's word."""
        if self._me is None:
            self._me = str(self.client.get("/user").body.get("login", ""))
        return self._me

    def branch_exists(self, name: str) -> bool:
        try:
            self.client.get(f"{self._repo}/branches/{_quote(name)}")
        except ForgeError as e:
            if e.status == 404:
                return False
            raise
        return True

    def permission(self, user: str) -> str:
        """What `user` may do in the repository ("admin", "write", "read", "none"): who may decide."""
        if user not in self._permissions:
            try:
                data = self.client.get(f"{self._repo}/collaborators/{_quote(user)}/permission").body
                self._permissions[user] = str(data.get("permission", "none"))
            except ForgeError as e:
                if e.status != 404:
                    raise
                self._permissions[user] = "none"
        return self._permissions[user]

    # --- pull requests -------------------------------------------------------------------------

    def find_pr(self, head: str) -> PullRequest | None:
        """The PR of branch `head` (open or not; the newest), if there is one: asked before one is
        opened, so a run killed between its push and its PR never opens two."""
        owner = self.repository.split("/", 1)[0]
        found = self.client.get(f"{self._repo}/pulls", {"state": "all", "head": f"{owner}:{head}", "per_page": 100})
        items = [p for p in found.body or () if (p.get("head") or {}).get("ref") == head]
        if not items:
            return None
        newest = max(items, key=lambda p: int(p.get("number", 0)))
        return self.pr(int(newest["number"]))

    def open_pr(self, head: str, base: str, title: str, body: str) -> PullRequest:
        data = self.client.request(
            "POST", f"{self._repo}/pulls", {"title": title, "head": head, "base": base, "body": body}
        )
        return _pull(data.body)

    def update_pr(self, number: int, body: str | None = None, state: str | None = None) -> PullRequest:
        change = {k: v for k, v in (("body", body), ("state", state)) if v is not None}
        return _pull(self.client.request("PATCH", f"{self._repo}/pulls/{number}", change).body)

    def add_labels(self, number: int, labels: tuple[str, ...]) -> None:
        if labels:
            self.client.request("POST", f"{self._repo}/issues/{number}/labels", {"labels": list(labels)})

    def pr(self, number: int) -> PullRequest:
        return _pull(self.client.get(f"{self._repo}/pulls/{number}").body)

    def checks(self, sha: str) -> Checks:
        runs = self.client.get(f"{self._repo}/commits/{sha}/check-runs", {"per_page": 100}).body or {}
        found = [_check(r) for r in runs.get("check_runs") or ()]
        combined = self.client.get(f"{self._repo}/commits/{sha}/status").body or {}
        for s in combined.get("statuses") or ():
            state = str(s.get("state", ""))
            done = state in ("success", "failure", "error")
            found.append(
                CheckRun(
                    name=str(s.get("context", "")),
                    status="completed" if done else "in_progress",
                    conclusion={"error": "failure"}.get(state, state) if done else "",
                    url=str(s.get("target_url") or ""),
                    summary=str(s.get("description") or ""),
                    status_api=True,
                )
            )
        return Checks(found)

    def changed(self, number: int, head: str, watch: str) -> bool:
        """One conditional request — the PR itself, or while its CI runs the check runs or the
        statuses of its head (`watch`: "pr", "checks", "statuses") — and whether the answer is
        new: a 304 says nothing changed and costs nothing of the rate limit."""
        path = {
            "checks": (f"{self._repo}/commits/{head}/check-runs", {"per_page": 100}),
            "statuses": (f"{self._repo}/commits/{head}/status", None),
        }.get(watch, (f"{self._repo}/pulls/{number}", None))
        return self.client.get(*path).changed

    def poll_factor(self) -> float:
        """How much slower than `[forge] poll` to look, as the hour's budget falls."""
        return self.client.budget().poll_factor()

    def looking(self) -> AbstractContextManager[None]:
        return self.client.one_look()

    def job(self, job_id: int) -> Job:
        data = self.client.get(f"{self._repo}/actions/jobs/{job_id}").body
        steps = tuple(Step(str(s.get("name", "")), str(s.get("conclusion") or "")) for s in data.get("steps") or ())
        return Job(int(data.get("id", job_id)), str(data.get("name", "")), str(data.get("html_url") or ""), steps)

    def job_log(self, job_id: int) -> str:
        """The job's log without the time stamp GitHub puts before each line, and without what
        ran after its first error (the clean-up steps): its last lines are the ones that failed."""
        text = self.client.text_elsewhere(f"{self._repo}/actions/jobs/{job_id}/logs")
        lines = [_STAMP.sub("", line, count=1) for line in text.splitlines()]
        error = next((i for i, line in enumerate(lines) if line.startswith("##[error]")), None)
        return "\n".join(lines if error is None else lines[: error + 1])

    def reviews(self, number: int) -> list[Review]:
        return [_review(r) for r in self.client.pages(f"{self._repo}/pulls/{number}/reviews")]

    def review_comments(self, number: int) -> list[ReviewComment]:
        return [_review_comment(c) for c in self.client.pages(f"{self._repo}/pulls/{number}/comments")]

    def comments(self, number: int, since: float = 0.0) -> list[Comment]:
        """The conversation's comments, oldest first; with `since` (epoch seconds) only those
        made or edited since then (GitHub's `since=`: a shorter answer to read and keep)."""
        params = {"since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since))} if since else None
        return [_comment(c) for c in self.client.pages(f"{self._repo}/issues/{number}/comments", params)]

    def post_review(self, number: int, event: str, body: str, commit: str) -> None:
        self.client.request(
            "POST", f"{self._repo}/pulls/{number}/reviews", {"event": event, "body": body, "commit_id": commit}
        )

    def merge(self, number: int, sha: str, method: str, title: str) -> Merged:
        said = self.client.request(
            "PUT", f"{self._repo}/pulls/{number}/merge", {"sha": sha, "merge_method": method, "commit_title": title}
        )
        return Merged(str(said.body.get("sha", "")))

    def delete_branch(self, name: str) -> None:
        try:
            self.client.request("DELETE", f"{self._repo}/git/refs/heads/{_quote(name)}")
        except ForgeError as e:
            if e.status not in (404, 422):  # gone already
                raise

    # --- issues --------------------------------------------------------------------------------

    def issues(self, state: str, labels: tuple[str, ...]) -> list[Issue]:
        params: dict[str, Any] = {"state": state}
        if labels:
            params["labels"] = ",".join(labels)
        return [_issue(i) for i in self.client.pages(f"{self._repo}/issues", params)]

    def issue(self, number: int) -> Issue:
        return _issue(self.client.get(f"{self._repo}/issues/{number}").body)

    def sub_issues(self, number: int) -> list[Issue]:
        try:
            return [_issue(i) for i in self.client.pages(f"{self._repo}/issues/{number}/sub_issues")]
        except ForgeError as e:
            if e.status == 404:  # a forge without sub-issues
                return []
            raise

    def comment(self, number: int, body: str) -> Comment:
        return _comment(self.client.request("POST", f"{self._repo}/issues/{number}/comments", {"body": body}).body)

    def edit_comment(self, comment_id: int, body: str) -> Comment:
        return _comment(self.client.request("PATCH", f"{self._repo}/issues/comments/{comment_id}", {"body": body}).body)


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="/")


def _login(user: Any) -> str:
    return str(user.get("login", "")) if isinstance(user, dict) else ""


def _pull(data: dict[str, Any]) -> PullRequest:
    head, base = data.get("head") or {}, data.get("base") or {}
    return PullRequest(
        number=int(data["number"]),
        url=str(data.get("html_url", "")),
        state=str(data.get("state", "")),
        merged=bool(data.get("merged") or data.get("merged_at")),
        head_ref=str(head.get("ref", "")),
        head_sha=str(head.get("sha", "")),
        base_ref=str(base.get("ref", "")),
        mergeable=data.get("mergeable"),
        mergeable_state=str(data.get("mergeable_state") or "unknown"),
        title=str(data.get("title", "")),
        merged_by=_login(data.get("merged_by")),
    )


def _check(data: dict[str, Any]) -> CheckRun:
    output = data.get("output") or {}
    app = data.get("app") or {}
    slug = str(app.get("slug", "")) if isinstance(app, dict) else ""
    return CheckRun(
        name=str(data.get("name", "")),
        status=str(data.get("status", "")),
        conclusion=str(data.get("conclusion") or ""),
        url=str(data.get("html_url") or data.get("details_url") or ""),
        summary=str(output.get("summary") or ""),
        text=str(output.get("text") or ""),
        job_id=int(data.get("id", 0)) if slug == "github-actions" else 0,
        app=slug,
    )


def _review(data: dict[str, Any]) -> Review:
    return Review(
        id=int(data.get("id", 0)),
        user=_login(data.get("user")),
        state=str(data.get("state", "")),
        body=str(data.get("body") or ""),
        commit_id=str(data.get("commit_id") or ""),
        submitted_at=str(data.get("submitted_at") or ""),
        url=str(data.get("html_url") or ""),
    )


def _review_comment(data: dict[str, Any]) -> ReviewComment:
    return ReviewComment(
        id=int(data.get("id", 0)),
        user=_login(data.get("user")),
        body=str(data.get("body") or ""),
        path=str(data.get("path") or ""),
        line=int(data.get("line") or data.get("original_line") or 0),
        diff_hunk=str(data.get("diff_hunk") or ""),
        review_id=int(data.get("pull_request_review_id") or 0),
        in_reply_to=int(data.get("in_reply_to_id") or 0),
        created_at=str(data.get("created_at") or ""),
        url=str(data.get("html_url") or ""),
    )


def _comment(data: dict[str, Any]) -> Comment:
    return Comment(
        id=int(data.get("id", 0)),
        user=_login(data.get("user")),
        body=str(data.get("body") or ""),
        created_at=str(data.get("created_at") or ""),
        updated_at=str(data.get("updated_at") or ""),
        url=str(data.get("html_url") or ""),
    )


def _issue(data: dict[str, Any]) -> Issue:
    return Issue(
        number=int(data["number"]),
        title=str(data.get("title") or ""),
        body=str(data.get("body") or ""),
        state=str(data.get("state", "")),
        user=_login(data.get("user")),
        labels=tuple(str(label.get("name", "")) for label in data.get("labels") or () if isinstance(label, dict)),
        url=str(data.get("html_url") or ""),
        updated_at=str(data.get("updated_at") or ""),
        is_pull_request="pull_request" in data,
    )
