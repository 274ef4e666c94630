"""The route table: each REST call the forge knows, the model its request body must fit, and a
handler that answers it from the state with an object built in `objects.py` and the model that
object must fit. A call not in this table is a problem (server.py)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Union
from urllib.parse import urlencode

from . import git, objects
from .schema import models as m
from .state import ApiError, Check, Issue, custom, invalid

if TYPE_CHECKING:
    from .server import Forge

DOCS = "https://docs.github.com/rest"


@dataclass
class Request:
    method: str
    path: str  # without the /api/v3 prefix
    query: dict[str, list[str]]
    body: Any  # the parsed JSON, or None
    params: dict[str, str] = field(default_factory=dict)  # from the path

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[-1] if values else default


@dataclass
class Reply:
    status: int
    body: Any = None  # JSON; a str is sent as text/plain
    model: Any = None  # the shape `body` must fit (schema.problems); None: not checked
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[["Forge", Request], Reply]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    handler: Handler
    body: Any = None  # the request body's model
    docs: str = DOCS  # the documentation_url of its errors
    billable: bool = True  # counts against the rate limit (GET /rate_limit does not)


PARTS = {
    "{o}": "(?P<owner>[^/]+)",
    "{r}": "(?P<repo>[^/]+)",
    "{n}": r"(?P<n>\d+)",
    "{id}": r"(?P<id>\d+)",
    "{user}": "(?P<user>[^/]+)",
    "{branch}": "(?P<branch>.+)",  # branch names hold slashes (hive/task-1)
    "{ref}": "(?P<ref>.+)",
}


def route(
    method: str, template: str, handler: Handler, body: Any = None, docs: str = "", billable: bool = True
) -> Route:
    pattern = re.escape(template)
    for part, regex in PARTS.items():
        pattern = pattern.replace(re.escape(part), regex)
    return Route(method, re.compile(pattern), handler, body, f"{DOCS}/{docs}" if docs else DOCS, billable)


def find(method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    for r in ROUTES:
        if r.method == method and (match := r.pattern.fullmatch(path)):
            return r, match.groupdict()
    return None


# --- helpers ---


def ok(body: Any, model: Any, status: int = 200) -> Reply:
    return Reply(status, body, model)


def number(req: Request, name: str = "n") -> int:
    return int(req.params[name])


def page(forge: Forge, req: Request, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """One page of `items` (per_page, at most 100; page) and GitHub's Link header to the others."""
    per_page = min(_int(req.arg("per_page"), 30), 100)
    current = _int(req.arg("page"), 1)
    last = max(1, math.ceil(len(items) / per_page))
    rels = {"prev": current - 1, "next": current + 1, "last": last, "first": 1}
    wanted = (["next", "last"] if current < last else []) + (["prev", "first"] if current > 1 else [])
    links = [f'<{_url(forge, req, rels[rel])}>; rel="{rel}"' for rel in wanted]
    return items[(current - 1) * per_page : current * per_page], ({"link": ", ".join(links)} if links else {})


def _int(text: str | None, default: int) -> int:
    return int(text) if text and text.isdigit() and int(text) > 0 else default


def _url(forge: Forge, req: Request, to_page: int) -> str:
    query = [(k, v) for k, vs in req.query.items() if k != "page" for v in vs] + [("page", str(to_page))]
    return f"{forge.url}{req.path}?{urlencode(query)}"


def listed(forge: Forge, req: Request, items: list[Any], model: Any) -> Reply:
    chunk, headers = page(forge, req, items)
    return Reply(200, chunk, model, headers)


def since(req: Request) -> float | None:
    text = req.arg("since")
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ApiError(
            422, "Validation Failed", [{"resource": "Search", "field": "since", "code": "invalid"}]
        ) from None


def choice(req: Request, name: str, default: str, allowed: Iterable[str]) -> str:
    value = req.arg(name, default) or default
    if value not in allowed:
        raise invalid("Issue", name)
    return value


