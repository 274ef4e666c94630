"""GitHub's JSON objects, built from the forge's records with every field GitHub's description
requires (URLs, node ids, whole user and repository objects), as GitHub spells them. API URLs
point at the forge, so a client that follows one reaches it; web URLs at https://github.test.
`schema.py` checks each answer against the description: a field missing here fails the test."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from typing import Any

from . import git
from .state import Check, Comment, Issue, Label, Review, ReviewComment, State, Status

JSON = dict[str, Any]
ACTIONS_APP_ID = 15368  # GitHub Actions' app, as its check runs carry it
CREATED = "2026-01-05T09:00:00Z"  # when the repository and its people "joined"


@dataclass(frozen=True)
class Site:
    api: str  # the API's base URL, without a trailing slash
    web: str
    owner: str
    repo: str

    @property
    def repo_api(self) -> str:
        return f"{self.api}/repos/{self.owner}/{self.repo}"

    @property
    def repo_web(self) -> str:
        return f"{self.web}/{self.owner}/{self.repo}"


def iso(t: float | None) -> str | None:
    return None if t is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def node_id(kind: str, number: int) -> str:
    """A node id of GitHub's current shape (`PR_kwDOA...`): a type prefix and opaque bytes."""
    return f"{kind}_kwDO" + base64.urlsafe_b64encode(number.to_bytes(6, "big")).decode().rstrip("=")


def avatar(uid: int) -> str:
    return f"https://avatars.github.test/u/{uid}?v=4"


# --- people ---


def user(site: Site, login: str, uid: int, org: bool = False) -> JSON:
    """A SimpleUser."""
    url = f"{site.api}/users/{login}"
    kind = "Organization" if org else "Bot" if login.endswith("[bot]") else "User"
    return {
        "login": login,
        "id": uid,
        "node_id": node_id("O" if org else "U", uid),
        "avatar_url": avatar(uid),
        "gravatar_id": "",
        "url": url,
        "html_url": f"{site.web}/{login}",
        "followers_url": f"{url}/followers",
        "following_url": f"{url}/following{{/other_user}}",
        "gists_url": f"{url}/gists{{/gist_id}}",
        "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{url}/subscriptions",
        "organizations_url": f"{url}/orgs",
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events{{/privacy}}",
        "received_events_url": f"{url}/received_events",
        "type": kind,
        "user_view_type": "public",
        "site_admin": False,
    }


def person(state: State, site: Site, login: str) -> JSON:
    return user(site, login, state.user_id(login), org=login == state.owner)


def private_user(state: State, site: Site, login: str) -> JSON:
    """GET /user: the token's own user, with the fields only its owner sees."""
    return {
        **person(state, site, login),
        "name": login,
        "company": None,
        "blog": "",
        "location": None,
        "email": None,
        "hireable": None,
        "bio": None,
        "twitter_username": None,
        "notification_email": None,
        "public_repos": 0,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": CREATED,
        "updated_at": CREATED,
        "private_gists": 0,
        "total_private_repos": 0,
        "owned_private_repos": 0,
        "disk_usage": 0,
        "collaborators": 0,
        "two_factor_authentication": True,
    }


def association(state: State, login: str) -> str:
    """GitHub's author_association: a collaborator with any role, even read, is a COLLABORATOR
    (so it says nothing about write access: the permission endpoint does)."""
    if login == state.owner:
        return "OWNER"
    return "COLLABORATOR" if login in state.users and state.role(login) != "none" else "NONE"


def role_flags(role: str) -> JSON:
    order = ("read", "triage", "write", "maintain", "admin")
    rank = order.index(role) if role in order else -1
    return {
        "admin": rank >= 4,
        "maintain": rank >= 3,
        "push": rank >= 2,
        "triage": rank >= 1,
        "pull": rank >= 0,
    }


def collaborator_permission(state: State, site: Site, login: str) -> JSON:
    """RepositoryCollaboratorPermission: `permission` is the legacy role (admin, write, read,
    none), `role_name` the repository role itself."""
    role = state.role(login)
    legacy = {"maintain": "write", "triage": "read"}.get(role, role)
    flags = role_flags(role)
    collaborator = {**person(state, site, login), "permissions": flags, "role_name": role}
    return {"permission": legacy, "role_name": role, "user": collaborator}


# --- the repository ---


