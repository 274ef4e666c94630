"""A task attempt's git worktree (an adapter: git and files only): create it, place the
agent's brief in it, remove it only when git proves its work is safe."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hive.adapters import git, gitmerge
from hive.crashsafe import crash_point
from hive.errors import CommandError, HiveError
from hive.lifecycle import State
from hive.store import names
from hive.store.files import atomic_write
from hive.store.paths import Paths

if TYPE_CHECKING:
    from hive.store.state import TaskState

# how the brief Hive writes begins (hive/templates/context.md.j2): told apart from a project's own file
MARKER = "<!-- hive:context "

# What runs in a checkout just before it is removed (`[worktrees] teardown`, engine.taskenv): the
# caller's, so this adapter stays git and files; it is called once per removal, of a sound checkout.
Teardown = Callable[[Path], None]


def ensure_ignored_dir(base: Path) -> None:
    """`worktrees/` ignores itself, so nothing of Hive's shows in the user's `git status`."""
    base.mkdir(parents=True, exist_ok=True)
    marker = base / ".gitignore"
    if not marker.exists():
        atomic_write(marker, "# created by Hive: agent worktrees live here\n*\n")


def create(root: Path, path: Path, branch: str, start: str) -> None:
    ensure_ignored_dir(path.parent)
    git.worktree_add(root, path, branch, start)


def checkout_existing(root: Path, path: Path, branch: str) -> None:
    """A worktree for an existing branch (to merge work whose worktree was removed)."""
    ensure_ignored_dir(path.parent)
    git.worktree_prune(root)  # a deleted worktree still "has the branch checked out" until pruned
    git.worktree_checkout(root, path, branch)


# What a worktree directory turns out to be.
OK, MISSING, UNFINISHED, FOREIGN, MOVING = "ok", "missing", "unfinished", "foreign", "moving"

# The lock a checkout holds while Hive moves it (`move`): git never prunes a locked worktree, so
# a move cut short between git's rename and its record of the new place is found and repaired.
MOVING_LOCK = "hive: moving"


def health(path: Path) -> str:
    """Prove that `path` is a finished worktree of its own before any git command runs
    in it. UNFINISHED: `git worktree add` was killed before its checkout completed (it
    is still locked "initializing", or has no index): it looks like "every file
    deleted" and holds no work. FOREIGN: git does not see a worktree top level there
    (a directory left without its `.git` file)."""
    if not path.exists():
        return MISSING
    dirs = git.worktree_dirs(path)
    if dirs is None or dirs[0].resolve() != path.resolve():
        return FOREIGN
    try:
        lock = (dirs[1] / "locked").read_text(errors="replace").strip()
    except FileNotFoundError:
        lock = ""
    if lock == "initializing" or not (dirs[1] / "index").exists():
        return UNFINISHED
    return MOVING if lock == MOVING_LOCK else OK


def clear_if_broken(root: Path, path: Path) -> str | None:
    """None if `path` is a sound worktree to work in (one whose move was cut short is finished
    first); otherwise what is there is cleared away (see `repair`) and what was done is returned
    ("" if nothing was there)."""
    state = health(path)
    if state == MOVING:
        _finish_move(root, path)
        state = health(path)
    return None if state == OK else repair(root, path, state)


def move(root: Path, path: Path, to: Path, point: str) -> None:
    """Move a sound checkout to `to`, locked while it moves: a kill -9 anywhere leaves it at one
    place or the other, whole, which `clear_if_broken` finishes (git's own move renames the
    folder and then records where it went; a prune in between would forget it)."""
    git.worktree_lock(root, path, MOVING_LOCK)
    git.worktree_move(root, path, to)
    crash_point(point)
    git.worktree_unlock(root, to)


def _finish_move(root: Path, path: Path) -> None:
    git.worktree_repair(root, path)  # git's record of it points here again
    git.worktree_unlock(root, path)


def park(root: Path, worktree: Path, spare: Path) -> str:
    """Keep a checkout whose work is all in main as its worker's spare (`reuse`): detached (its
    branch can go), Hive's own files (brief, copies, what only its per-attempt ignore file
    hid) removed, the project's ignored files kept. "" on success, else why it was not kept."""
    if spare.exists():
        return "the worker keeps a spare checkout already"
    try:
        git.detach(worktree)
        _unexclude(root, worktree)
        git.clean(worktree)
        move(root, worktree, spare, "in-park")
    except CommandError as e:
        git.worktree_unlock(root, worktree)
        return str(e)
    return ""


