"""What the forge holds, and the verbs that change it: issues and pull requests (one number
sequence, as on GitHub), their comments and reviews, check runs with their Actions jobs, commit
statuses, labels, and who may do what. The test calls the scripting verbs (`review`, `comment`,
`add_check`, `merge_by_human`, ...) as people and CI would act; the API routes call the rest.

Every verb takes the state's lock: the HTTP server answers on its own threads."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import git

ROLES = ("none", "read", "triage", "write", "maintain", "admin")
WRITERS = ("write", "maintain", "admin")
EVENTS = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
FAILED = ("failure", "timed_out", "cancelled", "action_required", "startup_failure")


class ApiError(Exception):
    """An answer GitHub gives instead of the object: its status, message and `errors`."""

    def __init__(self, status: int, message: str, errors: list[object] | None = None) -> None:
        super().__init__(f"{status} {message}" + (f" {errors}" if errors else ""))
        self.status, self.message, self.errors = status, message, errors


def invalid(resource: str, name: str, code: str = "invalid") -> ApiError:
    """GitHub's 422 for a field it refuses."""
    return ApiError(422, "Validation Failed", [{"resource": resource, "field": name, "code": code}])


def custom(message: str) -> ApiError:
    """GitHub's 422 with a sentence of its own about a pull request."""
    return ApiError(422, "Validation Failed", [{"resource": "PullRequest", "code": "custom", "message": message}])


@dataclass
class Label:
    id: int
    name: str
    color: str = "ededed"
    description: str | None = None


@dataclass
class Pull:
    id: int
    head: str  # branch names in the forge's repository (no forks)
    base: str
    head_sha: str  # as last seen: GitHub keeps them when a branch is deleted
    base_sha: str
    draft: bool = False
    maintainer_can_modify: bool = False
    merged_at: float | None = None
    merged_by: str | None = None
    merge_sha: str | None = None  # answered by the merge call (the 2026-03-10 object has no merge_commit_sha)


@dataclass
class Issue:
    number: int
    id: int
    title: str
    body: str | None
    user: str
    created_at: float
    updated_at: float
    state: str = "open"
    state_reason: str | None = None
    closed_at: float | None = None
    closed_by: str | None = None
    labels: list[str] = field(default_factory=list)
    sub_issues: list[int] = field(default_factory=list)
    parent: int | None = None
    pull: Pull | None = None  # set when the number is a pull request's


@dataclass
class Comment:
    id: int
    issue: int
    user: str
    body: str
    created_at: float
    updated_at: float


@dataclass
class Review:
    id: int
    pull: int
    user: str
    state: str  # APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING
    body: str
    commit_id: str
    submitted_at: float | None


@dataclass
class ReviewComment:
    id: int
    pull: int
    review_id: int | None
    user: str
    body: str
    path: str
    line: int
    side: str
    diff_hunk: str
    position: int
    commit_id: str
    in_reply_to: int | None
    created_at: float
    updated_at: float


@dataclass
class Step:
    name: str
    conclusion: str | None
    number: int
    status: str = "completed"


@dataclass
class Check:
    """A check run; with `actions`, also the GitHub Actions job that ran it (same id, as on GitHub)."""

    id: int
    head_sha: str
    name: str
    status: str
    conclusion: str | None
    created_at: float
    started_at: float | None
    completed_at: float | None
    suite_id: int
    run_id: int
    actions: bool
    head_branch: str | None
    title: str | None = None
    summary: str | None = None
    text: str | None = None
    steps: list[Step] = field(default_factory=list)
    log: str = ""
    workflow_name: str = "CI"


@dataclass
class Status:
    id: int
    sha: str
    context: str
    state: str  # error, failure, pending, success
    description: str | None
    target_url: str | None
    created_at: float
    updated_at: float


