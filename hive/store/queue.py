"""The merge queue's record (issue 25): which finished tasks wait to reach main, in the order
they will, each with the merge commit it would publish and whether that exact tree passed its
checks.

A task joins at the end when its worker starts to merge it. Its merge commit is built on the
*speculative* tip ahead of it: main for the first, else the merge commit of the task just
ahead (Zuul's "optimistic" pipeline), so every task's checks run at once, each on the tree it
will publish. Publishing is one at a time, in order: the first task moves main from its base
(which main then is) to its merge commit, a fast-forward to exactly the tree verified. When a
task leaves otherwise (failed, conflicted, its worker died) the ones behind it find their base
gone and are built and verified again.

With `[merge] batch = N` (issue 25's batches for expensive checks, after bors and Gas Town's
Refinery) consecutive entries form groups of up to N: a group's leader is its last entry, whose
merge commit holds every member (each is built on the one ahead), and one run of checks on it
verifies them all. A group gathers while the groups ahead of it are checked, and takes no one
more once its checks start. When it passes, main moves from its first member's base to its
leader's merge commit in one step: the members' own merge commits, never verified alone, are
passed over. When it fails, it is bisected: its first half is verified as a group of its own,
and the rest keeps the failure, split again once everything ahead of it has passed, until the
one task that fails alone is found.

One file, `.hive/queue.json`, read and written whole under the merge lock, by the workers
alone (each writes its own entry; any removes the entry of a worker that died, whose task's
claim no process holds). A run started again finds its tasks' entries and goes on from them.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from hive.store.files import FileLock, atomic_write

# what is known of an entry's checks: to run, running (its group takes no one more), passed, failed
PENDING, CHECKING, PASSED, FAILED = "", "checking", "passed", "failed"


@dataclass(frozen=True)
class Entry:
    key: str  # plan:ID
    claim: str  # its task's claim lock: held while its worker lives
    branch: str  # the branch commit it merges
    base: str = ""  # what its merge commit is built on ("": not built yet)
    merged: str = ""  # its merge commit
    files: tuple[str, ...] = ()  # what its merge commit changes on its base
    checks: str = PENDING  # PENDING | CHECKING | PASSED | FAILED: of its group's leader's tree
    reason: str = ""  # why its checks failed
    output: str = ""  # ... and the end of their output
    since: float = 0.0  # when it joined
    leader: str = ""  # the key of its group's leader, behind it; "": it leads its group (the last of it)
    commands: tuple[tuple[str, str], ...] = ()  # its checks (label, bash command): its group's leader runs them
    reviewed: bool = False  # its change is reviewed once its checks pass (engine/review.py): never batched

    @property
    def built(self) -> bool:
        return bool(self.merged)

    @property
    def leads(self) -> bool:
        return not self.leader


def load(path: Path) -> list[Entry]:
    """The queue, in order ([] if there is none or it cannot be read: the workers rebuild it)."""
    try:
        raw = json.loads(path.read_text())
        return [
            Entry(**{**e, "files": tuple(e.get("files", ())), "commands": tuple(map(tuple, e.get("commands", ())))})
            for e in raw["entries"]
        ]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def save(path: Path, entries: list[Entry]) -> None:
    atomic_write(path, json.dumps({"entries": [asdict(e) for e in entries]}, indent=1))


def living(entries: list[Entry]) -> list[Entry]:
    """Those whose worker still runs (a worker killed leaves its task's claim free)."""
    return [e for e in entries if FileLock(Path(e.claim)).holder() is not None]


def find(entries: list[Entry], key: str) -> Entry | None:
    return next((e for e in entries if e.key == key), None)


def join(entries: list[Entry], key: str, claim: Path, branch: str) -> list[Entry]:
    """With `key` in the queue for `branch`: its entry as it was (a run started again goes on from
    it), anew at the end if its branch moved (a resolve attempt), else added at the end."""
    old = find(entries, key)
    if old is not None and old.branch == branch:
        return entries
    rest = [e for e in entries if e.key != key]
    return [*rest, Entry(key, str(claim), branch, since=time.time())]


def leave(entries: list[Entry], key: str) -> list[Entry]:
    return [e for e in entries if e.key != key]


def put(entries: list[Entry], entry: Entry) -> list[Entry]:
    return [entry if e.key == entry.key else e for e in entries]


def ahead(entries: list[Entry], key: str) -> list[Entry]:
    keys = [e.key for e in entries]
    return entries[: keys.index(key)] if key in keys else list(entries)


def base_for(entries: list[Entry], key: str, main: str) -> str | None:
    """What `key`'s merge commit is built on: main's tip for the first, else the merge commit of
    the task just ahead (None while that one is not built)."""
    before = ahead(entries, key)
    if not before:
        return main
    return before[-1].merged or None


def without(entries: list[Entry], keys: set[str]) -> list[Entry]:
    """The queue once a group left it (a batch reached main)."""
    return [e for e in entries if e.key not in keys]


# --- groups (batches) ------------------------------------------------------------------------


def groups(entries: list[Entry]) -> list[list[Entry]]:
    """The queue cut into its groups: runs of entries naming the same leader, each ended by an
    entry that leads. (A run not ended by its leader is a group whose leader left: `regroup`.)"""
    out: list[list[Entry]] = []
    for e in entries:
        last = out[-1][-1] if out else None
        if last is not None and not last.leads and last.leader == (e.leader or e.key):
            out[-1].append(e)
        else:
            out.append([e])
    return out


def group_of(entries: list[Entry], key: str) -> list[Entry]:
    return next((g for g in groups(entries) if any(e.key == key for e in g)), [])


def regroup(entries: list[Entry]) -> list[Entry]:
    """Every group ended by its leader. The members of a leader that left (its worker died, it
    failed, it conflicted or was built again) are a group of their own, led by the last of them,
    and are verified again: what passed, if anything, was the tree of the leader that left."""
    out: list[Entry] = []
    for group in groups(entries):
        if group[-1].leads:
            out += group
            continue
        last = group[-1].key
        out += [replace(e, leader="" if e.key == last else last, checks=PENDING, reason="", output="") for e in group]
    return out


def rebuilt(entries: list[Entry], me: Entry, batch: int) -> list[Entry]:
    """The queue with `me` built anew: out of any group it was in, and, if its checks are to run,
    into the group just ahead of it as its new leader when that group gathers still — its checks
    not started, fewer than `batch` in it (its old leader then waits as a member)."""
    entries = regroup([replace(me, leader="") if e.key == me.key else e for e in entries])
    before = ahead(entries, me.key)
    if batch <= 1 or me.checks != PENDING or not before:
        return entries
    group = group_of(entries, before[-1].key)
    if group[-1].checks != PENDING or len(group) >= batch or me.reviewed or any(e.reviewed for e in group):
        return entries  # a review reads one task's change: a reviewed task is verified on its own
    members = {e.key for e in group}
    return [replace(e, leader=me.key) if e.key in members else e for e in entries]


def waits_to_start(entries: list[Entry], key: str, batch: int) -> str:
    """What the group `key` leads waits for before its checks start ("": nothing). With batches,
    none starts while a batch ahead of it is bisected: its tree holds the culprit, and its run
    would hold a check slot the bisection waits for. Then a full group starts at once; one that
    is not waits while anything ahead of it has not passed its checks, so the tasks that finish
    meanwhile gather into it."""
    group = group_of(entries, key)
    before = ahead(entries, group[0].key)
    failed = [e.key for e in before if e.checks == FAILED]
    if batch > 1 and failed:
        return f"waiting while a batch ahead that failed is bisected ({_names(failed)})"
    if len(group) >= batch:
        return ""
    busy = [e.key for e in before if e.checks != PASSED]
    if not busy:
        return ""
    return f"gathering a batch ({len(group)} of up to {batch}) until the tasks ahead pass their checks ({_names(busy)})"


def joining(entries: list[Entry], key: str) -> str:
    """The task just behind `key` when it is about to be built (again) on `key`'s merge commit —
    it will join `key`'s group, so the group waits for it a little before it starts ("": none)."""
    keys = [e.key for e in entries]
    if key not in keys or keys.index(key) + 1 == len(keys):
        return ""
    me, behind = entries[keys.index(key)], entries[keys.index(key) + 1]
    return behind.key if behind.checks != CHECKING and behind.base != me.merged else ""


def split(entries: list[Entry], key: str) -> list[Entry]:
    """The failed group `key` leads, bisected: its first half becomes a group of its own, led by
    its last member, its checks to run; the rest keeps `key` as leader and its failure."""
    group = group_of(entries, key)
    half = group[: len(group) // 2]
    lead = half[-1].key
    changed = {e.key: replace(e, leader="" if e.key == lead else lead, checks=PENDING) for e in half}
    return [changed.get(e.key, e) for e in entries]


def passed(entries: list[Entry], key: str) -> list[Entry]:
    """Every member of the group `key` leads passed: its leader's tree, which holds them all, did."""
    members = {e.key for e in group_of(entries, key)}
    return [replace(e, checks=PASSED) if e.key in members else e for e in entries]


def chained(entries: list[Entry], group: list[Entry], main: str) -> bool:
    """Is each member of `group` built on what is ahead of it now? Only then does its leader's
    merge commit hold exactly its members, and may main move to it."""
    return all(base_for(entries, e.key, main) == e.base for e in group)


def span(group: list[Entry]) -> str:
    """A group's tasks in a few words: `p:a..p:d`."""
    return _names([e.key for e in group])


def _names(keys: list[str]) -> str:
    return f"{keys[0]}..{keys[-1]}" if len(keys) > 2 else ", ".join(keys)
