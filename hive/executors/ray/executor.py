"""The Ray executor, controller side: doit, the DAG, the state and the merge queue stay
here; each attempt takes one unit of `[executor] resource` on some node through its own
placement group, and its agent runs there in this project's actor for that node
(`node.NodeAgent`). The engine sees the same files as with tmux: one watch call per
attempt is always in flight, and the node answers it as soon as there is news, with the
agent's output, signal, notes, discovered items, exit status and new commits; the commits
are written here first, so by the time the engine acts on a signal its work is already on
the task's branch here.

Placement groups are named after their attempt and detached, and so are the node actors: a
controller that dies leaves its agents running, and the next `doit` finds each attempt by
name (`locate`) and goes on from the cursor it last acknowledged.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import hashlib
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hive.adapters import git
from hive.engine import workspace
from hive.engine.task import say
from hive.errors import HiveError
from hive.executors.base import AgentRef, Launch, Report
from hive.executors.ray.shipping import Cursor, Pulled, Spec, create_bundle, known_commits, take_bundle
from hive.store import names
from hive.store.agent_signals import AgentIdentity
from hive.store.files import append_line, atomic_write, create_exclusive
from hive.store.paths import Paths

if TYPE_CHECKING:
    from hive.settings.config import Config

try:
    import ray
    from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError, RayTaskError
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError:  # the optional extra
    ray = None  # type: ignore[assignment]

NAMESPACE = "hive"
WATCH_WAIT = 5.0  # a node answers a watch at once when there is news, else after this long
RETRY_EVERY = 0.2  # after a node could not be reached, ask again this often
CALL_TIMEOUT = 60.0  # one call to a live actor (a watch: on top of WATCH_WAIT)
CLOSING_PATIENCE = 10.0  # at exit, for the nodes to end the attempts closed last
UNREACHABLE_PATIENCE = 10.0  # an actor that cannot be reached this long is lost
QUEUED_NOTICE = 10.0  # say so when an attempt waits this long for a free unit of the resource


def _protocol() -> str:
    """Names the code a node actor runs: detached actors outlive the Hive that made them, and
    after an upgrade the controller must not call one that speaks an older protocol."""
    here = Path(__file__).parent
    code = b"".join((here / name).read_bytes() for name in ("node.py", "shipping.py"))
    return hashlib.sha1(code).hexdigest()[:8]


PROTOCOL = _protocol()


def project_id(root: Path) -> str:
    """Names this project's actors and its directory on every node."""
    slug = re.sub(r"[^A-Za-z0-9_.-]", "-", root.name)[:40] or "repo"
    return f"{slug}-{hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:10]}"


@dataclass
class _Link:
    """The controller's hold on one attempt: its node's agent actor and its placement group."""

    name: str
    actor: Any  # the NodeAgent of the node it runs on
    group: Any  # its placement group: one unit of the resource, held while it runs
    ref: AgentRef | None = None
    branch: str = ""
    worktree: str = ""  # the controller's worktree of the branch (a mirror: the agent works on the node)
    tip: str = ""  # the branch's commit here, as last fetched
    ip: str = ""
    socket: str = ""
    cursor: Cursor | None = None  # None: the node's last acknowledged one (after a controller restart)
    watching: concurrent.futures.Future | None = None  # the node's answer to the watch in flight
    asked_at: float = 0.0
    retry_at: float = 0.0
    alive: bool = True
    lost: str = ""
    left: str = ""  # what survived its stop there
    unreachable_since: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


