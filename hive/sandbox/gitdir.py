"""A sandboxed attempt's own git directory.

A git worktree's `.git` is a file pointing into the main repository's `.git`: commits write
objects and refs there, so an agent that can commit in a worktree could move `main`, rewrite
another task's branch or delete objects. In the sandbox the worktree's `.git` shows a file
pointing to a private git directory instead (`Paths.private_gitdir`): its own refs, index and
new objects, main's objects borrowed read-only through `objects/info/alternates`. Hive alone
brings the agent's commits back into the task's branch (`bring_back`), without ever running
git inside the agent's directory (whose config the agent controls): its tip is read from the
ref file, its new objects are read through GIT_ALTERNATE_OBJECT_DIRECTORIES by the main
repository's own git.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from hive.adapters import git
from hive.errors import CommandError
from hive.store.files import atomic_write

SYNCED = "hive-synced"  # the branch's commit Hive last brought back (or started it at)
_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")


def gitfile(private: Path) -> Path:
    """What the sandbox shows as the worktree's `.git`."""
    return private.with_name(private.name + ".gitfile")


def create(private: Path, worktree: Path, branch: str, refs: dict[str, str], excludes: Path) -> Path:
    """The attempt's private git directory for `worktree`, on `branch` (as its worktree is),
    with `refs` (name -> commit: the branch, and main for a resolve attempt), the worktree's
    index and its `excludes` file. Returns the file to show as the worktree's `.git`. Read
    from the worktree's own files, without a git command: it is on every attempt's path."""
    admin = _admin_dir(worktree)
    common = (admin / (admin / "commondir").read_text().strip()).resolve()
    shutil.rmtree(private, ignore_errors=True)  # a half-made one of a run killed here
    (private / "objects" / "info").mkdir(parents=True)
    (private / "refs" / "tags").mkdir(parents=True)
    (private / "objects" / "info" / "alternates").write_text(f"{common / 'objects'}\n")
    for name, commit in refs.items():
        ref = private / "refs" / "heads" / name
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(f"{commit}\n")
    (private / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    config = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    config += f"\texcludesFile = {_config_value(str(excludes))}\n"
    # no `git maintenance run --auto` after each of the agent's commits (a process each time):
    # the directory lives for one attempt, and its objects are brought back and checked anyway
    config += "[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n"
    (private / "config").write_text(config)
    if (admin / "index").exists():
        shutil.copyfile(admin / "index", private / "index")
    (private / SYNCED).write_text(f"{refs[branch]}\n")
    # written whole before any sandbox is shown it, and made anew by an attempt started again:
    # no fsync (~5 ms on every attempt's way) is needed
    gitfile(private).write_text(f"gitdir: {private}\n")
    return gitfile(private)


def _config_value(text: str) -> str:
    """`text` as a value in a git config file: quoted, so that a `#` or `;` in a path is not
    read as a comment, with git's escapes for a backslash, a quote and a line break."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _admin_dir(worktree: Path) -> Path:
    """The main repository's folder for this worktree, as its `.git` file names it."""
    pointer = (worktree / ".git").read_text().strip()
    if not pointer.startswith("gitdir: "):
        raise CommandError(["read", str(worktree / ".git")], 1, f"not a worktree's .git file: {pointer[:80]!r}")
    admin = Path(pointer.removeprefix("gitdir: "))
    return admin if admin.is_absolute() else (worktree / admin).resolve()


def tip(private: Path, branch: str) -> str:
    """The agent's branch as its private directory records it ("" if it has none): the loose
    ref, else its line in packed-refs, read as text."""
    try:
        loose = (private / "refs" / "heads" / branch).read_text().strip()
    except OSError:
        loose = ""
    if _SHA.match(loose):
        return loose
    try:
        packed = (private / "packed-refs").read_text().splitlines()
    except OSError:
        return ""
    for line in packed:
        sha, _, name = line.partition(" ")
        if name == f"refs/heads/{branch}" and _SHA.match(sha):
            return sha
    return ""


def pending(private: Path, branch: str) -> bool:
    """Has the agent committed since Hive last brought its commits back? Two small file reads,
    no git: a Ray node asks at every look at its attempt."""
    try:
        synced = (private / SYNCED).read_text().strip()
    except OSError:
        return False
    new = tip(private, branch)
    return bool(new) and new != synced


def bring_back(root: Path, worktree: Path, private: Path, branch: str) -> str:
    """Make the task's branch in the main repository what the agent committed in its private
    directory; then the worktree's index matches it. Idempotent, and safe to repeat after a
    kill -9 at any line. Returns what it did, for the log ("" = nothing new)."""
    if not private.is_dir():
        return ""
    new = tip(private, branch)
    try:
        synced = (private / SYNCED).read_text().strip()
    except OSError:
        synced = ""
    ref = f"refs/heads/{branch}"
    current = git.try_rev_parse(root, ref)
    if not new or new == synced or not current:
        return ""
    if new != current:
        _copy_objects(root, private, new, current)
        if not git.update_ref(root, ref, new, current):
            return ""
    if worktree.is_dir():
        git.git(worktree, "reset", "-q", check=False)  # its index: the agent's commit, files untouched
    atomic_write(private / SYNCED, f"{new}\n")
    return f"brought its commits back from its sandbox ({current[:10]} → {new[:10]})"


def remove(private: Path) -> None:
    shutil.rmtree(private, ignore_errors=True)
    gitfile(private).unlink(missing_ok=True)


def _copy_objects(root: Path, private: Path, new: str, have: str) -> None:
    """The objects of `new` the main repository lacks, packed by its own git reading the
    agent's objects (never the agent's config or hooks), checked and stored in it."""
    reading = {"GIT_ALTERNATE_OBJECT_DIRECTORIES": str(private / "objects")}
    pack = git.feed(root, f"{new}\n^{have}\n".encode(), "pack-objects", "--revs", "--stdout", "-q", env=reading)
    git.store_pack(root, pack, strict=True)