def reuse(root: Path, spare: Path, path: Path, branch: str, start: str) -> bool:
    """The worker's spare checkout as a new attempt's worktree at `path`, on `branch` made at
    `start`: switched where it lies, then moved, so `path` never holds a checkout half-switched.
    False (and the spare cleared away) if there is none or it will not serve. No clean: `park`
    left nothing untracked, and a switch cut short writes only files it then owns."""
    if not spare.exists() or clear_if_broken(root, spare) is not None:
        return False
    try:
        git.switch_new_branch(spare, branch, start)
        crash_point("in-switch")
        move(root, spare, path, "in-reuse")
    except CommandError:
        if clear_if_broken(root, path) is None:  # git moved it, then failed: the move is finished now
            return True
        git.worktree_unlock(root, spare)
        if spare.exists():
            _remove(root, spare, None)
        return False
    return True


def settle_spare(root: Path, spare: Path) -> str | None:
    """A spare as its worker takes it, after a kill: whole (a move cut short is finished),
    detached and without untracked files (a reuse cut between its switch and its move left it on
    the new attempt's branch, which it would keep from being deleted, maybe half-switched).
    None if it is sound; else what clearing it away did."""
    note = clear_if_broken(root, spare)
    if note is None and git.current_branch(spare):
        git.detach(spare)
        git.clean(spare)
    return note


def repair(root: Path, path: Path, state: str) -> str:
    """Clear away a worktree that cannot be worked in; returns what was done. A half-made
    one holds no work and is removed; a directory git does not know is removed if empty,
    else moved aside to .hive/salvage/ (never deleted: it may hold someone's files)."""
    note = ""
    if state == UNFINISHED:
        try:
            git.worktree_remove(root, path, locked_too=True)
        except CommandError:
            shutil.rmtree(path, ignore_errors=True)
        note = f"removed {path}: creating it was interrupted before its checkout completed"
    elif state == FOREIGN:
        try:
            note = _clear_foreign(root, path)
        except FileNotFoundError:  # someone removed it meanwhile
            note = ""
        except OSError as e:
            raise HiveError(
                f"{path}: git does not see a worktree there, and it cannot be moved aside: {e}; move it away yourself"
            ) from None
    git.worktree_unlock(root, path)  # git never prunes a worktree left locked "initializing"
    git.worktree_prune(root)
    return note


def _clear_foreign(root: Path, path: Path) -> str:
    if not any(path.iterdir()):
        path.rmdir()
        return f"removed {path}: an empty directory left by an interrupted `git worktree add`"
    aside = Paths(root).salvaged(path.name)
    aside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), str(aside))
    return f"moved {path} to {aside}: git does not see a worktree there"


def restore_branch(worktree: Path, branch: str) -> None:
    """Undo what an interrupted merge left: a half-done merge, or a detached HEAD at
    a merge commit that never reached main (it is rebuilt from the branch)."""
    if not branch:
        return
    head, merging = git.head_and_merge(worktree)
    if merging:
        gitmerge.merge_abort(worktree)
    if head != f"refs/heads/{branch}":
        git.checkout(worktree, branch, force=True)


def reset_to_branch(worktree: Path, branch: str) -> None:
    """Exactly the branch again, whatever an interrupted merge or checkout left behind:
    a half-done merge, HEAD or index or files of main, files git wrote but never
    recorded (untracked and not ignored). Only once the branch holds all the work."""
    _, merging = git.head_and_merge(worktree)
    if merging:
        gitmerge.merge_abort(worktree)
    git.checkout(worktree, branch, force=True)
    git.clean(worktree)