def newest_first(req: Request, issues: Iterable[Issue]) -> list[Issue]:
    """Sorted as GitHub lists them: by `sort` (created or updated), `direction` (desc by default)."""
    key = choice(req, "sort", "created", ("created", "updated", "popularity", "long-running", "comments"))
    desc = choice(req, "direction", "desc", ("asc", "desc")) == "desc"
    updated = key == "updated"
    return sorted(issues, key=lambda i: (i.updated_at if updated else i.created_at, i.number), reverse=desc)


# --- the user, the repository, permissions ---


def get_user(forge: Forge, req: Request) -> Reply:
    return ok(objects.private_user(forge, forge.site, forge.login), m.PrivateUser)


def get_rate_limit(forge: Forge, req: Request) -> Reply:
    return ok(objects.rate_limit(forge.limit, forge.remaining, forge.reset_at), m.RateLimitOverview)


def get_repo(forge: Forge, req: Request) -> Reply:
    return ok(objects.full_repository(forge, forge.site), m.FullRepository)


def get_branch(forge: Forge, req: Request) -> Reply:
    name = req.params["branch"]
    sha = git.branch_sha(forge.remote, name)
    if sha is None:
        raise ApiError(404, "Branch not found")
    return ok(objects.branch(forge, forge.site, name, sha), m.BranchWithProtection)


def get_permission(forge: Forge, req: Request) -> Reply:
    return ok(
        objects.collaborator_permission(forge, forge.site, req.params["user"]), m.RepositoryCollaboratorPermission
    )


# --- pull requests ---


def list_pulls(forge: Forge, req: Request) -> Reply:
    state = choice(req, "state", "open", ("open", "closed", "all"))
    head, base = req.arg("head"), req.arg("base")
    if head is not None and ":" not in head:
        head = None  # GitHub silently ignores a head without its owner: every pull request is listed
    found = [
        i
        for i in forge.issues.values()
        if i.pull
        and state in ("all", i.state)
        and (head is None or head == f"{forge.owner}:{i.pull.head}")
        and (base is None or base == i.pull.base)
    ]
    items = [objects.pull_simple(forge, forge.site, i) for i in newest_first(req, found)]
    return listed(forge, req, items, list[m.PullRequestSimple])


def create_pull(forge: Forge, req: Request) -> Reply:
    body = req.body
    head = body["head"]
    if ":" in head:
        owner, head = head.split(":", 1)
        if owner != forge.owner:  # no forks here
            raise invalid("PullRequest", "head")
    if not body.get("title"):
        raise invalid("Issue", "title", "missing_field")
    n = forge.open_pull(forge.login, body["title"], head, body["base"], body.get("body"), bool(body.get("draft")))
    issue = forge.issues[n]
    assert issue.pull is not None
    issue.pull.maintainer_can_modify = bool(body.get("maintainer_can_modify", False))
    reply = ok(objects.pull_request(forge, forge.site, issue), m.PullRequest, 201)
    reply.headers["location"] = f"{forge.site.repo_api}/pulls/{n}"
    return reply


def get_pull(forge: Forge, req: Request) -> Reply:
    return ok(objects.pull_request(forge, forge.site, forge.pull(number(req)), poll=True), m.PullRequest)


def update_pull(forge: Forge, req: Request) -> Reply:
    issue, body = forge.pull(number(req)), req.body
    assert issue.pull is not None
    if "base" in body:
        if git.branch_sha(forge.remote, body["base"]) is None:
            raise invalid("PullRequest", "base")
        issue.pull.base = body["base"]
    if body.get("state") == "open" and issue.pull.merged_at is not None:
        raise custom("state cannot be changed. The pull request has been merged.")
    issue.title = body.get("title", issue.title)
    issue.body = body.get("body", issue.body)
    issue.pull.maintainer_can_modify = body.get("maintainer_can_modify", issue.pull.maintainer_can_modify)
    if body.get("state"):
        forge.edit_issue(issue.number, state=body["state"], user=forge.login)
    issue.updated_at = forge.now()
    return ok(objects.pull_request(forge, forge.site, issue), m.PullRequest)


