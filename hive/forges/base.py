"""What Hive asks of a forge (GitHub today: hive/forges/github.py), as one protocol and the typed
records its answers come in. Everything in these records that a person wrote on the forge — a
title, a body, a comment, a review, a CI log — is untrusted text: it reaches an agent only as
quoted data under a heading that names its author, and decides nothing unless its author has
write access (engine/pullrequest.py says what is done with it)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

WRITE = frozenset({"admin", "maintain", "write"})  # the permissions that may decide


@dataclass(frozen=True)
class Repository:
    full_name: str  # owner/name
    default_branch: str
    can_push: bool  # the token's user may push (the `permissions.push` of the answer)
    url: str


@dataclass(frozen=True)
class PullRequest:
    number: int
    url: str  # its page on the forge
    state: str  # "open" | "closed"
    merged: bool
    head_ref: str
    head_sha: str
    base_ref: str
    mergeable: bool | None  # None: the forge has not computed it yet
    mergeable_state: str  # "clean", "dirty", "blocked", "unstable", "behind", "unknown", ...
    title: str = ""
    merged_by: str = ""


@dataclass(frozen=True)
class Step:
    name: str
    conclusion: str  # "success", "failure", ...


@dataclass(frozen=True)
class CheckRun:
    """A check on a commit (a check run of a CI app, or a commit status)."""

    name: str
    status: str  # "queued" | "in_progress" | "completed"
    conclusion: str  # "success", "failure", "neutral", "cancelled", "skipped", "timed_out", "action_required", ""
    url: str
    summary: str = ""
    text: str = ""
    job_id: int = 0  # a GitHub Actions job: its steps and log can be had
    app: str = ""
    status_api: bool = False  # a commit status (the older API some CI services use), not a check run

    @property
    def done(self) -> bool:
        return self.status == "completed"

    @property
    def passed(self) -> bool:
        return self.done and self.conclusion in ("success", "neutral", "skipped")


@dataclass(frozen=True)
class Job:
    """A GitHub Actions job: its steps (the one that failed is named in the brief) and its run's page."""

    id: int
    name: str
    url: str
    steps: tuple[Step, ...] = ()


@dataclass(frozen=True)
class Review:
    id: int
    user: str
    state: str  # "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED" | "DISMISSED" | "PENDING"
    body: str
    commit_id: str
    submitted_at: str
    url: str


@dataclass(frozen=True)
class ReviewComment:
    """An inline comment of a review: on a line of the diff, maybe in reply to another."""

    id: int
    user: str
    body: str
    path: str
    line: int
    diff_hunk: str
    review_id: int
    in_reply_to: int
    created_at: str
    url: str


@dataclass(frozen=True)
class Comment:
    """A comment in an issue's or a PR's conversation."""

    id: int
    user: str
    body: str
    created_at: str
    updated_at: str
    url: str


@dataclass(frozen=True)
class Issue:
    number: int
    title: str
    body: str
    state: str  # "open" | "closed"
    user: str
    labels: tuple[str, ...]
    url: str
    updated_at: str
    is_pull_request: bool = False


@dataclass(frozen=True)
class Merged:
    sha: str  # the commit the merge made on the base branch


@dataclass
class Checks:
    """Every check on a commit: its check runs and its commit statuses, as one list."""

    runs: list[CheckRun] = field(default_factory=list)

    @property
    def pending(self) -> list[CheckRun]:
        return [c for c in self.runs if not c.done]

    @property
    def failed(self) -> list[CheckRun]:
        return [c for c in self.runs if c.done and not c.passed]

    @property
    def green(self) -> bool:
        return not self.pending and not self.failed


class Forge(Protocol):
    """A forge as the user's token reaches it, for one repository."""

    name: str  # for people: "GitHub"
    repository: str  # owner/name

    def repo(self) -> Repository: ...
    def whoami(self) -> str: ...
    def branch_exists(self, name: str) -> bool: ...
    def permission(self, user: str) -> str: ...
    def find_pr(self, head: str) -> PullRequest | None: ...
    def open_pr(self, head: str, base: str, title: str, body: str) -> PullRequest: ...
    def update_pr(self, number: int, body: str | None = None, state: str | None = None) -> PullRequest: ...
    def add_labels(self, number: int, labels: tuple[str, ...]) -> None: ...
    def pr(self, number: int) -> PullRequest: ...
    def checks(self, sha: str) -> Checks: ...
    def changed(self, number: int, head: str, watch: str) -> bool: ...
    def poll_factor(self) -> float: ...
    def looking(self) -> AbstractContextManager[None]: ...
    def job(self, job_id: int) -> Job: ...
    def job_log(self, job_id: int) -> str: ...
    def reviews(self, number: int) -> list[Review]: ...
    def review_comments(self, number: int) -> list[ReviewComment]: ...
    def comments(self, number: int, since: float = 0.0) -> list[Comment]: ...
    def post_review(self, number: int, event: str, body: str, commit: str) -> None: ...
    def merge(self, number: int, sha: str, method: str, title: str) -> Merged: ...
    def delete_branch(self, name: str) -> None: ...
    def issues(self, state: str, labels: tuple[str, ...]) -> list[Issue]: ...
    def issue(self, number: int) -> Issue: ...
    def sub_issues(self, number: int) -> list[Issue]: ...
    def comment(self, number: int, body: str) -> Comment: ...
    def edit_comment(self, comment_id: int, body: str) -> Comment: ...