def _repo_urls(site: Site) -> JSON:
    api = site.repo_api
    return {
        "url": api,
        "html_url": site.repo_web,
        "archive_url": f"{api}/{{archive_format}}{{/ref}}",
        "assignees_url": f"{api}/assignees{{/user}}",
        "blobs_url": f"{api}/git/blobs{{/sha}}",
        "branches_url": f"{api}/branches{{/branch}}",
        "collaborators_url": f"{api}/collaborators{{/collaborator}}",
        "comments_url": f"{api}/comments{{/number}}",
        "commits_url": f"{api}/commits{{/sha}}",
        "compare_url": f"{api}/compare/{{base}}...{{head}}",
        "contents_url": f"{api}/contents/{{+path}}",
        "contributors_url": f"{api}/contributors",
        "deployments_url": f"{api}/deployments",
        "downloads_url": f"{api}/downloads",
        "events_url": f"{api}/events",
        "forks_url": f"{api}/forks",
        "git_commits_url": f"{api}/git/commits{{/sha}}",
        "git_refs_url": f"{api}/git/refs{{/sha}}",
        "git_tags_url": f"{api}/git/tags{{/sha}}",
        "issue_comment_url": f"{api}/issues/comments{{/number}}",
        "issue_events_url": f"{api}/issues/events{{/number}}",
        "issues_url": f"{api}/issues{{/number}}",
        "keys_url": f"{api}/keys{{/key_id}}",
        "labels_url": f"{api}/labels{{/name}}",
        "languages_url": f"{api}/languages",
        "merges_url": f"{api}/merges",
        "milestones_url": f"{api}/milestones{{/number}}",
        "notifications_url": f"{api}/notifications{{?since,all,participating}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "releases_url": f"{api}/releases{{/id}}",
        "stargazers_url": f"{api}/stargazers",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "subscribers_url": f"{api}/subscribers",
        "subscription_url": f"{api}/subscription",
        "tags_url": f"{api}/tags",
        "teams_url": f"{api}/teams",
        "trees_url": f"{api}/git/trees{{/sha}}",
        "hooks_url": f"{api}/hooks",
    }


def minimal_repository(state: State, site: Site) -> JSON:
    return {
        "id": 501,
        "node_id": node_id("R", 501),
        "name": site.repo,
        "full_name": f"{site.owner}/{site.repo}",
        "owner": person(state, site, site.owner),
        "private": False,
        "description": "The shop",
        "fork": False,
        **_repo_urls(site),
    }


def _open_issues(state: State) -> int:
    return sum(i.state == "open" for i in state.issues.values())


def repository(state: State, site: Site) -> JSON:
    """A Repository (a pull request's head.repo and base.repo)."""
    count = _open_issues(state)
    return {
        **minimal_repository(state, site),
        "license": None,
        "forks": 0,
        "git_url": f"git://github.test/{site.owner}/{site.repo}.git",
        "ssh_url": f"git@github.test:{site.owner}/{site.repo}.git",
        "clone_url": f"{site.repo_web}.git",
        "svn_url": site.repo_web,
        "mirror_url": None,
        "homepage": None,
        "language": "Python",
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "watchers": 0,
        "size": 1,
        "default_branch": "main",
        "open_issues_count": count,
        "open_issues": count,
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": False,
        "has_pages": False,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "public",
        "pushed_at": CREATED,  # fixed, not the last push's time: an answer's ETag must not change each second
        "created_at": CREATED,
        "updated_at": CREATED,
    }


def full_repository(state: State, site: Site) -> JSON:
    """GET /repos/{owner}/{repo}, as the token's user sees it (its `permissions`)."""
    return {
        **repository(state, site),
        "permissions": role_flags(state.role(state.login)),
        "allow_rebase_merge": True,
        "allow_squash_merge": True,
        "allow_merge_commit": True,
        "allow_auto_merge": False,
        "allow_update_branch": True,
        "delete_branch_on_merge": False,
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "subscribers_count": 1,
        "network_count": 0,
    }


def branch(state: State, site: Site, name: str, sha: str) -> JSON:
    """BranchWithProtection; protected when the forge requires approving reviews."""
    info = git.commit_info(state.remote, sha)
    api = site.repo_api
    protected = state.required_approvals > 0
    protection: JSON = {
        "enabled": protected,
        "required_status_checks": {"enforcement_level": "off", "contexts": [], "checks": []},
    }
    if protected:
        protection["required_pull_request_reviews"] = {
            "dismiss_stale_reviews": False,
            "require_code_owner_reviews": False,
            "required_approving_review_count": state.required_approvals,
        }
    return {
        "name": name,
        "commit": commit(state, site, info),
        "_links": {"self": f"{api}/branches/{name}", "html": f"{site.repo_web}/tree/{name}"},
        "protected": protected,
        "protection": protection,
        "protection_url": f"{api}/branches/{name}/protection",
    }