def merge_pull(forge: Forge, req: Request) -> Reply:
    if forge.role(forge.login) not in ("write", "maintain", "admin"):
        raise ApiError(403, "Resource not accessible by personal access token")
    body = req.body or {}
    method = body.get("merge_method") or "merge"
    sha = forge.merge(
        number(req), forge.login, method, body.get("sha"), body.get("commit_title"), body.get("commit_message")
    )
    result = {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}
    return ok(result, m.PullRequestMergeResult)


def list_reviews(forge: Forge, req: Request) -> Reply:
    n = forge.pull(number(req)).number
    found = sorted((r for r in forge.reviews.values() if r.pull == n), key=lambda r: r.id)
    visible = [r for r in found if r.state != "PENDING" or r.user == forge.login]  # a pending review is its author's
    return listed(forge, req, [objects.review(forge, forge.site, r) for r in visible], list[m.PullRequestReview])


def create_review(forge: Forge, req: Request) -> Reply:
    issue, body = forge.pull(number(req)), req.body or {}
    event = body.get("event") or "PENDING"
    if event in ("APPROVE", "REQUEST_CHANGES") and issue.user == forge.login:
        what = "approve" if event == "APPROVE" else "request changes on"
        raise ApiError(422, "Unprocessable Entity", [f"Can not {what} your own pull request"])
    if event in ("REQUEST_CHANGES", "COMMENT") and not body.get("body"):
        raise ApiError(422, "Unprocessable Entity", [f"Body is required for {event}"])
    comments = [
        (c["path"], c.get("line") or 0, c["body"], c.get("side") or "RIGHT") for c in body.get("comments") or []
    ]
    review_id = forge.review(issue.number, forge.login, event, body.get("body") or "", comments, body.get("commit_id"))
    return ok(objects.review(forge, forge.site, forge.reviews[review_id]), m.PullRequestReview)


def list_review_comments(forge: Forge, req: Request) -> Reply:
    n, after = forge.pull(number(req)).number, since(req)
    found = [
        c
        for c in sorted(forge.review_comments.values(), key=lambda c: c.id)
        if c.pull == n and (after is None or c.updated_at >= after)
    ]
    items = [objects.review_comment(forge, forge.site, c) for c in found]
    return listed(forge, req, items, list[m.PullRequestReviewComment])


# --- issues, comments, labels ---


def list_issues(forge: Forge, req: Request) -> Reply:
    state = choice(req, "state", "open", ("open", "closed", "all"))
    wanted = [name for name in (req.arg("labels") or "").split(",") if name]
    after = since(req)
    found = [
        i
        for i in forge.issues.values()
        if state in ("all", i.state)
        and all(name in i.labels for name in wanted)
        and (after is None or i.updated_at >= after)
    ]
    items = [objects.issue_object(forge, forge.site, i) for i in newest_first(req, found)]
    return listed(forge, req, items, list[m.Issue])


def get_issue(forge: Forge, req: Request) -> Reply:
    return ok(objects.issue_object(forge, forge.site, forge.issue(number(req))), m.Issue)


def list_sub_issues(forge: Forge, req: Request) -> Reply:
    items = [objects.issue_object(forge, forge.site, forge.issue(s)) for s in forge.issue(number(req)).sub_issues]
    return listed(forge, req, items, list[m.Issue])


def list_comments(forge: Forge, req: Request) -> Reply:
    n, after = forge.issue(number(req)).number, since(req)
    found = [
        c
        for c in sorted(forge.comments.values(), key=lambda c: c.id)
        if c.issue == n and (after is None or c.updated_at >= after)
    ]
    return listed(forge, req, [objects.issue_comment(forge, forge.site, c) for c in found], list[m.IssueComment])


