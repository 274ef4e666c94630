"""The forge's repository: a bare repository that tests add as `origin` and push to with real
git over a local path. Pull requests read their SHAs from its refs; merges through the API are
real commits written with plumbing (`merge-tree --write-tree`, `commit-tree`, `update-ref` with
the old value), as GitHub writes them. Nothing else in the forge runs git."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


class GitError(RuntimeError):
    pass


@dataclass(frozen=True)
class Identity:
    name: str
    email: str


GITHUB = Identity("GitHub", "noreply@github.com")  # the committer of every merge GitHub writes


def run(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None, check: bool = True) -> str:
    r = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, input=stdin, env={**os.environ, **(env or {})}
    )
    if check and r.returncode != 0:
        raise GitError(f"git {' '.join(args)} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r.stdout.strip() if r.returncode == 0 else ""


def init_bare(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True, capture_output=True)


def rev_parse(repo: Path, rev: str) -> str | None:
    """The commit `rev` names, or None."""
    return run(repo, "rev-parse", "-q", "--verify", f"{rev}^{{commit}}", check=False) or None


def branch_sha(repo: Path, branch: str) -> str | None:
    return rev_parse(repo, f"refs/heads/{branch}")


def resolve(repo: Path, ref: str) -> str | None:
    """A commit from what the API accepts as a ref: a branch name (it may hold slashes), a tag,
    a full ref or a SHA."""
    for rev in (f"refs/heads/{ref}", f"refs/tags/{ref}", ref):
        if sha := rev_parse(repo, rev):
            return sha
    return None


def branches_at(repo: Path, sha: str) -> list[str]:
    """The branches whose tip is `sha`."""
    return run(repo, "for-each-ref", "--points-at", sha, "--format=%(refname:short)", "refs/heads").split()


def is_ancestor(repo: Path, ancestor: str, commit: str) -> bool:
    r = subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", ancestor, commit], capture_output=True)
    return r.returncode == 0


def merge_tree(repo: Path, ours: str, theirs: str) -> str | None:
    """The tree of merging `theirs` into `ours`, or None when they conflict."""
    r = subprocess.run(
        ["git", "-C", str(repo), "merge-tree", "--write-tree", ours, theirs], capture_output=True, text=True
    )
    if r.returncode not in (0, 1):
        raise GitError(f"git merge-tree {ours} {theirs} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout.split("\n", 1)[0] if r.returncode == 0 else None


def _identity_env(author: Identity, committer: Identity, author_date: str | None = None) -> dict[str, str]:
    env = {
        "GIT_AUTHOR_NAME": author.name,
        "GIT_AUTHOR_EMAIL": author.email,
        "GIT_COMMITTER_NAME": committer.name,
        "GIT_COMMITTER_EMAIL": committer.email,
    }
    if author_date:
        env["GIT_AUTHOR_DATE"] = author_date
    return env


def commit_tree(
    repo: Path, tree: str, parents: list[str], message: str, author: Identity, committer: Identity = GITHUB
) -> str:
    args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p)), "-F", "-"]
    return run(repo, *args, env=_identity_env(author, committer), stdin=message)


def update_ref(repo: Path, ref: str, new: str, old: str | None) -> bool:
    """Move `ref` to `new` only if it is still at `old` (None: only if it does not exist yet),
    as GitHub's merge does: a push that lands in between fails the merge, not the push."""
    r = subprocess.run(
        ["git", "-C", str(repo), "update-ref", ref, new, old or "0" * 40], capture_output=True, text=True
    )
    return r.returncode == 0


def delete_ref(repo: Path, ref: str) -> bool:
    old = rev_parse(repo, ref)
    if old is None:
        return False
    run(repo, "update-ref", "-d", ref, old, check=False)
    return rev_parse(repo, ref) is None


def commits_between(repo: Path, base: str, head: str) -> list[str]:
    """The commits `head` has that `base` has not, oldest first."""
    out = run(repo, "rev-list", "--reverse", "--topo-order", f"{base}..{head}")
    return out.split() if out else []