def commit(state: State, site: Site, info: git.CommitInfo) -> JSON:
    api = site.repo_api

    def git_user(who: git.Identity, date: str) -> JSON:
        return {"name": who.name, "email": who.email, "date": date}

    return {
        "url": f"{api}/commits/{info.sha}",
        "sha": info.sha,
        "node_id": node_id("C", int(info.sha[:12], 16)),
        "html_url": f"{site.repo_web}/commit/{info.sha}",
        "comments_url": f"{api}/commits/{info.sha}/comments",
        "commit": {
            "url": f"{api}/git/commits/{info.sha}",
            "author": git_user(info.author, info.author_date),
            "committer": git_user(info.committer, info.committer_date),
            "message": info.message,
            "comment_count": 0,
            "tree": {"sha": info.tree, "url": f"{api}/git/trees/{info.tree}"},
        },
        "author": None,  # GitHub's user for the commit's email: none it knows
        "committer": None,
        "parents": [
            {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{site.repo_web}/commit/{p}"} for p in info.parents
        ],
    }


# --- issues, pull requests, labels, comments ---


def label(site: Site, lab: Label, full: bool = True, pull: bool = False) -> JSON:
    """A Label; `full` for the Label object itself (add-labels), else as an issue lists it, or
    (`pull`) as a pull request does: with `archived_by` but not `archived_at`, as GitHub's
    description has it."""
    out: JSON = {
        "id": lab.id,
        "node_id": node_id("LA", lab.id),
        "url": f"{site.repo_api}/labels/{lab.name}",
        "name": lab.name,
        "description": lab.description,
        "color": lab.color,
        "default": False,
    }
    if pull:
        return {**out, "archived_by": None}
    return {**out, "archived_at": None, "archived_by": None} if full else out


def _pull_links(site: Site, n: int, head_sha: str) -> JSON:
    api = site.repo_api
    hrefs = {
        "self": f"{api}/pulls/{n}",
        "html": f"{site.repo_web}/pull/{n}",
        "issue": f"{api}/issues/{n}",
        "comments": f"{api}/issues/{n}/comments",
        "review_comments": f"{api}/pulls/{n}/comments",
        "review_comment": f"{api}/pulls/comments{{/number}}",
        "commits": f"{api}/pulls/{n}/commits",
        "statuses": f"{api}/statuses/{head_sha}",
    }
    return {k: {"href": v} for k, v in hrefs.items()}


def pull_simple(state: State, site: Site, issue: Issue) -> JSON:
    """A PullRequestSimple (the list's items)."""
    pull = issue.pull
    assert pull is not None
    head, base = state.refresh(issue)
    n, api, links = issue.number, site.repo_api, _pull_links(site, issue.number, head)
    owner = person(state, site, site.owner)
    repo = repository(state, site)
    return {
        "url": f"{api}/pulls/{n}",
        "id": pull.id,
        "node_id": node_id("PR", pull.id),
        "html_url": f"{site.repo_web}/pull/{n}",
        "diff_url": f"{site.repo_web}/pull/{n}.diff",
        "patch_url": f"{site.repo_web}/pull/{n}.patch",
        "issue_url": f"{api}/issues/{n}",
        "commits_url": links["commits"]["href"],
        "review_comments_url": links["review_comments"]["href"],
        "review_comment_url": links["review_comment"]["href"],
        "comments_url": links["comments"]["href"],
        "statuses_url": links["statuses"]["href"],
        "number": n,
        "state": issue.state,
        "locked": False,
        "title": issue.title,
        "user": person(state, site, issue.user),
        "body": issue.body,
        "labels": [label(site, state.label(name), pull=True) for name in issue.labels],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": iso(issue.created_at),
        "updated_at": iso(issue.updated_at),
        "closed_at": iso(issue.closed_at),
        "merged_at": iso(pull.merged_at),
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": {"label": f"{site.owner}:{pull.head}", "ref": pull.head, "sha": head, "user": owner, "repo": repo},
        "base": {"label": f"{site.owner}:{pull.base}", "ref": pull.base, "sha": base, "user": owner, "repo": repo},
        "_links": links,
        "author_association": association(state, issue.user),
        "auto_merge": None,
        "draft": pull.draft,
    }


def pull_request(state: State, site: Site, issue: Issue, poll: bool = False) -> JSON:
    """A PullRequest: the list item plus mergeability and the diff's size."""
    pull = issue.pull
    assert pull is not None
    simple = pull_simple(state, site, issue)
    mergeable, mergeable_state = state.mergeability(issue, poll=poll)
    additions, deletions, files = git.numstat(state.remote, pull.base_sha, pull.head_sha)
    return {
        **simple,
        "merged": pull.merged_at is not None,
        "mergeable": mergeable,
        "rebaseable": mergeable,
        "mergeable_state": mergeable_state,
        "merged_by": person(state, site, pull.merged_by) if pull.merged_by else None,
        "comments": sum(c.issue == issue.number for c in state.comments.values()),
        "review_comments": sum(c.pull == issue.number for c in state.review_comments.values()),
        "maintainer_can_modify": pull.maintainer_can_modify,
        "commits": len(git.commits_between(state.remote, pull.base_sha, pull.head_sha)),
        "additions": additions,
        "deletions": deletions,
        "changed_files": files,
    }


def issue_object(state: State, site: Site, issue: Issue) -> JSON:
    """An Issue; a pull request is an issue too, with a `pull_request` key (as GitHub lists them)."""
    n, api = issue.number, site.repo_api
    web = f"{site.repo_web}/{'pull' if issue.pull else 'issues'}/{n}"
    subs = [state.issues[s] for s in issue.sub_issues]
    done = sum(s.state == "closed" for s in subs)
    out: JSON = {
        "id": issue.id,
        "node_id": node_id("I", issue.id),
        "url": f"{api}/issues/{n}",
        "repository_url": api,
        "labels_url": f"{api}/issues/{n}/labels{{/name}}",
        "comments_url": f"{api}/issues/{n}/comments",
        "events_url": f"{api}/issues/{n}/events",
        "html_url": web,
        "number": n,
        "state": issue.state,
        "state_reason": issue.state_reason,
        "title": issue.title,
        "body": issue.body,
        "user": person(state, site, issue.user),
        "labels": [label(site, state.label(name), full=False) for name in issue.labels],
        "assignees": [],
        "milestone": None,
        "locked": False,
        "active_lock_reason": None,
        "comments": sum(c.issue == n for c in state.comments.values()),
        "closed_at": iso(issue.closed_at),
        "created_at": iso(issue.created_at),
        "updated_at": iso(issue.updated_at),
        "closed_by": person(state, site, issue.closed_by) if issue.closed_by else None,
        "timeline_url": f"{api}/issues/{n}/timeline",
        "author_association": association(state, issue.user),
        "sub_issues_summary": {
            "total": len(subs),
            "completed": done,
            "percent_completed": done * 100 // len(subs) if subs else 0,
        },
    }
    if issue.parent is not None:
        out["parent_issue_url"] = f"{api}/issues/{issue.parent}"
    if issue.pull:
        merged = iso(issue.pull.merged_at)
        out["pull_request"] = {
            "url": f"{api}/pulls/{n}",
            "html_url": web,
            "diff_url": f"{web}.diff",
            "patch_url": f"{web}.patch",
            "merged_at": merged,
        }
        out["draft"] = issue.pull.draft
    return out


def issue_comment(state: State, site: Site, comment: Comment) -> JSON:
    kind = "pull" if state.issues[comment.issue].pull else "issues"
    return {
        "id": comment.id,
        "node_id": node_id("IC", comment.id),
        "url": f"{site.repo_api}/issues/comments/{comment.id}",
        "html_url": f"{site.repo_web}/{kind}/{comment.issue}#issuecomment-{comment.id}",
        "body": comment.body,
        "user": person(state, site, comment.user),
        "created_at": iso(comment.created_at),
        "updated_at": iso(comment.updated_at),
        "issue_url": f"{site.repo_api}/issues/{comment.issue}",
        "author_association": association(state, comment.user),
    }


def review(state: State, site: Site, rev: Review) -> JSON:
    html = f"{site.repo_web}/pull/{rev.pull}#pullrequestreview-{rev.id}"
    pull_url = f"{site.repo_api}/pulls/{rev.pull}"
    out: JSON = {
        "id": rev.id,
        "node_id": node_id("PRR", rev.id),
        "user": person(state, site, rev.user),
        "body": rev.body,
        "state": rev.state,
        "html_url": html,
        "pull_request_url": pull_url,
        "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
        "commit_id": rev.commit_id,
        "author_association": association(state, rev.user),
    }
    if rev.submitted_at is not None:  # a pending review has none
        out["submitted_at"] = iso(rev.submitted_at)
    return out


def review_comment(state: State, site: Site, c: ReviewComment) -> JSON:
    url = f"{site.repo_api}/pulls/comments/{c.id}"
    html = f"{site.repo_web}/pull/{c.pull}#discussion_r{c.id}"
    pull_url = f"{site.repo_api}/pulls/{c.pull}"
    out: JSON = {
        "url": url,
        "pull_request_review_id": c.review_id,
        "id": c.id,
        "node_id": node_id("PRRC", c.id),
        "diff_hunk": c.diff_hunk,
        "path": c.path,
        "position": c.position,
        "original_position": c.position,
        "commit_id": c.commit_id,
        "original_commit_id": c.commit_id,
        "user": person(state, site, c.user),
        "body": c.body,
        "created_at": iso(c.created_at),
        "updated_at": iso(c.updated_at),
        "html_url": html,
        "pull_request_url": pull_url,
        "author_association": association(state, c.user),
        "_links": {"self": {"href": url}, "html": {"href": html}, "pull_request": {"href": pull_url}},
        "start_line": None,
        "original_start_line": None,
        "start_side": None,
        "line": c.line,
        "original_line": c.line,
        "side": c.side,
        "subject_type": "line",
    }
    if c.in_reply_to is not None:
        out["in_reply_to_id"] = c.in_reply_to
    return out


# --- CI ---


def actions_app(site: Site) -> JSON:
    """The GitHub Actions app (an Integration), as its check runs carry it."""
    return {
        "id": ACTIONS_APP_ID,
        "slug": "github-actions",
        "node_id": "MDM6QXBwMTUzNjg=",
        "owner": user(site, "github", 9919, org=True),
        "name": "GitHub Actions",
        "description": "Automate your workflow from idea to production",
        "external_url": "https://help.github.com/en/actions",
        "html_url": f"{site.web}/apps/github-actions",
        "created_at": "2018-07-30T09:30:17Z",
        "updated_at": "2024-04-10T20:33:16Z",
        "permissions": {"checks": "write", "contents": "write", "issues": "write", "metadata": "read"},
        "events": ["check_run", "check_suite", "pull_request", "push", "workflow_dispatch"],
    }


def check_run(state: State, site: Site, check: Check) -> JSON:
    api = site.repo_api
    html = (
        f"{site.repo_web}/actions/runs/{check.run_id}/job/{check.id}"
        if check.actions
        else f"{site.repo_web}/runs/{check.id}"
    )
    pulls = [i for i in state.issues.values() if i.pull and i.state == "open" and state.refresh(i)[0] == check.head_sha]
    return {
        "id": check.id,
        "head_sha": check.head_sha,
        "node_id": node_id("CR", check.id),
        "external_id": "" if check.actions else str(check.id),
        "url": f"{api}/check-runs/{check.id}",
        "html_url": html,
        "details_url": html if check.actions else f"https://ci.test/builds/{check.id}",
        "status": check.status,
        "conclusion": check.conclusion,
        "started_at": iso(check.started_at),
        "completed_at": iso(check.completed_at),
        "output": {
            "title": check.title,
            "summary": check.summary,
            "text": check.text,
            "annotations_count": 0,
            "annotations_url": f"{api}/check-runs/{check.id}/annotations",
        },
        "name": check.name,
        "check_suite": {"id": check.suite_id},
        "app": actions_app(site) if check.actions else None,
        "pull_requests": [_pull_minimal(site, i) for i in pulls],
    }


def _pull_minimal(site: Site, issue: Issue) -> JSON:
    pull = issue.pull
    assert pull is not None
    repo = {"id": 501, "url": site.repo_api, "name": site.repo}
    return {
        "id": pull.id,
        "number": issue.number,
        "url": f"{site.repo_api}/pulls/{issue.number}",
        "head": {"ref": pull.head, "sha": pull.head_sha, "repo": repo},
        "base": {"ref": pull.base, "sha": pull.base_sha, "repo": repo},
    }


def job(site: Site, check: Check) -> JSON:
    """An Actions Job: the check run's job, its steps, and the runner that took it."""
    api = site.repo_api
    ran = check.started_at is not None
    steps = [
        {
            "name": s.name,
            "status": s.status,
            "conclusion": s.conclusion,
            "number": s.number,
            "started_at": iso(check.started_at),
            "completed_at": iso(check.completed_at) if s.status == "completed" else None,
        }
        for s in check.steps
    ]
    return {
        "id": check.id,
        "run_id": check.run_id,
        "run_url": f"{api}/actions/runs/{check.run_id}",
        "run_attempt": 1,
        "node_id": node_id("CR", check.id),
        "head_sha": check.head_sha,
        "url": f"{api}/actions/jobs/{check.id}",
        "html_url": f"{site.repo_web}/actions/runs/{check.run_id}/job/{check.id}",
        "status": check.status,
        "conclusion": check.conclusion,
        "created_at": iso(check.created_at),
        "started_at": iso(check.started_at or check.created_at),
        "completed_at": iso(check.completed_at),
        "name": check.name,
        "steps": steps,
        "check_run_url": f"{api}/check-runs/{check.id}",
        "labels": ["ubuntu-latest"],
        "runner_id": 7 if ran else None,
        "runner_name": "GitHub Actions 7" if ran else None,
        "runner_group_id": 0 if ran else None,
        "runner_group_name": "GitHub Actions" if ran else None,
        "workflow_name": check.workflow_name,
        "head_branch": check.head_branch,
    }


def job_log(check: Check) -> str:
    """The job's log as GitHub serves it: every line stamped with 100 ns precision, each step a
    ##[group]; the test's `log` lines go into the first failed step (else the last)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(check.started_at or check.created_at)) + ".1234567Z "
    failed = next((s for s in check.steps if s.conclusion in ("failure", "timed_out", "cancelled")), None)
    target = failed or (check.steps[-1] if check.steps else None)
    lines: list[str] = []
    for step in check.steps:
        lines += [f"##[group]{step.name}", "##[endgroup]"]
        if step is target:
            lines += check.log.splitlines()
        if step is failed:
            lines.append("##[error]Process completed with exit code 1.")
    if target is None:
        lines += check.log.splitlines()
    return "".join(f"{stamp}{line}\n" for line in lines)


def combined_status(state: State, site: Site, sha: str) -> JSON:
    latest: dict[str, Status] = {}
    for status in state.statuses:
        if status.sha == sha:
            latest[status.context] = status
    states = {s.state for s in latest.values()}
    overall = (
        "failure" if states & {"failure", "error"} else "pending" if "pending" in states or not latest else "success"
    )
    return {
        "state": overall,
        "statuses": [simple_status(site, s) for s in latest.values()],
        "sha": sha,
        "total_count": len(latest),
        "repository": minimal_repository(state, site),
        "commit_url": f"{site.repo_api}/commits/{sha}",
        "url": f"{site.repo_api}/commits/{sha}/status",
    }


def simple_status(site: Site, s: Status) -> JSON:
    return {
        "description": s.description,
        "id": s.id,
        "node_id": node_id("SC", s.id),
        "state": s.state,
        "context": s.context,
        "target_url": s.target_url,
        "avatar_url": avatar(ACTIONS_APP_ID),
        "url": f"{site.repo_api}/statuses/{s.sha}",
        "created_at": iso(s.created_at),
        "updated_at": iso(s.updated_at),
    }


# --- the rest ---


def rate_limit(limit: int, remaining: int, reset: int) -> JSON:
    """RateLimitOverview (2026-03-10 dropped the top-level `rate`)."""
    core = {"limit": limit, "remaining": remaining, "reset": reset, "used": limit - remaining}
    search = {"limit": 30, "remaining": 30, "reset": int(time.time()) + 60, "used": 0}
    graphql = {"limit": 5000, "remaining": 5000, "reset": reset, "used": 0}
    return {"resources": {"core": core, "search": search, "graphql": graphql}}


def error(
    message: str, status: int, docs: str = "https://docs.github.com/rest", errors: list[Any] | None = None
) -> JSON:
    """GitHub's error body: a BasicError (with `status`, a string), or with `errors` a
    ValidationError, whose description has no `status`."""
    if errors is not None:
        return {"message": message, "documentation_url": docs, "errors": errors}
    return {"message": message, "documentation_url": docs, "status": str(status)}