def create_comment(forge: Forge, req: Request) -> Reply:
    comment_id = forge.comment(number(req), forge.login, req.body["body"])
    reply = ok(objects.issue_comment(forge, forge.site, forge.comments[comment_id]), m.IssueComment, 201)
    reply.headers["location"] = f"{forge.site.repo_api}/issues/comments/{comment_id}"
    return reply


def _comment(forge: Forge, req: Request) -> int:
    comment_id = number(req, "id")
    if comment_id not in forge.comments:
        raise ApiError(404, "Not Found")
    return comment_id


def get_comment(forge: Forge, req: Request) -> Reply:
    return ok(objects.issue_comment(forge, forge.site, forge.comments[_comment(forge, req)]), m.IssueComment)


def update_comment(forge: Forge, req: Request) -> Reply:
    comment_id = _comment(forge, req)
    if forge.comments[comment_id].user != forge.login and forge.role(forge.login) not in ("maintain", "admin"):
        raise ApiError(403, "Resource not accessible by personal access token")
    forge.edit_comment(comment_id, req.body["body"])
    return ok(objects.issue_comment(forge, forge.site, forge.comments[comment_id]), m.IssueComment)


def add_labels(forge: Forge, req: Request) -> Reply:
    body = req.body
    given = body.get("labels") or [] if isinstance(body, dict) else body
    names = [item if isinstance(item, str) else item["name"] for item in given]
    labels = forge.add_labels(number(req), names)
    return ok([objects.label(forge.site, lab) for lab in labels], list[m.Label])


LABELS_BODY = Union[  # noqa: UP007 (a runtime value for TypeAdapter)
    m.ReposOwnerRepoIssuesIssueNumberLabelsPostBodyOneof0,
    list[str],
    list[m.ReposOwnerRepoIssuesIssueNumberLabelsPostBodyOneof2Items],
]


# --- CI ---


def _sha(forge: Forge, req: Request) -> str:
    sha = git.resolve(forge.remote, req.params["ref"])
    if sha is None:
        raise ApiError(422, f"No commit found for SHA: {req.params['ref']}")
    return sha


def list_check_runs(forge: Forge, req: Request) -> Reply:
    sha = _sha(forge, req)
    which = choice(req, "filter", "latest", ("latest", "all"))
    name, status = req.arg("check_name"), req.arg("status")
    runs = [c for c in sorted(forge.checks.values(), key=lambda c: -c.id) if c.head_sha == sha]
    if which == "latest":  # the newest run of each name
        runs = list({c.name: c for c in reversed(runs)}.values())[::-1]
    runs = [c for c in runs if (name is None or c.name == name) and (status is None or c.status == status)]
    chunk, headers = page(forge, req, runs)
    body = {"total_count": len(runs), "check_runs": [objects.check_run(forge, forge.site, c) for c in chunk]}
    return Reply(200, body, m.ReposOwnerRepoCommitsRefCheckRunsGetResponse200, headers)


def get_status(forge: Forge, req: Request) -> Reply:
    return ok(objects.combined_status(forge, forge.site, _sha(forge, req)), m.CombinedCommitStatus)


def _job(forge: Forge, req: Request) -> Check:
    check = forge.checks.get(number(req, "id"))
    if check is None or not check.actions:
        raise ApiError(404, "Not Found")
    return check


def get_job(forge: Forge, req: Request) -> Reply:
    return ok(objects.job(forge.site, _job(forge, req)), m.Job)


def get_job_logs(forge: Forge, req: Request) -> Reply:
    """302 to a signed URL on another host name that needs no token, as GitHub's blob URLs."""
    return Reply(302, headers={"location": forge.log_url(_job(forge, req).id)})


def delete_branch(forge: Forge, req: Request) -> Reply:
    if not forge.delete_branch(req.params["branch"]):
        raise ApiError(422, "Reference does not exist")
    return Reply(204)


