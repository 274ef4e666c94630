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

import os
import re
import shutil
import stat
from pathlib import Path

from hive.adapters import git
from hive.errors import CommandError
from hive.store.files import REF, SMALL, NotAFile, atomic_write, list_untrusted, not_a_file, read_untrusted_text

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
    ref, else its line in packed-refs, read as text — as files the agent wrote (NotAFile for a
    FIFO, a symbolic link on the way, a huge file: issue 37)."""
    loose = _text(private, private / "refs" / "heads" / branch, REF)
    if _SHA.match(loose):
        return loose
    for line in _text(private, private / "packed-refs", PACKED_REFS).splitlines():
        sha, _, name = line.partition(" ")
        if name == f"refs/heads/{branch}" and _SHA.match(sha):
            return sha
    return ""


def _text(private: Path, path: Path, limit: int) -> str:
    """A file of the agent's directory, stripped ("" if it is not there)."""
    try:
        return read_untrusted_text(path, limit, within=private).strip()
    except FileNotFoundError:
        return ""


def pending(private: Path, branch: str) -> bool:
    """Has the agent committed since Hive last brought its commits back? Two small file reads,
    no git: a Ray node asks at every look at its attempt (a file that is not one is news: its
    bring-back says what is wrong)."""
    try:
        synced = _text(private, private / SYNCED, REF)
        new = tip(private, branch)
    except NotAFile:
        return True
    return bool(synced) and bool(new) and new != synced


class TooBig(Exception):
    """The agent's new commits hold files bigger than the task may add ([merge] max_file_mb):
    not brought into the main repository."""

    def __init__(self, files: list[tuple[str, int]]) -> None:
        self.files = files  # (path, size in bytes), the biggest first
        super().__init__(", ".join(f"{path} ({size:,} bytes)" for path, size in files))


def bring_back(root: Path, worktree: Path, private: Path, branch: str, max_bytes: int | None = None) -> str:
    """Make the task's branch in the main repository what the agent committed in its private
    directory; then the worktree's index matches it. Idempotent, and safe to repeat after a
    kill -9 at any line. Returns what it did, for the log ("" = nothing new). What the agent
    left there is checked first: NotAFile for a file that is not one, TooBig for new files
    over `max_bytes` (None: no limit), and nothing is copied then."""
    if not private.is_dir():
        return ""
    new = tip(private, branch)
    synced = _text(private, private / SYNCED, REF)
    ref = f"refs/heads/{branch}"
    current = git.try_rev_parse(root, ref)
    if not new or new == synced or not current:
        return ""
    if new != current:
        _copy_objects(root, private, new, current, max_bytes)
        if not git.update_ref(root, ref, new, current):
            return ""
    if worktree.is_dir():
        git.git(worktree, "reset", "-q", check=False)  # its index: the agent's commit, files untouched
    atomic_write(private / SYNCED, f"{new}\n", durable=False)  # bringing back again is harmless
    return f"brought its commits back from its sandbox ({current[:10]} → {new[:10]})"


def remove(private: Path) -> None:
    shutil.rmtree(private, ignore_errors=True)
    gitfile(private).unlink(missing_ok=True)


# The objects of the agent's commits that the main repository lacks are packed by its own git
# reading the agent's objects (never the agent's config or hooks), then checked and stored in it.
# Its commit-graph is the agent's file too: git must not trust it for the walk.
_PACK = ("-c", "core.commitGraph=false", "pack-objects", "--revs", "--stdout", "-q")
GIT_PATIENCE = 600.0  # for one git command reading the agent's objects (a backstop: they are checked first)
PACKED_REFS = 1024 * 1024
MOST_OBJECT_FILES = 500_000  # loose objects and packs an attempt may leave (a big vendored tree: ~100,000)


def _copy_objects(root: Path, private: Path, new: str, have: str, max_bytes: int | None = None) -> None:
    """The objects of `new` the main repository lacks, once the agent's objects are shown to
    be git's (`_objects`) and none of the new files is over `max_bytes` (TooBig).

    The pack leaves out files over `max_bytes`, so none is ever stored. A small pack (the usual
    one) is stored at once: its strict store refuses a tree naming a file it lacks, storing
    nothing, and only then are the big files looked for — one git command less on every
    sandboxed task's way (issue 44). A big one is looked through first, as its store (git's
    index-pack) would leave a half-written pack behind in the repository when it refuses."""
    reading = _objects(root, private)
    limit = () if max_bytes is None else (f"--filter=blob:limit={max_bytes + 1}",)
    pack = git.feed(root, f"{new}\n^{have}\n".encode(), *_PACK, *limit, env=reading, timeout=GIT_PATIENCE)
    if max_bytes is not None and not git.stored_loose(pack):
        _refuse_big(root, new, have, max_bytes, reading)
    try:
        git.store_pack(root, pack, strict=True)
    except CommandError:
        if max_bytes is not None:
            _refuse_big(root, new, have, max_bytes, reading)
        raise


def _refuse_big(root: Path, new: str, have: str, max_bytes: int, reading: dict[str, str]) -> None:
    big = git.big_files(root, new, have, max_bytes, reading)
    if big:
        raise TooBig(big)


def _objects(root: Path, private: Path) -> dict[str, str]:
    """How the main repository's git reads the agent's objects, once they are shown to be only
    folders and files (a FIFO among them hung that git: issue 37), no more than
    MOST_OBJECT_FILES, with no other alternates than the main repository's objects (as `create`
    wrote them): the environment for that git."""
    objects = private / "objects"
    count = 0
    folders = [objects]
    while folders:
        folder = folders.pop()
        for name in list_untrusted(folder, MOST_OBJECT_FILES + 1):
            path = folder / name
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode):
                folders.append(path)
            elif not stat.S_ISREG(info.st_mode):
                raise not_a_file(path, info.st_mode)
            count += 1
            if count > MOST_OBJECT_FILES:
                raise NotAFile(objects, f"a folder of more than {MOST_OBJECT_FILES:,} files")
    alternates = _text(private, objects / "info" / "alternates", SMALL)
    if Path(alternates) != _main_objects(root):
        raise NotAFile(objects / "info" / "alternates", "changed: it must name only the repository's own objects")
    return {"GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects)}


def _main_objects(root: Path) -> Path:
    return Path(git.common_dir(root)).resolve() / "objects"
