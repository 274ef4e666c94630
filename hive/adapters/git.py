"""Every git command Hive runs, as small verb-named functions (argv lists only); a merge's own
are in adapters/gitmerge.py.

Git never looks above the directory it is run in: a worktree whose `.git` file is
missing must fail loudly, not let git walk up to the user's own checkout and run
`checkout --force` or `commit` there (seen after a kill -9 during `worktree add`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import subprocess
import time
from pathlib import Path

from hive.adapters import proc, procfs
from hive.crashsafe import uninterruptible
from hive.errors import CommandError
from hive.store.files import atomic_write, create_exclusive

log = logging.getLogger("hive.git")

# An agent can write hooks into the shared .git; Hive's own commits and merges never run them.
_NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]
# Hive reads git's messages ("nothing to commit", lock errors), so they must be in English.
_ENV = {"LC_ALL": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0"}


# What git says when it reads every worktree's files (to refuse a branch checked out elsewhere)
# while a `git worktree add` beside it has made that worktree's folder but not yet its files:
# seen under `doit -n 16`, where attempts make their worktrees at the same moment.
# Also a `git worktree add` whose admin folder a `git worktree prune` beside it removed before
# it could write its "locked" file in it (git exits, removing what it made; seen at `doit -n 16`).
_HALF_MADE_WORKTREE = re.compile(
    r"failed to read .*worktrees/[^/]+/commondir|bad object worktrees/[^/\s]+/HEAD"
    r"|could not open '[^']*worktrees/[^/']+/locked' for writing: No such file"
)
HALF_MADE_PATIENCE = 5.0


def git(
    cwd: Path | str, *args: str, check: bool = True, discover: bool = False, stdin: str | None = None
) -> proc.Result:
    """Run git in `cwd`, which must be a repository's top level unless `discover`. A command
    that met another attempt's worktree half-made (it failed before changing anything) runs again."""
    argv, env = ["git", "-C", str(cwd), *args], _env(cwd, discover)
    deadline = time.monotonic() + HALF_MADE_PATIENCE
    while True:
        result = proc.run(argv, check=False, env=env, stdin=stdin, atomic=True)
        if result.code == 0 or not _HALF_MADE_WORKTREE.search(result.output) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if check and result.code != 0:
        raise CommandError(argv, result.code, result.output)
    return result


UNPACK_LIMIT = 100  # git's fetch.unpackLimit


def feed(
    cwd: Path | str, data: bytes, *args: str, env: dict[str, str] | None = None, timeout: float | None = None
) -> bytes:
    """Run git with `data` (binary: a pack, or revisions) on its standard input, with `env`
    added to its environment; returns its standard output. `timeout`: killed after it."""
    argv = ["git", "-C", str(cwd), *args]
    try:
        with uninterruptible():
            done = subprocess.run(
                argv, input=data, env={**_env(cwd), **(env or {})}, capture_output=True, check=False, timeout=timeout
            )
    except subprocess.TimeoutExpired:
        raise CommandError(argv, -9, f"killed: it did not finish within {timeout:g} s") from None
    if done.returncode != 0:
        raise CommandError(argv, done.returncode, done.stderr.decode(errors="replace"))
    return done.stdout


def big_files(
    root: Path | str, new: str, have: str, max_bytes: int, env: dict[str, str] | None = None
) -> list[tuple[str, int]]:
    """The files bigger than `max_bytes` among the objects `new` has and `have` lacks, as
    (path, size), the biggest first: one git command when there are none (the usual case)."""
    walk = ["-c", "core.commitGraph=false", "rev-list", "--objects", f"{new}", f"^{have}"]
    omitted = feed(root, b"", *walk, f"--filter=blob:limit={max_bytes + 1}", "--filter-print-omitted", env=env)
    big = {line[1:] for line in omitted.decode().splitlines() if line.startswith("~")}
    if not big:
        return []
    named: dict[str, str] = {}
    for line in feed(root, b"", *walk, env=env).decode(errors="replace").splitlines():
        sha, _, path = line.partition(" ")
        if sha in big:
            named.setdefault(sha, path)
    sizes = feed(root, "".join(f"{sha}\n" for sha in big).encode(), "cat-file", "--batch-check=%(objectsize)", env=env)
    found = [(named.get(sha, sha), int(size)) for sha, size in zip(big, sizes.decode().split(), strict=True)]
    return sorted(found, key=lambda f: -f[1])


