"""The controller's hold on one attempt that runs on a node (`Link`), and its node's news of
it written here as the engine expects them from a local agent: output in the task's log,
notes, discovered items, the signal and the exit status in their files, and new commits on
the task's branch, written first, so by the time the engine acts on a signal its work is
already here. One watch call per attempt is always in flight; the node answers it as soon
as there is news."""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hive import logcap
from hive.adapters import git, worktrees
from hive.executors.base import AgentRef
from hive.executors.ray.cluster import (
    CALL_TIMEOUT,
    ActorGone,
    ActorUnavailableError,
    Cluster,
    GetTimeoutError,
    RayTaskError,
    node_of,
    ray,
)
from hive.executors.ray.shipping import Cursor, Pulled, take_bundle
from hive.store import names
from hive.store.agent_signals import AgentIdentity
from hive.store.files import append_line, atomic_write, create_exclusive
from hive.store.paths import Paths

WATCH_WAIT = 5.0  # a node answers a watch at once when there is news, else after this long
RETRY_EVERY = 0.2  # after a node could not be reached, ask again this often
UNREACHABLE_PATIENCE = 10.0  # an actor that cannot be reached this long is lost


@dataclass
class Link:
    """One attempt: its node's actor, its placement group (one unit of the resource, held
    while it runs), and how far this side has written what the node reported."""

    name: str
    actor: Any  # the NodeAgent of the node it runs on
    group: Any
    root: Path  # the controller's repository
    ref: AgentRef | None = None
    branch: str = ""
    worktree: str = ""  # the controller's worktree of the branch (a mirror: the agent works on the node)
    tip: str = ""  # the branch's commit here, as last fetched
    ip: str = ""
    socket: str = ""
    cursor: Cursor | None = None  # None: the node's last acknowledged one (after a controller restart)
    watching: concurrent.futures.Future[Any] | None = None  # the node's answer to the watch in flight
    asked_at: float = 0.0
    retry_at: float = 0.0
    alive: bool = True
    lost: str = ""
    left: str = ""  # what survived its stop there
    unreachable_since: float = 0.0
    log_cap: int = logcap.DEFAULT_CAP  # the task's log here keeps as much as the node's ([logs] max_mb)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def placed(self, where: dict[str, str]) -> None:
        self.ip, self.socket = where["ip"], where["socket"]
        self.branch, self.worktree = where["branch"], where["controller_worktree"]
        self.log_cap = int(where.get("log_cap") or logcap.DEFAULT_CAP)  # a node of an older Hive says none

    def watch(self, cluster: Cluster) -> None:
        """Take the answer to the watch in flight if it came, and keep one in flight (the
        next goes out at once: a commit's news may come just before the signal's)."""
        with self.lock:
            now = time.monotonic()
            if self.watching is not None and self.watching.done():
                self._take(cluster, self.watching)
            elif self.watching is not None and now - self.asked_at > WATCH_WAIT + CALL_TIMEOUT:
                self.lose(cluster, f"its Ray node {self.ip} did not answer for {WATCH_WAIT + CALL_TIMEOUT:g}s")
            if self.watching is None and self.alive and not self.lost and now >= self.retry_at:
                self.asked_at = now
                self.watching = self.actor.watch.remote(self.name, self.cursor, WATCH_WAIT).future()

    def settle(self, cluster: Cluster) -> None:
        """Take the answer to the watch in flight (the node was told to end it)."""
        with self.lock:
            if self.watching is not None:
                concurrent.futures.wait([self.watching], timeout=CALL_TIMEOUT)
                self._take(cluster, self.watching)

    def _take(self, cluster: Cluster, answer: concurrent.futures.Future[Any]) -> None:
        """Write what the node said here, or take the attempt as lost when it cannot say."""
        self.watching = None
        try:
            pulled: Pulled = answer.result(timeout=CALL_TIMEOUT)
        except ActorUnavailableError:
            now = time.monotonic()
            self.unreachable_since = self.unreachable_since or now
            self.retry_at = now + RETRY_EVERY
            if now - self.unreachable_since >= UNREACHABLE_PATIENCE:
                self.lose(cluster, f"its Ray node {self.ip} could not be reached for {UNREACHABLE_PATIENCE:g}s")
            return
        except (*ActorGone, GetTimeoutError, concurrent.futures.TimeoutError) as e:
            self.lose(cluster, f"its Ray node {self.ip} or its agent there died ({type(e).__name__})")
            return
        except RayTaskError as e:  # its node's agent was made anew: the attempt is not there
            self.lose(cluster, f"its Ray node {self.ip} no longer holds it: {e.cause}")
            return
        self.unreachable_since = 0.0
        self.apply(pulled)

    def apply(self, pulled: Pulled) -> None:
        """Write a node's answer here, but what an earlier one already brought."""
        news = pulled.after(self.cursor or pulled.since)
        if news is not None:
            self._write(news)
            self.cursor, self.alive = news.cursor, news.alive

    def lose(self, cluster: Cluster, why: str) -> None:
        self.alive, self.lost = False, why
        node = node_of(self.group)
        with contextlib.suppress(Exception):  # else Ray moves the group to another node, holding a unit
            ray.util.remove_placement_group(self.group)
        if node and any(n["NodeID"] == node and n["Alive"] for n in ray.nodes()):
            cluster.renew(node)  # the node lives on but Hive's actor there died: a new one ends the agents it left
        else:
            cluster.forget(node)

    def _write(self, p: Pulled) -> None:
        """Commits first: a signal written here is acted on at once, and its work must be here."""
        ref = self.ref
        if ref is None:
            return
        plan, task_id = names.split_key(ref.task)
        paths = Paths(Path(ref.root))
        if p.tip and p.tip != self.tip:
            self._fetch(p.tip, p.commits)
        if p.log or p.log_marker:  # this process is the log's one writer while the attempt runs there
            logcap.append(paths.log_file(plan, task_id), p.log_marker + p.log, self.log_cap)
        for line in p.notes:
            append_line(paths.notes_file(plan, task_id), line)
        for line in p.refused:
            append_line(paths.refused_file(plan, task_id), line)
        who = AgentIdentity(Path(ref.root), plan, task_id, ref.attempt)
        if p.found:
            from hive.plan import discovered  # the plan's graph code: only found items need it

            for item in p.found:
                discovered.file_found(who, item)
        if p.signal is not None:
            create_exclusive(paths.signal_file(plan, task_id, ref.attempt), p.signal)
        if p.exit is not None:
            atomic_write(paths.exit_file(plan, task_id, ref.attempt), p.exit)

    def _fetch(self, tip: str, commits: bytes) -> None:
        """The branch's new commits: those that came with the news, else asked for (the node
        did not know what this side has: a controller that came back)."""
        if not commits:
            have = self.tip or git.try_rev_parse(self.root, f"refs/heads/{self.branch}")
            commits = ray.get(self.actor.bundle.remote(self.name, [have] if have else []), timeout=CALL_TIMEOUT)
        if commits:
            take_bundle(self.root, commits)
        adopt(self.root, self.branch, self.worktree, tip)
        self.tip = tip


def adopt(root: Path, branch: str, worktree: str, tip: str) -> None:
    """Move the task's branch here to what its agent committed on the node, and its
    mirror worktree with it (that worktree holds nothing of its own but Hive's files,
    which git ignores or hides)."""
    wt = Path(worktree) if worktree else None
    if wt is not None and worktrees.health(wt) == worktrees.OK and git.head_and_merge(wt)[0] == f"refs/heads/{branch}":
        git.git(wt, "reset", "-q", "--keep", tip)
    else:
        git.update_ref(root, f"refs/heads/{branch}", tip)