def set_excludes(root: Path, worktree: Path, excludes: Path, names: list[str]) -> None:
    """Keep Hive's files (the context file, copied secrets) out of the agent's commits,
    for this worktree only, while still honouring the user's global ignores. `excludes`: the
    attempt's copy (its sandbox's git directory names it)."""
    lines = [git.global_excludes(root).rstrip(), "# Hive: never commit these", *[f"/{n}" for n in names]]
    text = "\n".join(line for line in lines if line) + "\n"
    atomic_write(excludes, text, durable=False)
    _exclude(root, worktree, text, excludes)


EXCLUDES = "hive-excludes"  # a worktree's ignore file, in its folder in the repository (gone with it)


def _exclude(root: Path, worktree: Path, text: str, fallback: Path) -> None:
    """The worktree's git reads `text` as its ignore file: its own file, which its config names
    from its first attempt on (issue 44: a `git config`, a process and a lock, fewer on every
    attempt of a reused checkout, and none to park it). Where git would not see the worktree's
    folder plainly, the attempt's file is named, as it always was."""
    folder = git.worktree_folder(worktree)
    if folder is None:
        git.set_worktree_excludes(root, worktree, fallback)
        return
    atomic_write(folder / EXCLUDES, text, durable=False)
    git.enable_worktree_config(str(root))  # once a run: without it the worktree's config is not read
    if git.worktree_excludes(folder) != folder / EXCLUDES:
        git.set_worktree_excludes(root, worktree, folder / EXCLUDES)


def _unexclude(root: Path, worktree: Path) -> None:
    """Hive's names ignored no more (what they hid, `clean` removes), the user's global ones still."""
    folder = git.worktree_folder(worktree)
    if folder is not None and git.worktree_excludes(folder) == folder / EXCLUDES:
        atomic_write(folder / EXCLUDES, git.global_excludes(root), durable=False)
    else:
        git.unset_worktree_excludes(worktree)


def copy_files(root: Path, worktree: Path, files: tuple[str, ...]) -> list[str]:
    copied = []
    for name in files:
        src = root / name
        if not src.exists():
            raise HiveError(f".hive/config.toml: worktrees.copy: {name!r} does not exist in {root}")
        dest = worktree / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest)
        copied.append(name)
    return copied


def untracked(worktree: Path) -> list[str]:
    return [line[3:] for line in git.status(worktree) if line.startswith("?? ")]


def tracked_text(worktree: Path, name: str) -> str | None:
    """The project's own version of the context file, or None if it tracks none."""
    return git.show_file(worktree, "HEAD", name)


def place_context(worktree: Path, name: str, text: str, tracked: bool) -> None:
    """Write the brief as `name`. If the project tracks a file of that name, hide our
    version from git (skip-worktree), so the project's own CLAUDE.md/AGENTS.md is
    never committed over (its text is inside the brief)."""
    if tracked:
        git.skip_worktree(worktree, name)
    atomic_write(worktree / name, text, durable=False)


def retire_context(worktree: Path, name: str) -> None:
    """The agent has finished: put the project's version back (or remove ours)."""
    if git.tracked(worktree, name):
        git.skip_worktree(worktree, name, on=False)
        git.restore_file(worktree, "HEAD", name)
    elif (worktree / name).exists():
        (worktree / name).unlink()


def undo_context_changes(worktree: Path, base: str, name: str) -> bool:
    """If the branch's version of the context file is Hive's brief (an agent committed
    it despite the rules), put back the project's version. True if a fix was needed."""
    if not git.differs(worktree, base, "HEAD", name):
        return False
    branch_text = git.show_file(worktree, "HEAD", name)
    if branch_text is None or MARKER not in branch_text:
        return False
    if git.tracked(worktree, name):
        git.skip_worktree(worktree, name, on=False)
    if git.show_file(worktree, base, name) is None:
        git.remove_file(worktree, name)
    else:
        git.restore_file(worktree, base, name)
    return True


class Oversized(Exception):
    """Files an agent left uncommitted that are bigger than a task may add ([merge] max_file_mb):
    not committed, so never copied into the repository's objects."""

    def __init__(self, files: list[tuple[str, int]]) -> None:
        self.files = files  # (path, size), the biggest first
        super().__init__(", ".join(path for path, _ in files))


