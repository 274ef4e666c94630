"""The Ray executor, controller side: doit, the DAG, the state and the merge queue stay
here; each attempt's agent runs in a Ray actor (`node.NodeAttempt`) on a node offering
one unit of `[executor] resource`. The engine sees the same files as with tmux: every
poll brings the agent's output, signal, notes, discovered items, exit status and new
commits over, the commits before the signal, so by the time the engine acts on a
signal its work is already on the task's branch here.

Actors are named and detached: a controller that dies leaves them running, and the next
`doit` finds them by name (`locate`) and goes on from the cursor they were last sent.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hive.adapters import git
from hive.engine import workspace
from hive.errors import HiveError
from hive.executors.base import AgentRef, Launch, Report
from hive.executors.ray.shipping import Cursor, Pulled, Spec, create_bundle, fetch_bundle, known_commits
from hive.store import names
from hive.store.agent_signals import AgentIdentity
from hive.store.files import append_line, atomic_write, create_exclusive
from hive.store.paths import Paths

if TYPE_CHECKING:
    from hive.settings.config import Config

try:
    import ray
    from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError, RayTaskError
except ImportError:  # the optional extra
    ray = None  # type: ignore[assignment]

NAMESPACE = "hive"
PULL_EVERY = 0.2  # seconds between polls of one actor (the engine asks `alive` every 25 ms)
CALL_TIMEOUT = 60.0  # one call to a live actor
UNREACHABLE_PATIENCE = 10.0  # an actor that cannot be reached this long is lost
QUEUED_NOTICE = 10.0  # say so when an attempt waits this long for a free unit of the resource


def project_id(root: Path) -> str:
    """Names this project's actors and its directory on every node."""
    slug = re.sub(r"[^A-Za-z0-9_.-]", "-", root.name)[:40] or "repo"
    return f"{slug}-{hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:10]}"