def common_dir(root: Path | str) -> str:
    """The repository's own git folder (its objects, its refs): `.git` in the usual layout."""
    dot_git = Path(root) / ".git"
    if dot_git.is_dir():
        return str(dot_git)
    out = _out(root, "rev-parse", "--git-common-dir")
    return out if os.path.isabs(out) else str(Path(root) / out)


def store_pack(repo: Path | str, pack: bytes, strict: bool = False) -> None:
    """Add a pack's objects to `repo`, touching no ref. Like git fetch, fewer than
    UNPACK_LIMIT objects are stored loose and more as one pack: indexing each small one as
    a pack of its own would leave thousands over a long run, and git looks in each for
    every object. `strict`: the objects came from someone Hive does not trust (checked)."""
    check = ["--strict"] if strict else []
    if stored_loose(pack):
        feed(repo, pack, "unpack-objects", "-q", *check)
    else:
        feed(repo, pack, "index-pack", "--stdin", "--fix-thin", *check)


def stored_loose(pack: bytes) -> bool:
    """Does `store_pack` store this pack's objects loose (unpack-objects: all or, when a check
    fails, none), rather than as a pack (index-pack)?"""
    return int.from_bytes(pack[8:12], "big") < UNPACK_LIMIT


def _env(cwd: Path | str, discover: bool = False) -> dict[str, str]:
    """git's environment: never a repository above `cwd` unless `discover`."""
    env = {**_ENV} if discover else {**_ENV, "GIT_CEILING_DIRECTORIES": os.path.dirname(os.path.abspath(cwd))}
    return proc.clean_env(env)


def _out(cwd: Path | str, *args: str) -> str:
    return git(cwd, *args).stdout.strip()


# "Unable to create '…/index.lock': File exists", also for refs; config locks are named unquoted.
_LOCKED = re.compile(r"\.lock'?: File exists|could not lock config file .*: File exists")
_LOCK_PATH = re.compile(r"Unable to create '([^']+\.lock)'|could not lock config file (\S+): File exists")
# A lock this old that no process holds open was left by a git that died (kill -9).
STALE_LOCK_AGE = 1.0


def _locked_retry(cwd: Path | str, *args: str, check: bool = True, seconds: float = 3.0) -> proc.Result:
    """Run a command that takes one of git's lock files, retrying briefly while another
    git holds it, and removing it if the git that made it is dead."""
    deadline = time.monotonic() + seconds
    while True:
        result = git(cwd, *args, check=False)
        if result.code == 0 or not _LOCKED.search(result.output):
            break
        if remove_stale_lock(cwd, result.output):
            deadline = max(deadline, time.monotonic() + 0.5)
        elif time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if check and result.code != 0:
        raise CommandError(["git", "-C", str(cwd), *args], result.code, result.output)
    return result


def remove_stale_lock(cwd: Path | str, message: str) -> bool:
    """Remove the lock file git complained about if no live process holds it open
    (git keeps its lock files open while it works) and it is not brand new."""
    m = _LOCK_PATH.search(message)
    if not m:
        return False
    lock = Path(cwd) / (m.group(1) or f"{m.group(2)}.lock")
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return True  # gone meanwhile: try again at once
    if age < STALE_LOCK_AGE or procfs.holders(lock):
        return False
    log.info("removing %s: left by a git that is no longer running", lock)
    try:
        lock.unlink()
    except FileNotFoundError:
        pass
    return True


@functools.cache
def version(timeout: float = 10.0) -> proc.Result:
    """`git --version`, unchecked: `hive doctor` and bug reports say what it printed."""
    return proc.run(["git", "--version"], check=False, timeout=timeout)


@functools.cache
def committer(cwd: Path | str) -> tuple[str, ...]:
    """git options giving commits made in `cwd` an identity: Hive's, only where the user has none
    configured. Asked once a process (each merge needs it)."""
    have = git(cwd, "config", "user.email", check=False).stdout.strip()
    return () if have else ("-c", "user.name=Hive", "-c", "user.email=hive@localhost")


def toplevel(path: Path | str) -> Path:
    return Path(git(path, "rev-parse", "--show-toplevel", discover=True).stdout.strip())


def is_repo(path: Path | str) -> bool:
    return git(path, "rev-parse", "--git-dir", check=False, discover=True).code == 0


def worktree_dirs(path: Path | str) -> tuple[Path, Path] | None:
    """(top level, git dir) of the worktree at `path`, or None if git sees none there."""
    linked = _linked(Path(path))
    if linked is not None:
        return linked
    res = git(path, "rev-parse", "--show-toplevel", "--absolute-git-dir", check=False)
    lines = res.stdout.splitlines()
    if res.code != 0 or len(lines) != 2:
        return None
    return Path(lines[0]), Path(lines[1])