def numstat(repo: Path, base: str, head: str) -> tuple[int, int, int]:
    """Additions, deletions and changed files of the pull request's diff (base...head)."""
    additions = deletions = files = 0
    for line in run(repo, "diff", "--numstat", f"{base}...{head}").splitlines():
        added, deleted, _path = line.split("\t", 2)
        files += 1
        additions += int(added) if added.isdigit() else 0  # "-" for a binary file
        deletions += int(deleted) if deleted.isdigit() else 0
    return additions, deletions, files


def file_diff(repo: Path, base: str, head: str, path: str) -> str:
    return run(repo, "diff", f"{base}...{head}", "--", path)


def message(repo: Path, sha: str) -> str:
    return run(repo, "log", "-1", "--format=%B", sha)


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    tree: str
    parents: list[str]
    author: Identity
    author_date: str  # ISO 8601, e.g. 2026-12-06T10:00:00+00:00
    committer: Identity
    committer_date: str
    message: str


def commit_info(repo: Path, sha: str) -> CommitInfo:
    fields = run(repo, "log", "-1", "--format=%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B", sha)
    h, tree, parents, an, ae, ad, cn, ce, cd, body = fields.split("\x00", 9)
    return CommitInfo(h, tree, parents.split(), Identity(an, ae), ad, Identity(cn, ce), cd, body.strip())


def cherry_pick(repo: Path, onto: str, commit: str) -> str | None:
    """`commit` replayed onto `onto` (a rebase merge's step), or None on a conflict. git 2.39's
    merge-tree has no --merge-base: the commit's parent becomes the merge base by merging two
    throwaway commits that share it (never referenced, so gc drops them)."""
    info = commit_info(repo, commit)
    if len(info.parents) != 1:
        return None  # GitHub's rebase merge refuses merge commits too
    parent = commit_info(repo, info.parents[0])
    base = commit_tree(repo, parent.tree, [], "base", GITHUB)
    theirs = commit_tree(repo, info.tree, [base], "theirs", GITHUB)
    ours = commit_tree(repo, commit_info(repo, onto).tree, [base], "ours", GITHUB)
    tree = merge_tree(repo, ours, theirs)
    if tree is None:
        return None
    env = _identity_env(info.author, GITHUB, info.author_date)
    return run(repo, "commit-tree", tree, "-p", onto, "-F", "-", env=env, stdin=info.message)


def write_commit(repo: Path, branch: str, files: dict[str, str | None], message: str, author: Identity) -> str:
    """Commit `files` (path -> text, None deletes it) on `branch` of the bare repository, as a
    push by someone else would land there; returns the new commit."""
    parent = branch_sha(repo, branch)
    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        run(repo, "read-tree", *([parent] if parent else ["--empty"]), env=env)
        for path, text in files.items():
            if text is None:
                run(repo, "update-index", "--force-remove", path, env=env)
                continue
            blob = run(repo, "hash-object", "-w", "--stdin", stdin=text)
            run(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        tree = run(repo, "write-tree", env=env)
    sha = commit_tree(repo, tree, [parent] if parent else [], message, author, author)
    if not update_ref(repo, f"refs/heads/{branch}", sha, parent):
        raise GitError(f"{branch} moved while a commit was written on it")
    return sha


def diff_hunk(diff: str, line: int, side: str = "RIGHT") -> tuple[str, int] | None:
    """GitHub's `diff_hunk` of a review comment on `line` (of the new file for RIGHT, the old
    for LEFT): its hunk's header and lines up to the commented one; and the comment's
    `position`, the line's place below the file's first @@ header (later headers count)."""
    hunk: list[str] = []
    position = old = new = 0
    for text in diff.splitlines():
        if m := HUNK.match(text):
            position += 1 if hunk else 0
            old, new, hunk = int(m[1]), int(m[2]), [text]
            continue
        if not hunk or text.startswith("\\"):  # the file header; "\ No newline at end of file"
            continue
        position += 1
        hunk.append(text)
        mark = text[:1]
        here = {"-": (old, None), "+": (None, new)}.get(mark, (old, new))
        old += mark != "+"
        new += mark != "-"
        if here[side == "RIGHT"] == line:
            return "\n".join(hunk), position
    return None