class State:
    def __init__(self, root: Path, owner: str = "acme", repo: str = "shop", login: str = "hive-bot") -> None:
        self.remote = root / "origin.git"  # the bare repository: a test's `origin`
        git.init_bare(self.remote)
        self.owner, self.repo, self.login = owner, repo, login
        self.users: dict[str, str] = {login: "write"}  # login -> role: none, read, triage, write, maintain, admin
        self.default_role = "read"  # anyone else, as on a public repository
        self.required_approvals = 0  # branch protection: approving reviews (by writers) needed to merge
        self.require_up_to_date = False  # branch protection: a head without the base's tip is "behind"
        self.unknown_polls = 0  # GitHub computes mergeability in the background: the first GETs say null
        self.issues: dict[int, Issue] = {}
        self.comments: dict[int, Comment] = {}
        self.reviews: dict[int, Review] = {}
        self.review_comments: dict[int, ReviewComment] = {}
        self.checks: dict[int, Check] = {}
        self.statuses: list[Status] = []
        self.labels: dict[str, Label] = {}
        self._lock = threading.RLock()
        self._ids = itertools.count(1001)
        self._user_ids: dict[str, int] = {}
        self._polls: dict[tuple[int, str, str], int] = {}
        self.user_id(login)  # the token's user is user 1 ("API rate limit exceeded for user ID 1.")
        self.user_id(owner)

    # --- small helpers ---

    def now(self) -> float:
        return float(int(time.time()))  # GitHub's timestamps have whole seconds

    def new_id(self) -> int:
        return next(self._ids)

    def user_id(self, login: str) -> int:
        return self._user_ids.setdefault(login, len(self._user_ids) + 1)

    def role(self, login: str) -> str:
        role = self.users.get(login, self.default_role)
        assert role in ROLES, f"{login}: role {role!r} is none of {ROLES}"
        return role

    def issue(self, number: int) -> Issue:
        if number not in self.issues:
            raise ApiError(404, "Not Found")
        return self.issues[number]

    def pull(self, number: int) -> Issue:
        issue = self.issue(number)
        if issue.pull is None:
            raise ApiError(404, "Not Found")
        return issue

    def _next_number(self) -> int:
        return max(self.issues, default=0) + 1

    def label(self, name: str) -> Label:
        """The repository's label, made on first use (as adding an unknown label to an issue does)."""
        if name not in self.labels:
            self.labels[name] = Label(self.new_id(), name)
        return self.labels[name]

    # --- issues and comments (scripting verbs) ---

    def open_issue(self, title: str, body: str = "", labels: Iterable[str] = (), user: str = "alice") -> int:
        with self._lock:
            now, number = self.now(), self._next_number()
            self.issues[number] = Issue(number, self.new_id(), title, body, user, now, now, labels=list(labels))
            for name in labels:
                self.label(name)
            return number

    def edit_issue(
        self,
        number: int,
        *,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
        state_reason: str | None = None,
        user: str = "alice",
    ) -> None:
        with self._lock:
            issue = self.issue(number)
            issue.title = issue.title if title is None else title
            issue.body = issue.body if body is None else body
            if state is not None:
                self._set_state(issue, state, user, state_reason)
            issue.updated_at = self.now()

    def _set_state(self, issue: Issue, state: str, user: str, reason: str | None = None) -> None:
        assert state in ("open", "closed"), state
        if state == issue.state:
            return
        issue.state = state
        issue.closed_at, issue.closed_by = (self.now(), user) if state == "closed" else (None, None)
        if issue.pull is None:
            issue.state_reason = reason or ("completed" if state == "closed" else "reopened")
        issue.updated_at = self.now()

    def add_sub_issue(self, parent: int, child: int) -> None:
        with self._lock:
            self.issue(parent).sub_issues.append(self.issue(child).number)
            self.issue(child).parent = parent

    def add_labels(self, number: int, names: Iterable[str]) -> list[Label]:
        with self._lock:
            issue = self.issue(number)
            issue.labels += [n for n in names if n not in issue.labels]
            issue.updated_at = self.now()
            return [self.label(n) for n in issue.labels]

    def comment(self, number: int, user: str, body: str) -> int:
        """An issue comment (a pull request's conversation tab is its issue) by `user`."""
        with self._lock:
            issue, now = self.issue(number), self.now()
            comment = Comment(self.new_id(), number, user, body, now, now)
            self.comments[comment.id] = comment
            issue.updated_at = now
            return comment.id

    def edit_comment(self, comment_id: int, body: str) -> None:
        with self._lock:
            if comment_id not in self.comments:
                raise ApiError(404, "Not Found")
            comment = self.comments[comment_id]
            comment.body, comment.updated_at = body, self.now()

    # --- pull requests ---

    def refresh(self, issue: Issue) -> tuple[str, str]:
        """The pull request's head and base SHAs, read from the repository now (a push shows up
        at once); the last ones seen when a branch is gone."""
        pull = issue.pull
        assert pull is not None
        if issue.state == "open":  # a closed pull request keeps the SHAs it closed with
            pull.head_sha = git.branch_sha(self.remote, pull.head) or pull.head_sha
            pull.base_sha = git.branch_sha(self.remote, pull.base) or pull.base_sha
        return pull.head_sha, pull.base_sha

    def open_pull(
        self, user: str, title: str, head: str, base: str, body: str | None = None, draft: bool = False
    ) -> int:
        """A new pull request from `head` into `base` (branch names), with GitHub's refusals."""
        with self._lock:
            base_sha = git.branch_sha(self.remote, base)
            head_sha = git.branch_sha(self.remote, head)
            for name, sha in (("base", base_sha), ("head", head_sha)):
                if sha is None:
                    raise invalid("PullRequest", name)
            assert base_sha and head_sha
            if any(
                i.pull and i.state == "open" and (i.pull.head, i.pull.base) == (head, base)
                for i in self.issues.values()
            ):
                raise custom(f"A pull request already exists for {self.owner}:{head}.")
            if not git.commits_between(self.remote, base_sha, head_sha):
                raise custom(f"No commits between {base} and {head}")
            now, number = self.now(), self._next_number()
            pull = Pull(self.new_id(), head, base, head_sha, base_sha, draft=draft)
            self.issues[number] = Issue(number, self.new_id(), title, body, user, now, now, pull=pull)
            return number

    def approvals(self, number: int) -> tuple[int, bool]:
        """Approving reviews by writers, and whether a writer's latest review requests changes."""
        latest: dict[str, str] = {}
        for review in sorted(self.reviews.values(), key=lambda r: r.id):
            if review.pull == number and review.state in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
                latest[review.user] = review.state
        writers = {u: s for u, s in latest.items() if self.role(u) in WRITERS}
        return sum(s == "APPROVED" for s in writers.values()), "CHANGES_REQUESTED" in writers.values()

    def checks_state(self, sha: str) -> str:
        """One of failing, pending and passing: of the latest check run of each name and the
        latest status of each context on the commit."""
        latest = {c.name: c for c in sorted(self.checks.values(), key=lambda c: c.id) if c.head_sha == sha}
        states = {s.context: s.state for s in self.statuses if s.sha == sha}
        if any(c.conclusion in FAILED for c in latest.values()) or {"failure", "error"} & set(states.values()):
            return "failing"
        if any(c.status != "completed" for c in latest.values()) or "pending" in states.values():
            return "pending"
        return "passing"

    def mergeability(self, issue: Issue, poll: bool = False) -> tuple[bool | None, str]:
        """GitHub's `mergeable` and `mergeable_state` of an open pull request."""
        if issue.state != "open":
            return None, "unknown"
        head, base = self.refresh(issue)
        if poll:  # the first answers after a change come before GitHub's background job
            key = (issue.number, head, base)
            self._polls[key] = self._polls.get(key, 0) + 1
            if self._polls[key] <= self.unknown_polls:
                return None, "unknown"
        if git.merge_tree(self.remote, base, head) is None:
            return False, "dirty"
        assert issue.pull is not None
        approved, changes_requested = self.approvals(issue.number)
        if issue.pull.draft:
            return True, "draft"
        if approved < self.required_approvals or changes_requested:
            return True, "blocked"
        if self.require_up_to_date and not git.is_ancestor(self.remote, base, head):
            return True, "behind"
        if self.checks_state(head) != "passing":  # failing or pending checks no rule requires
            return True, "unstable"
        return True, "clean"

    def _refusal(self, number: int, state: str) -> str | None:
        """Why GitHub's merge button would say no (405), or None."""
        changes_requested = self.approvals(number)[1]
        if state == "blocked" and changes_requested:
            return "Changes must be made through a pull request: a reviewer with write access requested changes."
        if state == "blocked":
            needed = self.required_approvals
            reviews = "reviews are" if needed > 1 else "review is"
            return f"At least {needed} approving {reviews} required by reviewers with write access."
        return {
            "dirty": "Pull Request is not mergeable",
            "draft": "Pull Request is still a draft",
            "behind": "Head branch is not up to date with the base branch",
        }.get(state)

    def merge(
        self,
        number: int,
        user: str,
        method: str = "merge",
        sha: str | None = None,
        title: str | None = None,
        message: str | None = None,
    ) -> str:
        """Merge the pull request in the repository as GitHub would; the new tip of its base."""
        with self._lock:
            issue = self.pull(number)
            pull = issue.pull
            assert pull is not None
            if issue.state != "open":
                raise ApiError(405, "Pull Request is not mergeable")
            head, base = self.refresh(issue)
            if sha is not None and sha != head:
                raise ApiError(409, "Head branch was modified. Review and try the merge again.")
            refusal = self._refusal(number, self.mergeability(issue)[1])
            if refusal:
                raise ApiError(405, refusal)
            new = self._merge_commit(issue, user, method, title, message)
            if new is None:
                raise ApiError(405, "Pull Request is not mergeable")
            if not git.update_ref(self.remote, f"refs/heads/{pull.base}", new, base):
                raise ApiError(409, "Base branch was modified. Review and try the merge again.")
            self._set_state(issue, "closed", user)
            pull.merged_at, pull.merged_by, pull.merge_sha = self.now(), user, new
            return new

    def identity(self, login: str) -> git.Identity:
        return git.Identity(login, f"{self.user_id(login)}+{login}@users.noreply.github.com")

    def _merge_commit(self, issue: Issue, user: str, method: str, title: str | None, message: str | None) -> str | None:
        pull = issue.pull
        assert pull is not None
        head, base = pull.head_sha, pull.base_sha
        if method == "rebase":
            tip: str | None = base
            for commit in git.commits_between(self.remote, base, head):
                tip = git.cherry_pick(self.remote, tip, commit) if tip else None
            return tip
        tree = git.merge_tree(self.remote, base, head)
        if tree is None:
            return None
        if method == "squash":
            title = title or f"{issue.title} (#{issue.number})"
            commits = git.commits_between(self.remote, base, head)
            message = (
                message if message is not None else "\n\n".join(f"* {git.message(self.remote, c)}" for c in commits)
            )
            return git.commit_tree(self.remote, tree, [base], f"{title}\n\n{message}".strip(), self.identity(user))
        title = title or f"Merge pull request #{issue.number} from {self.owner}/{pull.head}"
        message = issue.title if message is None else message
        return git.commit_tree(self.remote, tree, [base, head], f"{title}\n\n{message}".strip(), self.identity(user))

    def merge_by_human(self, number: int, method: str = "merge", user: str = "alice") -> str:
        """Someone presses the merge button (the rules still apply: it may be refused)."""
        return self.merge(number, user, method)

    def close_by_human(self, number: int, user: str = "alice") -> None:
        self.edit_issue(number, state="closed", user=user)

    def delete_branch(self, branch: str) -> bool:
        """Delete a branch; open pull requests from it close, as on GitHub."""
        with self._lock:
            for issue in self.issues.values():
                if issue.pull and issue.state == "open" and issue.pull.head == branch:
                    self.refresh(issue)
            if not git.delete_ref(self.remote, f"refs/heads/{branch}"):
                return False
            for issue in self.issues.values():
                if issue.pull and issue.state == "open" and issue.pull.head == branch:
                    self._set_state(issue, "closed", self.login)
            return True

    def push_commit(self, branch: str, files: dict[str, str | None], message: str, user: str = "alice") -> str:
        """Someone else pushes a commit changing `files` (path -> text, None deletes) to `branch`."""
        with self._lock:
            return git.write_commit(self.remote, branch, files, message, self.identity(user))

    # --- reviews ---

    def review(
        self,
        number: int,
        user: str,
        state: str = "COMMENTED",
        body: str = "",
        comments: Sequence[tuple[Any, ...]] = (),
        commit_id: str | None = None,
    ) -> int:
        """A submitted review (state APPROVED, CHANGES_REQUESTED, COMMENTED, or the event names
        APPROVE, REQUEST_CHANGES, COMMENT; PENDING is not submitted yet); `comments` are (path,
        line, body) or (path, line, body, side) on the new (RIGHT) or old (LEFT) side of the
        diff, each becoming a review comment with GitHub's diff_hunk."""
        with self._lock:
            issue = self.pull(number)
            state = EVENTS.get(state, state)
            assert state in (*EVENTS.values(), "DISMISSED", "PENDING"), state
            commit_id = commit_id or self.refresh(issue)[0]
            # every comment resolved before anything is recorded: one bad line refuses the review
            placed = [(c, self._place(issue, commit_id, c[0], c[1], c[3] if len(c) > 3 else "RIGHT")) for c in comments]
            now = self.now()
            review = Review(self.new_id(), number, user, state, body, commit_id, None if state == "PENDING" else now)
            self.reviews[review.id] = review
            for (path, line, text, *side), (hunk, position) in placed:
                comment = ReviewComment(
                    id=self.new_id(),
                    pull=number,
                    review_id=review.id,
                    user=user,
                    body=text,
                    path=path,
                    line=line,
                    side=side[0] if side else "RIGHT",
                    diff_hunk=hunk,
                    position=position,
                    commit_id=commit_id,
                    in_reply_to=None,
                    created_at=now,
                    updated_at=now,
                )
                self.review_comments[comment.id] = comment
            issue.updated_at = now
            return review.id

    def _place(self, issue: Issue, commit_id: str, path: str, line: int, side: str) -> tuple[str, int]:
        """A review comment's diff_hunk and position, from the pull request's diff at `commit_id`."""
        assert issue.pull is not None
        found = git.diff_hunk(git.file_diff(self.remote, issue.pull.base_sha, commit_id, path), line, side)
        if found is None:
            raise ApiError(422, "Unprocessable Entity", ["Line could not be resolved"])
        return found

    def reply(self, comment_id: int, user: str, body: str) -> int:
        """A reply in a review comment's thread (GitHub answers replies to the thread's first comment)."""
        with self._lock:
            if comment_id not in self.review_comments:
                raise ApiError(404, "Not Found")
            first = self.review_comments[comment_id]
            first = self.review_comments.get(first.in_reply_to or 0, first)
            now = self.now()
            review = Review(self.new_id(), first.pull, user, "COMMENTED", "", first.commit_id, now)
            self.reviews[review.id] = review
            reply = replace(
                first,
                id=self.new_id(),
                review_id=review.id,
                user=user,
                body=body,
                in_reply_to=first.id,
                created_at=now,
                updated_at=now,
            )
            self.review_comments[reply.id] = reply
            return reply.id

    def dismiss_review(self, review_id: int) -> None:
        with self._lock:
            self.reviews[review_id].state = "DISMISSED"

    # --- CI: check runs, Actions jobs, statuses ---

    def _commit(self, ref: str) -> str:
        sha = git.resolve(self.remote, ref)
        if sha is None:
            raise ApiError(422, f"No commit found for SHA: {ref}")
        return sha

    def add_check(
        self,
        ref: str,
        name: str,
        status: str = "completed",
        conclusion: str | None = None,
        log: str = "",
        steps: Sequence[tuple[str, str | None]] = (),
        summary: str | None = None,
        text: str | None = None,
        actions: bool = True,
    ) -> int:
        """A check run on the commit `ref` names now (a SHA or a branch: the run stays on that
        commit when the branch moves). `conclusion` defaults to success once completed. With
        `actions` it is a GitHub Actions job too, with `steps` ((name, conclusion) pairs) and
        `log` (its lines, written into the first failed step, else the last); returns its id,
        which is the job's id as well."""
        with self._lock:
            sha, now = self._commit(ref), self.now()
            done = status == "completed"
            conclusion = (conclusion or "success") if done else None
            at = git.branches_at(self.remote, sha)
            branch = ref if ref in at else at[0] if at else None  # the branch the workflow ran on
            check = Check(
                id=self.new_id(),
                head_sha=sha,
                name=name,
                status=status,
                conclusion=conclusion,
                created_at=now,
                started_at=None if status == "queued" else now,
                completed_at=now if done else None,
                suite_id=self.new_id(),
                run_id=self.new_id(),
                actions=actions,
                head_branch=branch,
                title=name if summary or text else None,
                summary=summary,
                text=text,
                log=log,
            )
            step_status = "completed" if done else "queued" if status == "queued" else "in_progress"
            check.steps = [Step(n, c if done else None, i, step_status) for i, (n, c) in enumerate(steps, 1)]
            self.checks[check.id] = check
            return check.id

    def update_check(
        self, check_id: int, status: str = "completed", conclusion: str | None = None, log: str | None = None
    ) -> None:
        """Move a queued or running check (and its job) on, e.g. to completed with a conclusion."""
        with self._lock:
            check, now = self.checks[check_id], self.now()
            check.status = status
            check.started_at = check.started_at or (now if status != "queued" else None)
            if status == "completed":
                check.conclusion, check.completed_at = conclusion or "success", now
                for step in check.steps:
                    step.status, step.conclusion = "completed", step.conclusion or check.conclusion
            check.log = check.log if log is None else log

    def add_status(
        self, ref: str, context: str, state: str, description: str | None = None, target_url: str | None = None
    ) -> int:
        """A commit status (the older API some CI services use) on the commit `ref` names now."""
        assert state in ("error", "failure", "pending", "success"), state
        with self._lock:
            now = self.now()
            status = Status(self.new_id(), self._commit(ref), context, state, description, target_url, now, now)
            self.statuses.append(status)
            return status.id
