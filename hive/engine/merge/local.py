"""Publishing to this repository's main: a fast-forward of the user's checkout that holds main (git
refuses rather than overwrite their uncommitted or untracked work), or, when main is not checked
out, a compare-and-swap of the ref."""

from __future__ import annotations

import re
from pathlib import Path

from hive.adapters import git, gitmerge
from hive.engine.merge.types import MergeRequest, Move, Outcome, Published
from hive.output import tail

PUBLISHED, MOVED = Published(Outcome.PUBLISHED), Published(Outcome.MOVED)


class LocalMain:
    """Main in this repository (`[merge] mode = "local"`)."""

    moves_main = True

    def refresh(self, req: MergeRequest) -> None:
        """Main here is always up to date."""

    def publish(self, req: MergeRequest, move: Move) -> Published:
        main_ref, old, new, tips = req.main_ref, move.old, move.new, move.tips
        if tips is not None and tips.checked_out == main_ref:
            holder: Path | str | None = req.root
            head = tips.head
        else:
            holder = next((w["path"] for w in git.worktrees(req.root) if w["branch"] == main_ref), None)
            head = git.rev_parse(holder, "HEAD") if holder is not None else ""
        if holder is None:
            return PUBLISHED if git.update_ref(req.root, main_ref, new, old) else MOVED
        if head != old:
            return MOVED
        res = gitmerge.ff_merge(holder, new)
        if res.code != 0 and git.rev_parse(holder, "HEAD") == old and _undo_interrupted_update(holder, new, res.output):
            res = gitmerge.ff_merge(holder, new)
        if res.code == 0:
            return PUBLISHED
        if git.rev_parse(holder, "HEAD") != old:
            return MOVED
        return Published(Outcome.REFUSED, _refusal(req, holder, res.output))


def _refusal(req: MergeRequest, holder: Path | str, said: str) -> str:
    """One line (the run prints a reason's first line): the files git named, else its last words."""
    named = _in_the_way(said)
    kind = "untracked files" if "untracked working tree files" in said else "changed files"
    what = f"{kind} in the way: {', '.join(named)}" if named else " ".join(tail(said, 3).split())
    return (
        f"could not update your checkout of {req.main_branch} at {holder} without touching your "
        f"uncommitted work ({what}) — commit or stash those files, then `hive retry`"
    )


# git lists the files it will not overwrite, one per line, indented with a tab
_IN_THE_WAY = re.compile(r"would be overwritten by merge:\n((?:\t.*\n?)+)")


def _in_the_way(refusal: str) -> list[str]:
    return [line.strip() for m in _IN_THE_WAY.finditer(refusal) for line in m.group(1).splitlines()]


def _undo_interrupted_update(checkout: Path | str, new: str, refusal: str) -> bool:
    """A fast-forward of the user's checkout that was killed half-way leaves files of
    the new commit written but not recorded, and git then refuses to write them again.
    If every file git names is byte-for-byte what `new` has there, it is Hive's own
    leftover (or the user's identical copy: the result is the same) and is put back as
    HEAD has it; anything else is the user's work, and the merge is refused."""
    named = _in_the_way(refusal)
    if not named or any(
        not (blob := git.blob_of_file(checkout, path)) or blob != git.blob_at(checkout, new, path) for path in named
    ):
        return False
    for path in named:
        if git.blob_at(checkout, "HEAD", path):
            git.restore_file(checkout, "HEAD", path)
        else:
            (Path(checkout) / path).unlink()
    return True