def _linked(path: Path) -> tuple[Path, Path] | None:
    """(top level, git dir) of a linked worktree, read where git reads them: its `.git` file
    names its folder in the repository, which holds HEAD, `commondir` and `gitdir` once `git
    worktree add` has made it. Every task's run asks this of its checkout a few times, each a
    git process (~2.5 ms of CPU) otherwise. None: anything else (ask git)."""
    try:
        text = (path / ".git").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    if not text.startswith("gitdir: ") or "\n" in text.rstrip("\n"):
        return None
    gitdir = path / text[len("gitdir: ") :].rstrip("\n")  # relative to the worktree, if it is
    if not all((gitdir / name).is_file() for name in ("HEAD", "commondir", "gitdir")):
        return None
    return Path(os.path.realpath(path)), Path(os.path.realpath(gitdir))


def current_branch(root: Path | str) -> str:
    return git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip()


def rev_parse(root: Path | str, rev: str) -> str:
    return _loose(root, rev) or _out(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")


def tree_of(root: Path | str, rev: str) -> str:
    return _out(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{tree}}")


def try_rev_parse(root: Path | str, rev: str) -> str:
    return (
        _loose(root, rev)
        or git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False).stdout.strip()
    )


# A branch as `_loose` reads it: a name no git syntax can hide in (`..`, `@{`, `^`, `~`, `:`)
_BRANCH_REF = re.compile(r"refs/heads/[A-Za-z0-9_-][A-Za-z0-9_./-]*")
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _loose(root: Path | str, rev: str) -> str:
    """A branch's commit from its loose ref file in the `.git` folder of the repository at
    `root`, which git writes whole (a lock file renamed), so it is never read half-made: one
    file read instead of one git process (~2.5 ms of CPU), asked several times in each task's
    run and merge. "" (ask git) for anything else: another kind of name, a ref only packed, a
    symbolic one, a worktree's `.git` file, the reftable format (its `refs/heads` is a file)."""
    if not _BRANCH_REF.fullmatch(rev) or ".." in rev or rev.endswith((".lock", "/", ".")):
        return ""
    try:
        text = (Path(root) / ".git" / rev).read_text(encoding="ascii")
    except (OSError, ValueError):
        return ""
    sha = text.strip()
    return sha if _OBJECT_ID.fullmatch(sha) else ""


def is_ancestor(root: Path | str, commit: str, of: str) -> bool:
    return git(root, "merge-base", "--is-ancestor", commit, of, check=False).code == 0


def contained(root: Path | str, rev: str, of: str) -> bool | None:
    """Is `rev` contained in `of`? None if `rev` does not exist (one git call)."""
    code = git(root, "merge-base", "--is-ancestor", rev, of, check=False).code
    return True if code == 0 else False if code == 1 else None


def first_parent_since(root: Path | str, rev: str, since: float) -> set[str]:
    """Commits on `rev`'s first-parent line committed after `since` (one call for many ancestor checks)."""
    window = [f"--since={int(since)}"] if since > 0 else []  # git reads a negative --since as "now"
    out = git(root, "rev-list", "--first-parent", *window, rev, check=False).stdout
    return set(out.split())


def merge_of(root: Path | str, rev: str, commit: str, limit: int = 1000) -> str:
    """The merge on `rev`'s first-parent line that brought `commit` in ("" if none of its last
    `limit` did): which merge commit of main holds a task's branch."""
    out = git(root, "rev-list", "--first-parent", "--parents", f"--max-count={limit}", rev, check=False).stdout
    return next((line.split()[0] for line in out.splitlines() if commit in line.split()[2:]), "")


def branch_exists(root: Path | str, name: str) -> bool:
    return bool(try_rev_parse(root, f"refs/heads/{name}"))


def branches(root: Path | str, prefix: str) -> set[str]:
    out = _out(root, "for-each-ref", "--format=%(refname:short)", f"refs/heads/{prefix}")
    return set(out.split())


def commit_time(root: Path | str, rev: str) -> float:
    """When `rev` was committed (its committer date, seconds since the epoch)."""
    return float(_out(root, "log", "-1", "--format=%ct", rev) or 0)


NETWORK_PATIENCE = 300.0  # a push or a fetch that has not finished by then is given up