@dataclass
class _Link:
    """The controller's hold on one attempt's actor."""

    actor: Any
    ref: AgentRef | None = None
    branch: str = ""
    worktree: str = ""  # the controller's worktree of the branch (a mirror: the agent works on the node)
    ip: str = ""
    socket: str = ""
    cursor: Cursor | None = None  # None: the actor's last acknowledged one (after a controller restart)
    pulled_at: float = 0.0
    alive: bool = True
    lost: str = ""
    unreachable_since: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _say(message: str) -> None:
    try:
        print(f"hive: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


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

    def _actor_name(self, name: str) -> str:
        return f"{self.project}:{name}"

    def _link(self, name: str) -> _Link | None:
        """The link to the attempt's actor, found by name if this process has none yet."""
        link = self._links.get(name)
        if link is not None:
            return link
        self._connect()
        try:
            actor = ray.get_actor(self._actor_name(name), namespace=NAMESPACE)
        except ValueError:  # no such actor (any more)
            return None
        link = _Link(actor)
        try:
            self._describe(link)
        except (RayActorError, GetTimeoutError):
            return None
        self._links[name] = link
        return link

    def _describe(self, link: _Link) -> None:
        where = ray.get(link.actor.where.remote(), timeout=CALL_TIMEOUT)
        link.ip, link.socket = where["ip"], where["socket"]
        link.branch, link.worktree = where["branch"], where["controller_worktree"]

    # --- the protocol -----------------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        return {}

    def worktree_base(self, root: Path, configured: str) -> Path:
        return root / configured  # the controller's mirrors, verified and merged here

    def start(self, launch: Launch) -> int:
        if launch.checkout is None:
            raise HiveError("the Ray executor starts attempts of tasks only (with a checkout to ship)")
        self._connect()
        total = ray.cluster_resources().get(self.resource, 0)
        if total <= 0:
            raise HiveError(
                f"no node of the Ray cluster offers the resource {self.resource!r}; start nodes with "
                f"`ray start --address=<head> --resources='{{\"{self.resource}\": 4}}'` ([executor] resource)"
            )
        from hive.executors.ray.node import NodeAttempt

        actor: Any = (
            ray.remote(NodeAttempt)
            .options(
                name=self._actor_name(launch.name),
                namespace=NAMESPACE,
                lifetime="detached",
                num_cpus=0,
                resources={self.resource: 1},
                max_restarts=0,
                scheduling_strategy="SPREAD",  # agents' test runs and memory spread over the hosts
                max_concurrency=4,  # a screen or a poll while a stop is under way
            )
            .remote(self.project, self.workdir)
        )
        link = _Link(actor)
        self._links[launch.name] = link
        seen = self._placed(actor, launch.name)
        co = launch.checkout
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
        try:
            token = int(ray.get(actor.start.remote(spec, bundle)))
            self._describe(link)
        except RayTaskError as e:  # it failed there (setup, git): its message, not Ray's traceback
            self.close(launch.name)
            raise HiveError(f"on its Ray node: {e.cause}") from None
        except RayActorError as e:
            self.close(launch.name)
            raise HiveError(f"its Ray actor died while starting ({type(e).__name__})") from None
        return token

    def _placed(self, actor: Any, name: str) -> list[str]:
        """Wait for the actor to be placed on a node with a free unit (which may take as
        long as other attempts hold them all); returns the commits that node has."""
        ref = actor.seen.remote()
        waited = 0.0
        while True:
            ready, _ = ray.wait([ref], timeout=QUEUED_NOTICE)
            if ready:
                return list(ray.get(ref))
            waited += QUEUED_NOTICE
            _say(f"{name}: waiting {waited:.0f}s for a free {self.resource!r} on the Ray cluster (all are in use)")

    def _spool(self) -> Path:
        return Paths(self.root).hive / "run" / "bundles"

    def locate(self, name: str) -> int | None:
        link = self._link(name) if name else None
        if link is None:
            return None
        try:
            token = ray.get(link.actor.locate.remote(), timeout=CALL_TIMEOUT)
        except (RayActorError, GetTimeoutError):
            return None
        return None if token is None else int(token)

    def alive(self, ref: AgentRef, thorough: bool = False) -> bool:
        link = self._link(ref.name)
        if link is None:
            return False
        link.ref = ref
        if link.alive and time.monotonic() - link.pulled_at >= PULL_EVERY:
            self._pull(link)
        return link.alive

    def gone(self, ref: AgentRef) -> str:
        link = self._links.get(ref.name)
        return link.lost if link else ""

    def host(self, name: str) -> str:
        link = self._link(name) if name else None
        return link.ip if link else ""

    def output(self, name: str) -> bytes | None:
        link = self._link(name) if name else None
        if link is None:
            return None
        try:
            return bytes(ray.get(link.actor.output.remote(), timeout=CALL_TIMEOUT))
        except (RayActorError, GetTimeoutError):
            return None

    def screen(self, name: str, lines: int) -> str:
        link = self._links.get(name)
        if link is None or link.lost:
            return ""
        try:
            return str(ray.get(link.actor.screen.remote(lines), timeout=CALL_TIMEOUT))
        except (RayActorError, GetTimeoutError):
            return ""

    def stop(self, ref: AgentRef, patience: float, finished: bool, report: Report) -> str:
        """Stop it on its node (which commits what it left), bring the rest over, and end
        the actor. A node that is gone has nothing left to stop: what it shipped is here."""
        link = self._link(ref.name)
        if link is None:
            return ""
        link.ref = ref
        left = ""
        if not link.lost:
            try:
                left, said = ray.get(link.actor.stop.remote(patience, finished), timeout=CALL_TIMEOUT + 4 * patience)
                for line in said:
                    report(line)
                link.alive = True
                self._pull(link)  # its last output and commits
                if left:
                    left = f"on {link.ip}: {left}"
            except (RayActorError, GetTimeoutError) as e:
                report(f"its Ray actor went away while stopping ({type(e).__name__})")
        self.close(ref.name)
        return left

    def close(self, name: str) -> None:
        link = self._link(name) if name else None
        if link is None:
            return
        try:
            ray.get(link.actor.close.remote(), timeout=CALL_TIMEOUT)
        except (RayActorError, GetTimeoutError):
            pass
        with contextlib.suppress(RayActorError, ValueError):  # already gone with its node
            ray.kill(link.actor, no_restart=True)
        self._links.pop(name, None)

    def names(self) -> list[str]:
        self._connect()
        prefix = f"{self.project}:"
        return [
            a["name"][len(prefix) :]
            for a in ray.util.list_named_actors(all_namespaces=True)
            if a.get("namespace") == NAMESPACE and a["name"].startswith(prefix)
        ]

    def attach_argv(self, name: str) -> list[str]:
        link = self._link(name)
        if link is None:
            return []
        return ["ssh", "-t", link.ip, "tmux", "-L", link.socket, "attach-session", "-t", name]

    def attach(self, name: str, replace_process: bool = False) -> int:
        """The agent runs on another machine: say how to watch it there."""
        argv = self.attach_argv(name)
        if not argv:
            raise HiveError(f"no Ray actor runs {name}")
        print(f"{name} runs on node {argv[2]}; watch it there with:\n  {' '.join(argv)}", flush=True)
        return 0

    def shutdown(self) -> None:
        if ray is not None and ray.is_initialized():
            ray.shutdown()

    # --- bringing the node's files and commits here ----------------------------------------------

    def _pull(self, link: _Link) -> None:
        with link.lock:
            link.pulled_at = time.monotonic()
            try:
                pulled: Pulled = ray.get(link.actor.poll.remote(link.cursor), timeout=CALL_TIMEOUT)
            except ActorUnavailableError:
                now = time.monotonic()
                link.unreachable_since = link.unreachable_since or now
                if now - link.unreachable_since >= UNREACHABLE_PATIENCE:
                    self._lose(link, f"its Ray node {link.ip} could not be reached for {UNREACHABLE_PATIENCE:g}s")
                return
            except (RayActorError, GetTimeoutError) as e:
                self._lose(link, f"its Ray node {link.ip} or its actor died ({type(e).__name__})")
                return
            link.unreachable_since = 0.0
            self._write(link, pulled)
            link.cursor, link.alive = pulled.cursor, pulled.alive

    def _lose(self, link: _Link, why: str) -> None:
        link.alive, link.lost = False, why

    def _write(self, link: _Link, p: Pulled) -> None:
        """Commits first: a signal written here is acted on at once, and its work must be here."""
        ref = link.ref
        if ref is None:
            return
        plan, task_id = names.split_key(ref.task)
        paths = Paths(Path(ref.root))
        if p.tip and p.tip != git.try_rev_parse(ref.root, f"refs/heads/{link.branch}"):
            self._fetch(link, p.tip)
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

    def _fetch(self, link: _Link, tip: str) -> None:
        root = Path(link.ref.root) if link.ref else self.root
        have = git.try_rev_parse(root, f"refs/heads/{link.branch}")
        data = ray.get(link.actor.bundle.remote([have] if have else []), timeout=CALL_TIMEOUT)
        incoming = f"refs/hive/incoming/{link.branch}"
        if data:
            fetch_bundle(root, data, f"refs/heads/{link.branch}", incoming, self._spool())
        adopt(root, link.branch, link.worktree, tip)
        git.git(root, "update-ref", "-d", incoming, check=False)


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
    import json

    from hive.plan import discovered

    data = json.loads(item)
    discovered.file_item(who, str(data.get("title", "")), str(data.get("details", "")))
