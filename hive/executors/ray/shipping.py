"""What travels between the controller and a node, and how: an attempt's `Spec` one way,
`Pulled` reports back, and the branch both ways as git bundles through Ray's object
store (no shared filesystem), each one only the commits the other side lacks."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from hive.adapters import git
from hive.errors import CommandError
from hive.logcap import DEFAULT_CAP
from hive.sandbox.policy import Rules

# Each poll ships at most this much new output; the rest follows on the next one.
LOG_CHUNK = 1 << 20


@dataclass(frozen=True)
class Spec:
    """One attempt as the node needs it. Paths are the controller's: the node maps them
    (and every mention of them in argv, environment and brief) onto its own."""

    name: str  # the attempt's session name, unique per attempt
    key: str
    attempt: int
    branch: str
    start: str  # the commit the branch starts at
    argv: list[str]
    env: dict[str, str]  # Hive's variables and the profile's; the node adds its own environment
    unset: tuple[str, ...]
    root: str
    worktree: str
    brief: str  # the context file's name in the worktree
    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)  # placed by Hive: content, mode
    hidden: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    setup: str = ""
    setup_timeout: float = 3600.0
    sandbox: Rules | None = None  # what the sandbox the node makes allows; None: none
    log_cap: int = DEFAULT_CAP  # its log keeps the first and last this many bytes, there and here


@dataclass(frozen=True)
class Cursor:
    """How much of the node's output, notes and discovered items the controller has
    written down. Sent with the next poll, it acknowledges them: a controller that dies
    and comes back resumes from the last acknowledged cursor (at worst a few repeats)."""

    log: int = 0  # a logical offset of the node's log (hive.logcap)
    notes: int = 0
    found: int = 0
    tip: str = ""  # the branch's commit the controller has
    signal: bool = False  # the controller has the signal
    refused: int = 0  # connections its sandbox refused


@dataclass(frozen=True)
class Pulled:
    """A node's answer to one poll."""

    alive: bool
    exit: str | None  # the wrapper's exit file, once the agent ended
    log: bytes
    signal: str | None  # the signal file's text, once the agent signalled
    notes: tuple[str, ...]
    found: tuple[str, ...]  # discovered items (JSON), in the order they were filed
    tip: str  # the attempt's branch there
    cursor: Cursor  # where this answer ends
    commits: bytes = b""  # a bundle of the branch's commits since the cursor's tip
    since: Cursor = Cursor()  # where this answer starts (the cursor it was asked with)
    refused: tuple[str, ...] = ()  # connections its sandbox's proxy refused (JSON lines)
    # where `log` starts in the node's log (None: at `since.log`), and the marker that stands
    # for what was cut out of it before there, when `since.log` lay among those bytes (hive.logcap)
    log_at: int | None = None
    log_marker: bytes = b""

    def after(self, mine: Cursor) -> Pulled | None:
        """This answer without what a controller whose cursor is `mine` already has (two
        answers may overlap: a stop's and a watch's); None if it has all of it."""
        c = self.cursor
        if c.log < mine.log or c.notes < mine.notes or c.found < mine.found or c.refused < mine.refused:
            return None
        s = self.since
        skip = mine.log - (s.log if self.log_at is None else self.log_at)
        return replace(
            self,
            log=self.log[max(0, skip) :],
            log_marker=self.log_marker if skip <= 0 else b"",  # else the earlier answer brought it
            notes=self.notes[max(0, mine.notes - s.notes) :],
            found=self.found[max(0, mine.found - s.found) :],
            refused=self.refused[max(0, mine.refused - s.refused) :],
        )


def create_bundle(repo: Path, ref: str, known: list[str], spool: Path) -> bytes:
    """The commits of `ref` that are not in `known` (commits the receiver has), as a
    bundle's bytes; b"" when there are none."""
    spool.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=spool, suffix=".bundle")
    os.close(fd)
    try:
        res = git.git(repo, "bundle", "create", "-q", tmp, ref, *[f"^{k}" for k in known if k], check=False)
        if res.code != 0:
            if "empty bundle" in res.output:
                return b""
            raise CommandError(["git", "-C", str(repo), "bundle", "create", tmp, ref], res.code, res.output)
        return Path(tmp).read_bytes()
    finally:
        Path(tmp).unlink(missing_ok=True)


def take_bundle(repo: Path, data: bytes) -> None:
    """Add the objects of a bundle made by `create_bundle` to `repo`, touching no ref. Not
    `git fetch` from it: that indexes even one commit as a pack of its own (a long run would
    leave thousands, and git looks in each for every object) and first walks the whole
    repository to check what it fetched is connected; the other side made the bundle against
    commits this repository has (git.store_pack)."""
    _header, _, pack = data.partition(b"\n\n")
    git.store_pack(repo, pack)


def known_commits(repo: Path, tips: list[str]) -> list[str]:
    """Those of `tips` that `repo` holds: what a bundle for it may leave out."""
    asked = [t for t in tips if t]
    if not asked:
        return []
    answer = git.git(repo, "cat-file", "--batch-check=%(objecttype)", stdin="\n".join(asked) + "\n").stdout.split("\n")
    return [t for t, kind in zip(asked, answer, strict=False) if kind == "commit"]