def fetch(root: Path | str, remote: str, branch: str) -> None:
    """The forge's `branch` as `refs/remotes/<remote>/<branch>` (with the user's own credentials)."""
    _network(root, "fetch", "--no-tags", "--quiet", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}")


def push(root: Path | str, remote: str, commit: str, branch: str, lease: str = "") -> None:
    """`commit` as the forge's `branch`: a plain push, or, with `lease` (the commit Hive pushed
    there last), a forced one that refuses if anyone else pushed since (--force-with-lease)."""
    force = [f"--force-with-lease=refs/heads/{branch}:{lease}"] if lease else []
    _network(root, *_NO_HOOKS, "push", "--quiet", "--no-verify", *force, remote, f"{commit}:refs/heads/{branch}")


def _network(root: Path | str, *args: str) -> None:
    argv = ["git", "-C", str(root), *args]
    result = proc.run(argv, check=False, env=_env(root), timeout=NETWORK_PATIENCE)
    if result.code != 0:
        raise CommandError(argv, result.code, result.output)


def delete_branch(root: Path | str, name: str) -> proc.Result:
    return _locked_retry(root, "branch", "-D", name, check=False)


def update_ref(root: Path | str, ref: str, new: str, old: str | None = None) -> bool:
    """Move a ref, compare-and-swap against `old` when given; False if it moved meanwhile."""
    args = ["update-ref", ref, new] + ([old] if old is not None else [])
    return _locked_retry(root, *args, check=False).code == 0


def worktree_add(root: Path | str, path: Path, branch: str, start: str) -> None:
    # -B: the branch is new to this attempt, but a try that git's checks stopped half-way
    # (another worktree half-made beside it) has already made it; the retry makes it again
    _locked_retry(root, *_NO_HOOKS, "worktree", "add", "-B", branch, str(path), start)


def worktree_checkout(root: Path | str, path: Path, branch: str) -> None:
    _locked_retry(root, *_NO_HOOKS, "worktree", "add", str(path), branch)


def worktree_remove(root: Path | str, path: Path, locked_too: bool = False) -> None:
    """Remove a worktree and its files; `locked_too` also one git left locked
    ("initializing") when it was killed while creating it."""
    _locked_retry(root, "worktree", "remove", "--force", *(["--force"] if locked_too else []), str(path))


def worktree_unlock(root: Path | str, path: Path) -> None:
    dirs = _linked(path)
    if dirs is None:
        git(root, "worktree", "unlock", str(path), check=False)
        return
    with contextlib.suppress(FileNotFoundError):
        (dirs[1] / "locked").unlink()


def worktree_lock(root: Path | str, path: Path, reason: str) -> None:
    """Lock it with `reason`, as `git worktree lock` does (its folder's `locked` file, made
    here directly, whole or not at all: a git process fewer each time a checkout is kept or
    reused); refused if it is locked already."""
    dirs = _linked(path)
    if dirs is None:
        _locked_retry(root, "worktree", "lock", "--reason", reason, str(path))
        return
    try:
        made, why = create_exclusive(dirs[1] / "locked", reason), "it is locked already"
    except OSError as e:
        made, why = False, str(e)
    if not made:
        argv = ["git", "-C", str(root), "worktree", "lock", "--reason", reason, str(path)]
        raise CommandError(argv, 128, f"fatal: cannot lock {path}: {why}")


def worktree_move(root: Path | str, path: Path, to: Path) -> None:
    """Move a worktree; twice forced, as git asks for one that is locked (Hive locks it first)."""
    _locked_retry(root, "worktree", "move", "--force", "--force", str(path), str(to))


def worktree_repair(root: Path | str, path: Path) -> None:
    """Point the worktree's record in the repository at `path` again (a move cut short)."""
    git(root, "worktree", "repair", str(path), check=False)


def switch_new_branch(cwd: Path | str, branch: str, start: str) -> None:
    """HEAD, index and files to `start` on `branch` (made, or moved there): git writes only the files
    that differ, and drops any change to tracked files."""
    _locked_retry(cwd, *_NO_HOOKS, "checkout", "-q", "--force", "-B", branch, start)


def detach(cwd: Path | str) -> None:
    """HEAD detached where it is, files and index untouched (a checkout would stat every file)."""
    _locked_retry(cwd, "update-ref", "--no-deref", "-m", "hive: detach", "HEAD", "HEAD")


def unset_worktree_excludes(worktree: Path) -> None:
    git(worktree, "config", "--worktree", "--unset", "core.excludesFile", check=False)


def worktree_prune(root: Path | str) -> None:
    git(root, "worktree", "prune", check=False)