class RayExecutor:
    kind = "ray"
    remote = True

    def __init__(self, config: Config | None = None, root: Path | None = None) -> None:
        from hive.settings.config import Config

        cfg = config or Config()
        self.address, self.resource, self.workdir = cfg.ray_address, cfg.ray_resource, cfg.node_workdir
        self.root = (root or Path.cwd()).resolve()
        self.project = project_id(self.root)
        self._links: dict[str, _Link] = {}
        self._agents: dict[str, Any] = {}  # node id: this project's actor there
        self._offered = False  # some node offers the resource (asked until one does)
        self._closing: list[Any] = []  # calls that end attempts on their nodes, not waited for
        self._lock = threading.Lock()
        self._pid = 0  # the process that connected

    # --- the cluster ----------------------------------------------------------------------------

    def _connect(self) -> None:
        if ray is None:
            raise HiveError("[executor] kind = \"ray\" needs Ray: pip install 'hive[ray]'")
        with self._lock:
            if ray.is_initialized():
                if self._pid != os.getpid():
                    raise HiveError(
                        "the Ray executor cannot run in doit's forked workers: run `doit -n N -P thread` "
                        '(the default with [executor] kind = "ray"; `-P process` is not for it)'
                    )
                return
            self._pid = os.getpid()
            try:
                ray.init(
                    address=self.address,
                    namespace=NAMESPACE,
                    logging_level=logging.ERROR,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise HiveError(
                    f"cannot reach the Ray cluster at [executor] address = {self.address!r}: {e}; "
                    f"start it (`ray start --head`) or fix the address in .hive/config.toml"
                ) from None
            atexit.register(self._closed)  # before Ray's own exit handler disconnects

    def _closed(self) -> None:
        """At exit: wait for the nodes to end the attempts this process closed last (a call
        not yet sent when the process disconnects would never reach them), then disconnect,
        before Ray's own exit handler would, which first sleeps half a second for its logs."""
        with contextlib.suppress(Exception):
            ray.wait(self._closing, num_returns=len(self._closing), timeout=CLOSING_PATIENCE)
        if self._pid == os.getpid():
            self.shutdown()

    def _retire_older(self, prefix: str) -> None:
        """End this project's actors on that node that run another Hive's code: the new one,
        made next, ends the agents they left there (their controller cannot reach them)."""
        for actor in ray.util.list_named_actors(all_namespaces=True):
            name = actor.get("name", "")
            if actor.get("namespace") == NAMESPACE and name.startswith(prefix) and name != prefix + PROTOCOL:
                with contextlib.suppress(ValueError, RayActorError):
                    ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)

    def _group_name(self, name: str) -> str:
        return f"{self.project}:{name}"

    def _node_agent(self, node_id: str) -> Any:
        """This project's agent actor on that node, made the first time an attempt lands there."""
        agent = self._agents.get(node_id)
        if agent is None:
            agent = self._agents[node_id] = self._new_node_agent(node_id)
        return agent

    def _ready_nodes(self) -> None:
        """Start this project's actor on every node offering the resource, all at once and
        without waiting: on a node's first attempt it would cost that attempt half a second."""
        for node in ray.nodes():
            if node.get("Alive") and node.get("Resources", {}).get(self.resource, 0) > 0:
                self._node_agent(node["NodeID"])

    def _new_node_agent(self, node_id: str) -> Any:
        from hive.executors.ray.node import NodeAgent

        prefix = f"{self.project}:node:{node_id}:"
        self._retire_older(prefix)
        return (
            ray.remote(NodeAgent)
            .options(
                name=prefix + PROTOCOL,
                namespace=NAMESPACE,
                get_if_exists=True,
                lifetime="detached",  # its attempts outlive a controller that dies
                num_cpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                max_restarts=0,
                max_concurrency=1000,  # every attempt's polls at once
            )
            .remote(self.project, self.workdir)
        )

    def _link(self, name: str) -> _Link | None:
        """The link to a running attempt, found through its placement group if this process has none yet."""
        link = self._links.get(name)
        if link is not None:
            return link
        self._connect()
        try:
            group = ray.util.get_placement_group(self._group_name(name))
        except ValueError:  # no such attempt (any more)
            return None
        node = _node_of(group)
        if not node:
            return None
        link = _Link(name, self._node_agent(node), group)
        try:
            if not self._describe(link):
                return _Link(name, None, group, lost="its node no longer holds it")
        except (RayActorError, GetTimeoutError):
            return None
        self._links[name] = link
        return link

    def _describe(self, link: _Link) -> bool:
        where = ray.get(link.actor.where.remote(link.name), timeout=CALL_TIMEOUT)
        if where:
            link.ip, link.socket = where["ip"], where["socket"]
            link.branch, link.worktree = where["branch"], where["controller_worktree"]
        return bool(where)

    # --- the protocol -----------------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        return {}

    def worktree_base(self, root: Path, configured: str) -> Path:
        return root / configured  # the controller's mirrors, verified and merged here

    def start(self, launch: Launch) -> int:
        if launch.checkout is None:
            raise HiveError("the Ray executor starts attempts of tasks only (with a checkout to ship)")
        self._connect()
        if not self._offered and ray.cluster_resources().get(self.resource, 0) <= 0:
            raise HiveError(
                f"no node of the Ray cluster offers the resource {self.resource!r}; start nodes with "
                f"`ray start --address=<head> --resources='{{\"{self.resource}\": 4}}'` ([executor] resource)"
            )
        if not self._offered:
            self._offered = True
            self._ready_nodes()
        group = placement_group(
            [{self.resource: 1}], strategy="STRICT_PACK", name=self._group_name(launch.name), lifetime="detached"
        )
        self._placed(group, launch.name)
        node = _node_of(group)
        link = self._links[launch.name] = _Link(launch.name, self._node_agent(node), group)
        try:
            try:
                return self._start_there(link, launch)
            except RayActorError:  # the actor this process knew there died since: a new one
                self._agents.pop(node, None)
                link.actor = self._node_agent(node)
                return self._start_there(link, launch)
        except RayTaskError as e:  # it failed there (setup, git): its message, not Ray's traceback
            self.close(launch.name)
            raise HiveError(f"on its Ray node: {e.cause}") from None
        except RayActorError as e:
            self.close(launch.name)
            raise HiveError(f"its Ray node's agent died while starting it ({type(e).__name__})") from None

    def _start_there(self, link: _Link, launch: Launch) -> int:
        co = launch.checkout
        assert co is not None
        seen = ray.get(link.actor.seen.remote(), timeout=CALL_TIMEOUT)
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
        )
        token, where = ray.get(link.actor.start.remote(spec, bundle))
        link.tip, link.cursor = start, Cursor(tip=start)
        link.ip, link.socket = where["ip"], where["socket"]
        link.branch, link.worktree = where["branch"], where["controller_worktree"]
        return int(token)

    def _placed(self, group: Any, name: str) -> None:
        """Wait for a free unit of the resource on some node (as long as other attempts hold them all)."""
        waited = 0.0
        while True:
            ready, _ = ray.wait([group.ready()], timeout=QUEUED_NOTICE)
            if ready:
                return
            waited += QUEUED_NOTICE
            say(f"{name}: waiting {waited:.0f}s for a free {self.resource!r} on the Ray cluster (all are in use)")

    def _spool(self) -> Path:
        return Paths(self.root).hive / "run" / "bundles"

    def locate(self, name: str) -> int | None:
        link = self._link(name) if name else None
        if link is None or link.actor is None:
            return None
        try:
            token = ray.get(link.actor.locate.remote(name), timeout=CALL_TIMEOUT)
        except (RayActorError, GetTimeoutError):
            return None
        return None if token is None else int(token)

    def alive(self, ref: AgentRef, thorough: bool = False) -> bool:
        """Never waits for the node: what its watch in flight brought is written here once
        it has come, and the next watch goes out."""
        link = self._link(ref.name)
        if link is None:
            return False
        link.ref = ref
        if link.alive and not link.lost:
            self._watch(link)
        return link.alive and not link.lost

    def nap(self, ref: AgentRef, seconds: float) -> None:
        link = self._links.get(ref.name)
        watching = link.watching if link else None
        if watching is None:
            time.sleep(seconds)
        else:
            concurrent.futures.wait([watching], timeout=seconds)

    def gone(self, ref: AgentRef) -> str:
        link = self._links.get(ref.name)
        return link.lost if link else ""

    def host(self, name: str) -> str:
        link = self._link(name) if name else None
        return link.ip if link else ""

    def output(self, name: str) -> bytes | None:
        link = self._link(name) if name else None
        if link is None or link.actor is None:
            return None
        try:
            return bytes(ray.get(link.actor.output.remote(name), timeout=CALL_TIMEOUT))
        except (RayActorError, GetTimeoutError, RayTaskError):
            return None

    def screen(self, name: str, lines: int) -> str:
        link = self._links.get(name)
        if link is None or link.lost:
            return ""
        try:
            return str(ray.get(link.actor.screen.remote(name, lines), timeout=CALL_TIMEOUT))
        except (RayActorError, GetTimeoutError):
            return ""

    def stop(self, ref: AgentRef, patience: float, finished: bool, report: Report) -> str:
        """Stop it on its node (which commits what it left), bring the rest over, and end
        the attempt there. A node that is gone has nothing left to stop: what it shipped is here."""
        link = self._link(ref.name)
        if link is None:
            return ""
        link.ref = ref
        left = ""
        if not link.lost:
            try:
                self._stop_there(link, patience, finished, report)
            except (RayActorError, GetTimeoutError) as e:
                report(f"its Ray node's agent went away while stopping ({type(e).__name__})")
            except RayTaskError as e:
                report(f"its Ray node no longer holds it: {e.cause}")
            left = f"on {link.ip}: {link.left}" if link.left else ""
        self.close(ref.name)
        return left

    def _stop_there(self, link: _Link, patience: float, finished: bool, report: Report) -> None:
        """The watch in flight answers first (the stop ends it), then the stop's own news:
        written here in the order the node reported them."""
        call = link.actor.stop.remote(link.name, patience, finished, link.cursor)
        self._settle(link)
        with link.lock:
            left, said, pulled = ray.get(call, timeout=CALL_TIMEOUT + 4 * patience)
            for line in said:
                report(line)
            link.left = left
            self._apply(link, pulled)

    def close(self, name: str) -> None:
        link = self._link(name) if name else None
        if link is None:
            return
        if link.actor is not None and not link.lost:
            # not waited for: nothing here needs the node's worktree gone (at exit, `_closed` waits)
            call = link.actor.close.remote(name)
            with self._lock:
                self._closing = [c for c in self._closing if not _finished(c)] + [call]
        with contextlib.suppress(Exception):
            remove_placement_group(link.group)  # its unit of the resource is free again
        self._links.pop(name, None)

    def names(self) -> list[str]:
        self._connect()
        prefix = f"{self.project}:"
        return [
            g["name"][len(prefix) :]
            for g in ray.util.placement_group_table().values()
            if g.get("name", "").startswith(prefix) and g.get("state") != "REMOVED"
        ]

    def attach_argv(self, name: str) -> list[str]:
        link = self._link(name)
        if link is None or not link.ip:
            return []
        return ["ssh", "-t", link.ip, "tmux", "-L", link.socket, "attach-session", "-t", name]

    def attach(self, name: str, replace_process: bool = False) -> int:
        """The agent runs on another machine: say how to watch it there."""
        argv = self.attach_argv(name)
        if not argv:
            raise HiveError(f"no Ray node runs {name}")
        print(f"{name} runs on node {argv[2]}; watch it there with:\n  {' '.join(argv)}", flush=True)
        return 0

    def tidy(self) -> list[str]:
        """This project's actors on the nodes (one per node, kept for the next attempts), once no
        attempt of it holds a unit of the resource."""
        if self.names():
            return []
        done = []
        for actor in ray.util.list_named_actors(all_namespaces=True):
            name = actor.get("name", "")
            if actor.get("namespace") == NAMESPACE and name.startswith(f"{self.project}:node:"):
                with contextlib.suppress(ValueError, RayActorError):
                    ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)
                    done.append(f"ended Hive's actor {name} on the Ray cluster (no attempt of this project runs)")
        self._agents.clear()
        return done

    def shutdown(self) -> None:
        if ray is not None and ray.is_initialized():
            ray.shutdown()

    # --- bringing the node's files and commits here ----------------------------------------------

    def _watch(self, link: _Link) -> None:
        """Take the answer to the watch in flight if it came, and keep one in flight (the
        next goes out at once: a commit's news may come just before the signal's)."""
        with link.lock:
            now = time.monotonic()
            if link.watching is not None and link.watching.done():
                self._take(link, link.watching)
            elif link.watching is not None and now - link.asked_at > WATCH_WAIT + CALL_TIMEOUT:
                self._lose(link, f"its Ray node {link.ip} did not answer for {WATCH_WAIT + CALL_TIMEOUT:g}s")
            if link.watching is None and link.alive and not link.lost and now >= link.retry_at:
                link.asked_at = now
                link.watching = link.actor.watch.remote(link.name, link.cursor, WATCH_WAIT).future()

    def _settle(self, link: _Link) -> None:
        """Take the answer to the watch in flight (the node was told to end it)."""
        with link.lock:
            if link.watching is not None:
                concurrent.futures.wait([link.watching], timeout=CALL_TIMEOUT)
                self._take(link, link.watching)

    def _take(self, link: _Link, answer: concurrent.futures.Future) -> None:
        """Write what the node said here, or take the attempt as lost when it cannot say."""
        link.watching = None
        try:
            pulled: Pulled = answer.result(timeout=CALL_TIMEOUT)
        except ActorUnavailableError:
            now = time.monotonic()
            link.unreachable_since = link.unreachable_since or now
            link.retry_at = now + RETRY_EVERY
            if now - link.unreachable_since >= UNREACHABLE_PATIENCE:
                self._lose(link, f"its Ray node {link.ip} could not be reached for {UNREACHABLE_PATIENCE:g}s")
            return
        except (RayActorError, GetTimeoutError, concurrent.futures.TimeoutError) as e:
            self._lose(link, f"its Ray node {link.ip} or its agent there died ({type(e).__name__})")
            return
        except RayTaskError as e:  # its node's agent was made anew: the attempt is not there
            self._lose(link, f"its Ray node {link.ip} no longer holds it: {e.cause}")
            return
        link.unreachable_since = 0.0
        self._apply(link, pulled)

    def _apply(self, link: _Link, pulled: Pulled) -> None:
        news = pulled.after(link.cursor or pulled.since)
        if news is not None:
            self._write(link, news)
            link.cursor, link.alive = news.cursor, news.alive

    def _lose(self, link: _Link, why: str) -> None:
        link.alive, link.lost = False, why
        node = _node_of(link.group)
        with contextlib.suppress(Exception):  # else Ray moves the group to another node, holding a unit
            remove_placement_group(link.group)
        self._agents.pop(node, None)
        if node and any(n["NodeID"] == node and n["Alive"] for n in ray.nodes()):
            # the node lives on but Hive's actor there died: a new one ends the agents it left
            self._node_agent(node)

    def _write(self, link: _Link, p: Pulled) -> None:
        """Commits first: a signal written here is acted on at once, and its work must be here."""
        ref = link.ref
        if ref is None:
            return
        plan, task_id = names.split_key(ref.task)
        paths = Paths(Path(ref.root))
        if p.tip and p.tip != link.tip:
            self._fetch(link, p.tip, p.commits)
        if p.log:
            with open(paths.log_file(plan, task_id), "ab") as f:
                f.write(p.log)
        for line in p.notes:
            append_line(paths.notes_file(plan, task_id), line)
        who = AgentIdentity(Path(ref.root), plan, task_id, ref.attempt)
        for item in p.found:
            _file_found(who, item)
        if p.signal is not None:
            create_exclusive(paths.signal_file(plan, task_id, ref.attempt), p.signal)
        if p.exit is not None:
            atomic_write(paths.exit_file(plan, task_id, ref.attempt), p.exit)

    def _fetch(self, link: _Link, tip: str, commits: bytes) -> None:
        """The branch's new commits: those that came with the news, else asked for (the node
        did not know what this side has: a controller that came back)."""
        root = self.root
        if not commits:
            have = link.tip or git.try_rev_parse(root, f"refs/heads/{link.branch}")
            commits = ray.get(link.actor.bundle.remote(link.name, [have] if have else []), timeout=CALL_TIMEOUT)
        if commits:
            take_bundle(root, commits)
        adopt(root, link.branch, link.worktree, tip)
        link.tip = tip


def adopt(root: Path, branch: str, worktree: str, tip: str) -> None:
    """Move the task's branch here to what its agent committed on the node, and its
    mirror worktree with it (that worktree holds nothing of its own but Hive's files,
    which git ignores or hides)."""
    wt = Path(worktree) if worktree else None
    if wt is not None and workspace.health(wt) == workspace.OK and git.head_and_merge(wt)[0] == f"refs/heads/{branch}":
        git.git(wt, "reset", "-q", "--keep", tip)
    else:
        git.update_ref(root, f"refs/heads/{branch}", tip)


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


def _file_found(who: AgentIdentity, item: str) -> None:
    """A discovered item filed on the node, filed here (where the plan's items are)."""
    from hive.plan import discovered

    data = json.loads(item)
    discovered.file_item(who, str(data.get("title", "")), str(data.get("details", "")))


def _finished(call: Any) -> bool:
    return bool(ray.wait([call], timeout=0)[0])


def _node_of(group: Any) -> str:
    """The node a placed group's unit is on ("" while it is not placed)."""
    table = ray.util.placement_group_table(group)
    nodes = table.get("bundles_to_node_id") or {}
    return str(next(iter(nodes.values()), "")) if table.get("state") == "CREATED" else ""