R = "/repos/{o}/{r}"
ROUTES = [
    route("GET", "/user", get_user, docs="users/users#get-the-authenticated-user"),
    route("GET", "/rate_limit", get_rate_limit, docs="rate-limit/rate-limit", billable=False),
    route("GET", R, get_repo, docs="repos/repos#get-a-repository"),
    route("GET", f"{R}/branches/{{branch}}", get_branch, docs="branches/branches#get-a-branch"),
    route("GET", f"{R}/collaborators/{{user}}/permission", get_permission, docs="collaborators/collaborators"),
    route("GET", f"{R}/pulls", list_pulls, docs="pulls/pulls#list-pull-requests"),
    route("POST", f"{R}/pulls", create_pull, m.ReposOwnerRepoPullsPostBody, "pulls/pulls#create-a-pull-request"),
    route("GET", f"{R}/pulls/{{n}}", get_pull, docs="pulls/pulls#get-a-pull-request"),
    route(
        "PATCH",
        f"{R}/pulls/{{n}}",
        update_pull,
        m.ReposOwnerRepoPullsPullNumberPatchBody,
        "pulls/pulls#update-a-pull-request",
    ),
    route(
        "PUT",
        f"{R}/pulls/{{n}}/merge",
        merge_pull,
        m.ReposOwnerRepoPullsPullNumberMergePutBody,
        "pulls/pulls#merge-a-pull-request",
    ),
    route("GET", f"{R}/pulls/{{n}}/reviews", list_reviews, docs="pulls/reviews#list-reviews-for-a-pull-request"),
    route(
        "POST",
        f"{R}/pulls/{{n}}/reviews",
        create_review,
        m.ReposOwnerRepoPullsPullNumberReviewsPostBody,
        "pulls/reviews#create-a-review-for-a-pull-request",
    ),
    route("GET", f"{R}/pulls/{{n}}/comments", list_review_comments, docs="pulls/comments"),
    route("GET", f"{R}/issues", list_issues, docs="issues/issues#list-repository-issues"),
    route("GET", f"{R}/issues/{{n}}", get_issue, docs="issues/issues#get-an-issue"),
    route("GET", f"{R}/issues/{{n}}/sub_issues", list_sub_issues, docs="issues/sub-issues"),
    route("GET", f"{R}/issues/{{n}}/comments", list_comments, docs="issues/comments"),
    route(
        "POST",
        f"{R}/issues/{{n}}/comments",
        create_comment,
        m.ReposOwnerRepoIssuesIssueNumberCommentsPostBody,
        "issues/comments#create-an-issue-comment",
    ),
    route("GET", f"{R}/issues/comments/{{id}}", get_comment, docs="issues/comments#get-an-issue-comment"),
    route(
        "PATCH",
        f"{R}/issues/comments/{{id}}",
        update_comment,
        m.ReposOwnerRepoIssuesCommentsCommentIdPatchBody,
        "issues/comments#update-an-issue-comment",
    ),
    route("POST", f"{R}/issues/{{n}}/labels", add_labels, LABELS_BODY, "issues/labels#add-labels-to-an-issue"),
    route(
        "GET",
        f"{R}/commits/{{ref}}/check-runs",
        list_check_runs,
        docs="checks/runs#list-check-runs-for-a-git-reference",
    ),
    route("GET", f"{R}/commits/{{ref}}/status", get_status, docs="commits/statuses"),
    route("GET", f"{R}/actions/jobs/{{id}}", get_job, docs="actions/workflow-jobs#get-a-job-for-a-workflow-run"),
    route("GET", f"{R}/actions/jobs/{{id}}/logs", get_job_logs, docs="actions/workflow-jobs"),
    route("DELETE", f"{R}/git/refs/heads/{{branch}}", delete_branch, docs="git/refs#delete-a-reference"),
]