def worktrees(root: Path | str) -> list[dict[str, str]]:
    """`git worktree list --porcelain` as dicts with path, head, branch."""
    items: list[dict[str, str]] = []
    for line in _out(root, "worktree", "list", "--porcelain").splitlines():
        key, _, value = line.partition(" ")
        if key == "worktree":
            items.append({"path": value, "head": "", "branch": ""})
        elif items and key in ("HEAD", "branch"):
            items[-1]["head" if key == "HEAD" else "branch"] = value
    return items


def status(cwd: Path | str) -> list[str]:
    """Porcelain status lines (tracked changes and untracked files, not ignored ones)."""
    return [ln for ln in git(cwd, "status", "--porcelain", "--untracked-files=all").stdout.splitlines() if ln]


def commit_all(cwd: Path | str, message: str) -> bool:
    """Commit every change (respecting ignores); False if there was nothing to commit."""
    _locked_retry(cwd, "add", "-A")
    res = _locked_retry(cwd, *_NO_HOOKS, *committer(cwd), "commit", "-q", "--no-verify", "-m", message, check=False)
    if res.code == 0:
        return True
    if "nothing to commit" in res.output or "nothing added to commit" in res.output:
        return False
    raise CommandError(["git", "-C", str(cwd), "commit", "-m", message], res.code, res.output)


def checkout(cwd: Path | str, rev: str, detach: bool = False, force: bool = False) -> None:
    _locked_retry(cwd, "checkout", "-q", *(["--detach"] if detach else []), *(["--force"] if force else []), rev)


def clean(cwd: Path | str) -> None:
    """Remove untracked files that are not ignored (never ignored ones: a brief, .env)."""
    git(cwd, "clean", "-fdq")


def head_and_merge(cwd: Path | str) -> tuple[str, bool]:
    """The worktree's HEAD ref ("HEAD" when detached) and whether a merge is in progress.
    A linked worktree's are read from its folder in the repository, as git reads them (asked
    of every task as it finishes); git is asked when the files do not say it plainly: a HEAD
    of another form, or on a branch with no loose ref (packed, or none: git says so)."""
    linked = _linked(Path(cwd))
    if linked is not None:
        gitdir = linked[1]
        try:
            text = (gitdir / "HEAD").read_text(encoding="ascii")
            common = gitdir / (gitdir / "commondir").read_text(encoding="utf-8").strip()
        except (OSError, ValueError):
            text, common = "", gitdir
        ref = text.removeprefix("ref: ").rstrip("\n") if text.startswith("ref: ") else ""
        on_branch = bool(_BRANCH_REF.fullmatch(ref)) and ".." not in ref and (common / ref).is_file()
        if on_branch or (not ref and _OBJECT_ID.fullmatch(text.rstrip("\n"))):
            return ref or "HEAD", (gitdir / "MERGE_HEAD").exists()
    out = _out(cwd, "rev-parse", "--symbolic-full-name", "HEAD", "--git-path", "MERGE_HEAD").splitlines()
    merge_head = Path(out[1]) if Path(out[1]).is_absolute() else Path(cwd) / out[1]
    return out[0], merge_head.exists()


def differs(cwd: Path | str, a: str, b: str, path: str) -> bool:
    return git(cwd, "diff", "--quiet", a, b, "--", path, check=False).code != 0


def merge_base(root: Path | str, a: str, b: str) -> str:
    return _out(root, "merge-base", a, b)


def changed_files(root: Path | str, a: str, b: str, diff_filter: str = "") -> list[str]:
    args = ["diff", "--name-only", "--no-renames"] + ([f"--diff-filter={diff_filter}"] if diff_filter else [])
    return [f for f in _out(root, *args, a, b).splitlines() if f]


def changes(root: Path | str, a: str, b: str) -> list[tuple[str, str]]:
    """(status letter, path) for every file changed from a to b."""
    out = []
    for line in _out(root, "diff", "--name-status", "--no-renames", a, b).splitlines():
        status, _, path = line.partition("\t")
        out.append((status[:1], path))
    return out


def log_oneline(root: Path | str, rev_range: str, limit: int = 30) -> list[str]:
    return _out(root, "log", "--oneline", f"-{limit}", rev_range).splitlines()