def salvage(worktree: Path, message: str, max_bytes: int | None = None) -> bool:
    """Commit what an agent left uncommitted (False if nothing). Refuses a worktree in
    which every file of HEAD is gone: that is a checkout that never happened, and
    committing it would delete the whole project on merge. Oversized if a file to commit
    is over `max_bytes` (None: no limit): nothing is committed then."""
    changes = git.status(worktree)
    deleted = sum(1 for line in changes if "D" in line[:2])
    if deleted and deleted >= git.count_files(worktree, "HEAD"):
        raise HiveError(
            f"{worktree}: every file of its branch is missing; not committing that "
            f"(an interrupted checkout, or someone emptied it) — look at it, then `hive retry`"
        )
    big = _oversized(worktree, changes, max_bytes) if max_bytes is not None else []
    if big:
        raise Oversized(big)
    return bool(changes) and git.commit_all(worktree, message)


def _oversized(worktree: Path, changes: list[str], max_bytes: int) -> list[tuple[str, int]]:
    """The files of porcelain `changes` (added or changed) bigger than `max_bytes`, by lstat:
    nothing is read, however big (a path git quotes is looked up as git wrote it, and skipped)."""
    found = []
    for line in changes:
        path = line[3:].split(" -> ")[-1]
        try:
            info = os.lstat(worktree / path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
            found.append((path, info.st_size))
    return sorted(found, key=lambda f: -f[1])


def remove_if_merged(
    root: Path, worktree: Path, main: str, teardown: Teardown | None = None, spare: Path | None = None
) -> str:
    """Remove a worktree only if its HEAD is contained in main and nothing is uncommitted
    (or keep it as the worker's `spare`). Returns "" on success or why it was kept."""
    note = clear_if_broken(root, worktree)
    if note is not None:
        return note
    if not git.is_ancestor(worktree, "HEAD", main):
        return f"kept {worktree}: its HEAD is not in {main}"
    return _remove(root, worktree, teardown, spare)


def remove_if_clean(root: Path, worktree: Path, teardown: Teardown | None = None, spare: Path | None = None) -> str:
    """Remove a worktree whose work is all committed (its branch keeps the commits), or keep it
    as the worker's `spare`."""
    note = clear_if_broken(root, worktree)
    if note is not None:
        return note
    dirty = git.status(worktree)
    if dirty:
        return f"kept {worktree}: {len(dirty)} uncommitted change(s)"
    return _remove(root, worktree, teardown, spare, clean=True)


def remove_any(root: Path, worktree: Path, teardown: Teardown | None = None) -> str:
    """Remove a worktree whatever it holds (`hive cleanup --force` only)."""
    note = clear_if_broken(root, worktree)
    return _remove(root, worktree, teardown) if note is None else note


def _remove(
    root: Path, worktree: Path, teardown: Teardown | None, spare: Path | None = None, clean: bool = False
) -> str:
    """Reached only once git has shown the checkout sound and its removal safe: a half-made one
    (`repair`) never ran setup nor an agent, so it has nothing to tear down. With a `spare` path
    it is kept there instead, if it holds nothing uncommitted (`clean`: known already)."""
    if teardown is not None:
        teardown(worktree)  # while its files are still there: `docker compose down` reads compose.yaml
    if spare is not None and (clean or not git.status(worktree)) and not park(root, worktree, spare):
        return ""
    try:
        git.worktree_remove(root, worktree)
    except CommandError as e:  # a locked or busy worktree is reported, never fatal
        return f"kept {worktree}: {e}"
    return ""


def delete_branch_if_merged(root: Path, branch: str, main: str) -> str | None:
    """Delete a branch whose commits are all in main: "" when it is gone, None when it is kept
    because it has commits that are not in main (a superseded attempt's), or a warning (a
    leftover branch costs nothing, never a task error)."""
    if not branch:
        return ""
    contained = git.contained(root, f"refs/heads/{branch}", main)
    if contained is None:
        return ""  # already gone
    if not contained:
        return None
    res = git.delete_branch(root, branch)
    return "" if res.code == 0 else f"warning: could not delete merged branch {branch}: {res.output}"


@dataclass(frozen=True)
class Leftovers:
    """What a merged task's tidy-up kept: `notes` for people (a worktree kept, a warning), and
    its superseded attempts' `branches` whose commits are not in main."""

    notes: list[str]
    branches: list[str]


def superseded_note(branches: Iterable[str], main: str) -> str:
    """Told once per branch (TaskState.kept_branches), not at every run (issue 43)."""
    names = ", ".join(branches)
    return (
        f"kept the branches of its superseded attempts, whose commits are not in {main.removeprefix('refs/heads/')}: "
        f"{names} — `hive cleanup` deletes them"
    )


def delete_superseded(root: Path, st: TaskState, main: str, force: bool = False) -> list[str]:
    """A done task's superseded attempts' branches (commits not in main: the work of attempts that
    failed or were sent back), deleted by `hive cleanup`, each said with the commit that brings it
    back. Kept unless `force`, and said why: one checked out in a worktree, or one with a commit
    made after its attempt ended (someone worked on it since)."""
    ended = {h.get("branch", ""): float(h.get("finished_at") or 0) for h in st.history}
    checked_out = {wt["branch"].removeprefix("refs/heads/"): wt["path"] for wt in git.worktrees(root)}
    said = []
    for branch in sorted(b for b in ended.keys() | {st.branch} if b):
        tip = git.try_rev_parse(root, f"refs/heads/{branch}")
        if not tip or git.is_ancestor(root, tip, main):
            continue
        if branch in checked_out:
            said.append(f"kept branch {branch}: it is checked out in {checked_out[branch]}")
            continue
        later = git.commit_time(root, tip) > ended.get(branch, 0.0) + 1 if ended.get(branch) else False
        if later and not force:
            said.append(f"kept branch {branch}: it has a commit made after its attempt ended (`--force` deletes it)")
            continue
        res = git.delete_branch(root, branch)
        if res.code == 0:
            said.append(
                f"deleted branch {branch} of a superseded attempt (`git branch {branch} {tip[:12]}` brings it back)"
            )
        else:
            said.append(f"warning: could not delete branch {branch}: {res.output.strip()}")
    return said


def unused_worktrees(root: Path, base: Path, states: Iterable[TaskState]) -> list[Path]:
    """Worktrees under `base` that no unfinished task records as its own (leftovers of
    a crash, of a lost state file, or made by hand)."""
    used = {Path(st.worktree).resolve() for st in states if st.worktree and st.state != State.DONE}
    base = base.resolve()
    return [
        path
        for path in (Path(wt["path"]).resolve() for wt in git.worktrees(root))
        if base in path.parents and path not in used and not names.is_spare(path.name)
    ]


def spares(root: Path, base: Path) -> list[Path]:
    """The checkouts workers keep for their next task (`park`)."""
    base = base.resolve()
    return [
        path
        for path in (Path(wt["path"]).resolve() for wt in git.worktrees(root))
        if path.parent == base and names.is_spare(path.name)
    ]


def remove_merged_leftovers(
    root: Path,
    st: TaskState,
    main_ref: str,
    existing: set[str] | None = None,
    teardown: Teardown | None = None,
    spare: Path | None = None,
) -> Leftovers:
    """After a task is merged: its worktree (kept as the worker's `spare`, if given) and every
    attempt's branch go, each only if git shows it is contained in main. `existing` (branch
    names, if known) spares a git call per branch that is already gone. Returns what was kept,
    and why."""
    there = bool(st.worktree) and Path(st.worktree).exists()
    kept = [remove_if_merged(root, Path(st.worktree), main_ref, teardown, spare)] if there else []
    # A branch whose worktree was deleted by hand is still "checked out" there until pruned. Pruned
    # only then: a prune can delete the admin folder of a `worktree add` beside it (see git.git).
    if not there:
        git.worktree_prune(root)
    crash_point("before-branch-delete")
    branches = {h.get("branch", "") for h in st.history} | {st.branch}
    if existing is not None:
        branches &= existing
    superseded = []
    for branch in sorted(branches):
        said = delete_branch_if_merged(root, branch, main_ref)
        if said is None:
            superseded.append(branch)
        else:
            kept.append(said)
    return Leftovers([k for k in kept if k], superseded)
