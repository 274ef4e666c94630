"""The Ray executor, controller side: doit, the DAG, the state and the merge queue stay
here; each attempt takes one unit of `[executor] resource` on some node through its own
placement group, and its agent runs there in this project's actor for that node
(`node.NodeAgent`, made by `cluster.Cluster`). The engine sees the same files as with tmux:
`link.Link` writes here what the node reports.

Placement groups are named after their attempt and detached, and so are the node actors: a
controller that dies leaves its agents running, and the next `doit` finds each attempt by
name (`locate`) and goes on from the cursor it last acknowledged.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hive.adapters import git
from hive.errors import HiveError
from hive.executors.base import AgentRef, Launch, Report, T
from hive.executors.ray import PLUGIN
from hive.executors.ray.cluster import (
    CALL_TIMEOUT,
    ActorGone,
    Cluster,
    GetTimeoutError,
    RayActorError,
    RayTaskError,
    node_of,
    project_id,
    ray,
)
from hive.executors.ray.link import Link
from hive.executors.ray.node import node_workdir
from hive.executors.ray.shipping import Cursor, Spec, create_bundle, known_commits
from hive.logcap import Chunk
from hive.output import say
from hive.store.paths import Paths

QUEUED_NOTICE = 10.0  # say so when an attempt waits this long for a free unit of the resource
PLACEMENTS = 3  # an attempt whose node goes away before it starts there is placed again, this often


class RayExecutor:
    kind = PLUGIN.kind
    capabilities = PLUGIN.capabilities

    def __init__(self, options: Mapping[str, Any] | None = None, root: Path | None = None) -> None:
        """`options`: its `[executor]` settings as the registry checked them (PLUGIN.keys);
        the defaults where none are given."""
        given = {**{k.name: k.default for k in PLUGIN.keys}, **(options or {})}
        self.root = (root or Path.cwd()).resolve()
        self.workdir = str(given["workdir"])
        self.cluster = Cluster(str(given["address"]), str(given["resource"]), self.workdir, project_id(self.root))
        self._links: dict[str, Link] = {}

    def _link(self, name: str) -> Link | None:
        """The link to a running attempt, found through its placement group if this process has
        none yet; None if it has no group. A group no node's actor answers for is a lost link:
        nothing runs for it, and closing it gives its unit of the resource back."""
        link = self._links.get(name)
        if link is not None:
            return link
        self.cluster.connect()
        try:
            group = ray.util.get_placement_group(self.cluster.group_name(name))
        except ValueError:  # no such attempt (any more)
            return None
        node = node_of(group)
        if not node:  # its node died: Ray keeps the group, unplaced, to place it again
            return Link(name, None, group, self.root, lost="no node holds it")
        link = Link(name, self.cluster.agent(node), group, self.root)
        try:
            where = ray.get(link.actor.where.remote(link.name), timeout=CALL_TIMEOUT)
        except (*ActorGone, GetTimeoutError) as e:
            return Link(name, None, group, self.root, lost=f"its node's agent did not answer ({type(e).__name__})")
        if not where:
            return Link(name, None, group, self.root, lost="its node no longer holds it")
        link.placed(where)
        self._links[name] = link
        return link

    # --- the protocol -----------------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        return {}

    def worktree_base(self, root: Path, configured: str) -> Path:
        return root / configured  # the controller's mirrors, verified and merged here

    def start(self, launch: Launch) -> RayAgent:
        if launch.checkout is None:
            raise HiveError("the Ray executor starts attempts of tasks only (with a checkout to ship)")
        self.cluster.connect()
        self.cluster.offered()
        for placing in range(1, PLACEMENTS + 1):
            link, node = self._place(launch.name)
            try:
                seen = self._seen(link, node)
            except (*ActorGone, GetTimeoutError) as e:  # nothing started there: it goes elsewhere
                where = self.cluster.node_address(node)
                why = f"its Ray node {where} went away before it started there ({type(e).__name__})"
                link.lost = why  # no call to close it there: one to an actor that never runs would wait at exit
                self._close(launch.name)
                self.cluster.forget(node)
                if placing == PLACEMENTS:
                    raise HiveError(f"{why}, {PLACEMENTS} times") from None
                say(f"{launch.name}: {why}; placing it again")
                self.cluster.await_gone(node)
                continue
            try:
                token = self._start_there(link, launch, seen)
            except RayTaskError as e:  # it failed there (setup, git): its message, not Ray's traceback
                self._close(launch.name)
                raise HiveError(f"on its Ray node: {e.cause}") from None
            except ActorGone as e:
                self._close(launch.name)
                raise HiveError(f"its Ray node's agent died while starting it ({type(e).__name__})") from None
            return RayAgent(self, replace(launch.agent, token=token))
        raise AssertionError("unreachable")

    def _place(self, name: str) -> tuple[Link, str]:
        """A unit of the resource for attempt `name` on some node, and the link to it there."""
        cluster = self.cluster
        group = ray.util.placement_group(
            [{cluster.resource: 1}], strategy="STRICT_PACK", name=cluster.group_name(name), lifetime="detached"
        )
        self._placed(group, name)
        node = node_of(group)
        link = self._links[name] = Link(name, cluster.agent(node), group, self.root)
        return link, node

    def _seen(self, link: Link, node: str) -> list[str]:
        """What the node holds of the repository: the first call there, so an actor this
        process knew that died since is made anew here."""
        try:
            return list(ray.get(link.actor.seen.remote(), timeout=CALL_TIMEOUT))
        except RayActorError:
            link.actor = self.cluster.renew(node)
            return list(ray.get(link.actor.seen.remote(), timeout=CALL_TIMEOUT))

    def _start_there(self, link: Link, launch: Launch, seen: list[str]) -> int:
        co = launch.checkout
        assert co is not None
        start = git.rev_parse(co.root, f"refs/heads/{co.branch}")
        known = known_commits(co.root, seen)
        bundle = b"" if start in known else create_bundle(co.root, f"refs/heads/{co.branch}", known, self._spool())
        spec = Spec(
            name=launch.name,
            key=launch.env["HIVE_TASK"],
            attempt=int(launch.env["HIVE_ATTEMPT"]),
            branch=co.branch,
            start=start,
            argv=launch.argv,
            env=launch.env,
            unset=launch.unset,
            root=str(co.root),
            worktree=str(launch.cwd),
            brief=launch.brief.name if launch.brief else "",
            files={n: ((launch.cwd / n).read_bytes(), (launch.cwd / n).stat().st_mode & 0o777) for n in _files(launch)},
            hidden=co.hidden,
            excludes=co.excludes,
            setup=co.setup,
            setup_timeout=co.setup_timeout,
            sandbox=launch.sandbox,
            log_cap=launch.log_cap,
        )
        token, where = ray.get(link.actor.start.remote(spec, bundle))
        link.tip, link.cursor = start, Cursor(tip=start)
        link.placed(where)
        return int(token)

    def _placed(self, group: Any, name: str) -> None:
        """Wait for a free unit of the resource on some node (as long as other attempts hold them all)."""
        waited = 0.0
        while True:
            ready, _ = ray.wait([group.ready()], timeout=QUEUED_NOTICE)
            if ready:
                return
            waited += QUEUED_NOTICE
            what = self.cluster.resource
            say(f"{name}: waiting {waited:.0f}s for a free {what!r} on the Ray cluster (all are in use)")

    def _spool(self) -> Path:
        return Paths(self.root).hive / "run" / "bundles"

    def locate(self, name: str) -> int | None:
        link = self._link(name) if name else None
        if link is None or link.actor is None:
            return None
        try:
            token = ray.get(link.actor.locate.remote(name), timeout=CALL_TIMEOUT)
        except (*ActorGone, GetTimeoutError):
            return None
        return None if token is None else int(token)

    def agent(self, ref: AgentRef) -> RayAgent:
        return RayAgent(self, ref)

    def names(self) -> list[str]:
        return self.cluster.groups()

    def _close(self, name: str) -> None:
        """Give the attempt's unit of the resource back and forget it (its node, if it still
        holds it, removes its worktree when it gets to it)."""
        link = self._link(name) if name else None
        if link is None:
            return
        if link.actor is not None and not link.lost:
            # not waited for: nothing here needs the node's worktree gone
            self.cluster.close_later(link.actor.close.remote(name))
        with contextlib.suppress(Exception):
            ray.util.remove_placement_group(link.group)  # its unit of the resource is free again
        self._links.pop(name, None)

    def on_hosts(self, fn: Callable[[Path], T]) -> dict[str, T | HiveError]:
        return self.cluster.on_hosts(functools.partial(_in_node_workdir, fn, self.workdir))

    def tidy(self) -> list[str]:
        return self.cluster.tidy()

    def shutdown(self) -> None:
        self.cluster.shutdown()


@dataclass(frozen=True)
class RayAgent:
    """An attempt's agent on some node of the cluster, reached through its `Link` (which this
    process finds again through the attempt's placement group)."""

    ex: RayExecutor
    ref: AgentRef

    @property
    def name(self) -> str:
        return self.ref.name

    def alive(self, thorough: bool = False) -> bool:  # noqa: ARG002 — the protocol's; every look asks the node
        """Never waits for the node: what its watch in flight brought is written here once
        it has come, and the next watch goes out."""
        link = self.ex._link(self.name)
        if link is None:
            return False
        link.ref = self.ref
        if link.alive and not link.lost:
            link.watch(self.ex.cluster)
        return link.alive and not link.lost

    def nap(self, seconds: float) -> None:
        link = self.ex._links.get(self.name)
        watching = link.watching if link else None
        if watching is None:
            time.sleep(seconds)
        else:
            concurrent.futures.wait([watching], timeout=seconds)

    def gone(self) -> str:
        link = self.ex._links.get(self.name)
        return link.lost if link else ""

    def host(self) -> str:
        link = self.ex._link(self.name) if self.name else None
        return link.ip if link else ""

    def output(self, since: int = 0) -> Chunk | None:
        link = self.ex._link(self.name) if self.name else None
        if link is None or link.actor is None:
            return None
        try:
            got = ray.get(link.actor.output.remote(self.name, since), timeout=CALL_TIMEOUT)
            return Chunk(int(got.start), bytes(got.data), bytes(got.marker))
        except (*ActorGone, GetTimeoutError, RayTaskError):
            return None

    def screen(self, lines: int) -> str:
        link = self.ex._links.get(self.name)
        if link is None or link.lost:
            return ""
        try:
            return str(ray.get(link.actor.screen.remote(self.name, lines), timeout=CALL_TIMEOUT))
        except (*ActorGone, GetTimeoutError):
            return ""

    def stop(self, patience: float, finished: bool, report: Report) -> str:
        """Stop it on its node (which commits what it left), bring the rest over, and end
        the attempt there. A node that is gone has nothing left to stop: what it shipped is here."""
        link = self.ex._link(self.name)
        if link is None:
            return ""
        link.ref = self.ref
        left = ""
        if not link.lost:
            try:
                self._stop_there(link, patience, finished, report)
            except (*ActorGone, GetTimeoutError) as e:
                report(f"its Ray node's agent went away while stopping ({type(e).__name__})")
            except RayTaskError as e:
                report(f"its Ray node no longer holds it: {e.cause}")
            left = f"on {link.ip}: {link.left}" if link.left else ""
        self.close()
        return left

    def _stop_there(self, link: Link, patience: float, finished: bool, report: Report) -> None:
        """The watch in flight answers first (the stop ends it), then the stop's own news:
        written here in the order the node reported them."""
        call = link.actor.stop.remote(link.name, patience, finished, link.cursor)
        link.settle(self.ex.cluster)
        with link.lock:
            left, said, pulled = ray.get(call, timeout=CALL_TIMEOUT + 4 * patience)
            for line in said:
                report(line)
            link.left = left
            link.apply(pulled)

    def close(self) -> None:
        self.ex._close(self.name)

    def attach_argv(self) -> list[str]:
        link = self.ex._link(self.name)
        if link is None or not link.ip:
            return []
        return ["ssh", "-t", link.ip, "tmux", "-L", link.socket, "attach-session", "-t", self.name]

    def attach(self, replace_process: bool = False, hint: str = "") -> int:  # noqa: ARG002 — the protocol's; it only says where
        """The agent runs on another machine: say how to watch it there."""
        argv = self.attach_argv()
        if not argv:
            raise HiveError(f"no Ray node runs {self.name}")
        print(f"{self.name} runs on node {argv[2]}; watch it there with:\n  {' '.join(argv)}", flush=True)
        return 0


def _in_node_workdir(fn: Callable[[Path], T], workdir: str) -> T:
    """On a node: `fn` given the folder that node keeps its worktrees below."""
    return fn(node_workdir(workdir))


def _files(launch: Launch) -> list[str]:
    """Hive's files in the worktree, directories as the files in them."""
    out: list[str] = []
    for name in launch.checkout.files if launch.checkout else ():
        path = launch.cwd / name
        if path.is_dir():
            out += [str(p.relative_to(launch.cwd)) for p in sorted(path.rglob("*")) if p.is_file()]
        elif path.is_file():
            out.append(name)
    return out