def log_with_files(root: Path | str, rev_range: str, limit: int = 20) -> list[str]:
    """`<hash> <subject> (file, file)` per commit, newest first."""
    out = _out(root, "log", f"-{limit}", "--format=%x00%h %s", "--name-only", rev_range)
    lines = []
    for entry in out.split("\0")[1:]:
        head, *files = [line for line in entry.splitlines() if line.strip()]
        lines.append(f"{head} ({', '.join(files[:8])}{', …' if len(files) > 8 else ''})" if files else head)
    return lines


def count_files(cwd: Path | str, rev: str) -> int:
    return len(git(cwd, "ls-tree", "-r", "--name-only", rev, check=False).stdout.splitlines())


def tracked(cwd: Path | str, path: str) -> bool:
    return bool(git(cwd, "ls-files", "--", path, check=False).stdout.strip())


def blob_at(cwd: Path | str, rev: str, path: str) -> str:
    """The blob id of `path` in `rev` ("" if it has none there)."""
    return git(cwd, "rev-parse", "--verify", "--quiet", f"{rev}:{path}", check=False).stdout.strip()


def blob_of_file(cwd: Path | str, path: str) -> str:
    """The blob id the file in the working tree would get if added ("" if it is not there)."""
    return git(cwd, "hash-object", "--", path, check=False).stdout.strip()


def show_file(root: Path | str, rev: str, path: str) -> str | None:
    result = git(root, "show", f"{rev}:{path}", check=False)
    return result.stdout if result.code == 0 else None


def skip_worktree(cwd: Path | str, path: str, on: bool = True) -> None:
    _locked_retry(cwd, "update-index", "--skip-worktree" if on else "--no-skip-worktree", "--", path)


def restore_file(cwd: Path | str, rev: str, path: str) -> None:
    _locked_retry(cwd, "checkout", rev, "--", path)


def remove_file(cwd: Path | str, path: str) -> None:
    _locked_retry(cwd, "rm", "-q", "--cached", "--ignore-unmatch", "--", path)


def worktree_folder(worktree: Path) -> Path | None:
    """A linked worktree's folder in the repository (`.git/worktrees/NAME`: it goes with the
    worktree, and a move keeps it); None if git would not see one there (`_linked`)."""
    linked = _linked(worktree)
    return linked[1] if linked else None


def worktree_excludes(folder: Path) -> Path | None:
    """The ignore file a linked worktree's own config names (`core.excludesFile` in its
    config.worktree, in its `folder`: `worktree_folder`'s), read as git wrote it; None if none,
    or not plainly so (ask git to set it)."""
    try:
        text = (folder / "config.worktree").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    section, named = "", None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.lower()
        elif section == "[core]" and line.lower().startswith("excludesfile"):
            key, _, value = line.partition("=")
            if key.strip().lower() != "excludesfile" or any(c in value for c in '"\\#;'):
                return None  # quoted, escaped or commented: not read here
            named = Path(value.strip())
    return named


def set_worktree_excludes(root: Path | str, worktree: Path, excludes_file: Path) -> None:
    """Per-worktree ignore file (needs the worktreeConfig extension, a no-op for other worktrees)."""
    enable_worktree_config(str(root))
    _locked_retry(worktree, "config", "--worktree", "core.excludesFile", str(excludes_file))


@functools.cache
def enable_worktree_config(root: str) -> None:
    # parallel workers may all get here at once: git's config.lock makes the losers retry
    _locked_retry(root, "config", "extensions.worktreeConfig", "true")


@functools.cache
def global_excludes(root: Path | str) -> str:
    """The user's own global ignore file, so a per-worktree one can include it."""
    configured = git(root, "config", "--path", "core.excludesFile", check=False).stdout.strip()
    candidates = [Path(configured)] if configured else []
    xdg = Path.home() / ".config" / "git" / "ignore"
    candidates.append(xdg)
    for c in candidates:
        if c.is_file():
            return c.read_text(errors="replace")
    return ""


def head(cwd: Path | str) -> str:
    return _out(cwd, "rev-parse", "HEAD")


def exclude_locally(root: Path, patterns: tuple[str, ...]) -> list[str]:
    """Add patterns to the repo's local, never-committed exclude file; those it lacked."""
    exclude = Path(git(root, "rev-parse", "--git-path", "info/exclude").stdout.strip())
    if not exclude.is_absolute():
        exclude = root / exclude
    text = exclude.read_text() if exclude.exists() else ""
    lines = text.splitlines()
    added = [p for p in dict.fromkeys(patterns) if p not in lines]
    if added:
        separator = "" if text.endswith("\n") or not text else "\n"
        atomic_write(exclude, text + separator + "".join(f"{p}\n" for p in added))
    return added
