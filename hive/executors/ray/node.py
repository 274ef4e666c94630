"""The node side of the Ray executor: one actor per attempt, on a node that offers the
agent resource. It brings the repository there from a bundle (into a cache kept per
project under the node's workdir), makes the attempt's worktree, and runs the agent in
tmux exactly as the local executor does: the same brief, `hive done` writing its
signal under a node-local HIVE_ROOT, its output logged, its exit status recorded. The
controller polls it for all of that and for new commits, and it answers from files,
so an actor survives its controller and the next `doit` re-attaches."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from hive.adapters import git, processes
from hive.engine import workspace
from hive.errors import HiveError
from hive.executors.base import AgentRef, Launch
from hive.executors.ray.shipping import LOG_CHUNK, Cursor, Pulled, Spec, create_bundle, fetch_bundle
from hive.executors.tmux import TmuxExecutor
from hive.store import agent_signals
from hive.store.files import locked
from hive.store.names import split_key
from hive.store.paths import Paths

SEEN_KEPT = 50  # commits remembered per project for incremental bundles


def node_home(workdir: str, project: str) -> Path:
    base = os.environ.get("HIVE_NODE_WORKDIR") or os.path.expanduser(workdir)
    return Path(base) / project


class NodeAttempt:
    def __init__(self, project: str, workdir: str) -> None:
        import ray

        self.home = node_home(workdir, project)
        # not bare: with per-worktree config (Hive's excludes) a bare repository's core.bare
        # would apply to its worktrees too, and git refuses to work in them
        self.cache = self.home / "repo"
        self.node_id = ray.get_runtime_context().get_node_id()
        self.ip = ray.util.get_node_ip_address()
        # one tmux server per node: on one machine two nodes' agents must not share one
        os.environ["HIVE_TMUX_SOCKET"] = f"{os.environ.get('HIVE_TMUX_SOCKET', 'hive')}-{self.node_id[:8]}"
        self.tmux = TmuxExecutor()
        self.spec: Spec | None = None
        self.token = 0
        self.acked = Cursor()

    # --- where things are on this node ---------------------------------------------------------

    @property
    def _spec(self) -> Spec:
        if self.spec is None:
            raise HiveError("this attempt's actor was never started")
        return self.spec

    def _dir(self) -> Path:
        slug = hashlib.sha1(self._spec.name.encode()).hexdigest()[:12]
        return self.home / "attempts" / slug

    @property
    def root(self) -> Path:
        """HIVE_ROOT for the agent here: `hive done` / `note` / `discover` write under it."""
        return self._dir() / "root"

    @property
    def worktree(self) -> Path:
        return self._dir() / "wt"

    @property
    def log(self) -> Path:
        return self._dir() / "output.log"

    @property
    def exit_file(self) -> Path:
        return self._dir() / "exit"

    def _ref(self) -> AgentRef:
        s = self._spec
        return AgentRef(str(self.root), s.key, s.attempt, s.name, self.token)

    def _local(self, text: str) -> str:
        """The controller's paths in `text`, as this node's (the worktree first: it may lie below the root)."""
        s = self._spec
        return text.replace(s.worktree, str(self.worktree)).replace(s.root, str(self.root))

    # --- the attempt ------------------------------------------------------------------------------

    def where(self) -> dict[str, str]:
        return {
            "ip": self.ip,
            "node_id": self.node_id,
            "socket": os.environ["HIVE_TMUX_SOCKET"],
            "worktree": str(self.worktree) if self.spec else "",
            "controller_worktree": self.spec.worktree if self.spec else "",
            "branch": self.spec.branch if self.spec else "",
        }

    def seen(self) -> list[str]:
        """Commits this node's cache holds (the newest first): a bundle for it leaves them out."""
        if not (self.cache / ".git").exists():
            return []
        out = git.git(
            self.cache,
            "for-each-ref",
            "--sort=-committerdate",
            f"--count={SEEN_KEPT}",
            "--format=%(objectname)",
            "refs/hive/seen/",
        ).stdout
        return out.split()

    def start(self, spec: Spec, bundle: bytes) -> int:
        self.spec = spec
        self._dir().mkdir(parents=True, exist_ok=True)
        with locked(self.home / "cache.lock"):  # attempts on this node share the cache
            if not (self.cache / ".git").exists():
                self.cache.mkdir(parents=True, exist_ok=True)
                git.git(self.cache, "init", "-q")
            seen = f"refs/hive/seen/{hashlib.sha1(spec.name.encode()).hexdigest()[:12]}"
            if bundle:
                fetch_bundle(self.cache, bundle, f"refs/heads/{spec.branch}", seen, self.home / "spool")
            git.git(self.cache, "update-ref", seen, spec.start)
            git.git(self.cache, "branch", "-f", spec.branch, spec.start)
            git.worktree_prune(self.cache)
            if self.worktree.exists():  # a start retried after it failed half-way
                shutil.rmtree(self.worktree)
            git.git(self.cache, "worktree", "add", "-q", str(self.worktree), spec.branch)
        self._place()
        env = {k: self._local(v) for k, v in spec.env.items()}
        shims = agent_signals.ensure_shim(Paths(self.root))
        env["PATH"] = f"{shims}{os.pathsep}{os.environ.get('PATH', '')}"  # this node's PATH, not the controller's
        if spec.setup:
            done = workspace.run_setup(self.worktree, spec.setup, {**os.environ, **env}, spec.setup_timeout)
            if done.code != 0:
                raise HiveError(f"worktree setup command failed on {self.ip} (exit {done.code}): {spec.setup}")
        self.token = self.tmux.start(
            Launch(
                spec.name,
                [self._local(a) for a in spec.argv],
                env,
                self.worktree,
                self.log,
                self.exit_file,
                self._dir() / "agent.env",
                self.worktree / spec.brief,
                unset=spec.unset,
            )
        )
        return self.token

    def _place(self) -> None:
        """Hive's files in the worktree, as the controller placed them in its own."""
        s = self._spec
        for name, (data, mode) in s.files.items():
            path = self.worktree / name
            path.parent.mkdir(parents=True, exist_ok=True)
            text = data.decode() if name == s.brief else None
            path.write_bytes(self._local(text).encode() if text is not None else data)
            path.chmod(mode)
        for name in s.hidden:
            git.skip_worktree(self.worktree, name)
        workspace.set_excludes(self.cache, self.worktree, self._dir() / "excludes", list(s.excludes))

    def locate(self) -> int | None:
        return self.tmux.locate(self._spec.name) if self.spec else None

    def poll(self, cursor: Cursor | None) -> Pulled:
        """Everything new since `cursor` (None: since the last cursor a controller sent)."""
        s = self._spec
        self.acked = cursor = cursor or self.acked
        plan, task_id = split_key(s.key)
        paths = Paths(self.root)
        log = _read_from(self.log, cursor.log, LOG_CHUNK)
        notes = _lines(paths.notes_file(plan, task_id))[cursor.notes :]
        found = _found(paths.discovered_dir(plan))[cursor.found :]
        exit_text = _text(self.exit_file)
        return Pulled(
            alive=processes.pid_alive(self.token) and exit_text is None,
            exit=exit_text,
            log=log,
            signal=_text(paths.signal_file(plan, task_id, s.attempt)),
            notes=tuple(notes),
            found=tuple(found),
            tip=git.try_rev_parse(self.cache, f"refs/heads/{s.branch}"),
            cursor=Cursor(cursor.log + len(log), cursor.notes + len(notes), cursor.found + len(found)),
        )

    def bundle(self, known: list[str]) -> bytes:
        """The branch's commits the controller lacks (`known`: commits it has)."""
        s = self._spec
        return create_bundle(self.cache, f"refs/heads/{s.branch}", known, self.home / "spool")

    def output(self) -> bytes:
        return self.log.read_bytes() if self.log.exists() else b""

    def screen(self, lines: int) -> str:
        return self.tmux.screen(self._spec.name, lines) if self.spec else ""

    def stop(self, patience: float, finished: bool) -> tuple[str, list[str]]:
        """Stop the agent as the local executor does, then commit what it left uncommitted
        to its branch (the controller fetches it next), as the local engine would."""
        if self.spec is None:
            return "", []
        said: list[str] = []
        left = self.tmux.stop(self._ref(), patience, finished, said.append)
        if workspace.health(self.worktree) == workspace.OK:
            try:
                workspace.restore_branch(self.worktree, self._spec.branch)
                workspace.retire_context(self.worktree, self._spec.brief)
                workspace.salvage(self.worktree, f"hive: changes {self._spec.key} attempt {self._spec.attempt} left")
            except HiveError as e:
                said.append(f"its work on {self.ip} was not committed: {e}")
        return left, said

    def close(self) -> None:
        """Remove the worktree and the branch; the cache keeps the commits (as seen)."""
        if self.spec is None:
            return
        self.tmux.close(self._spec.name)
        with locked(self.home / "cache.lock"):
            seen = f"refs/hive/seen/{hashlib.sha1(self._spec.name.encode()).hexdigest()[:12]}"
            tip = git.try_rev_parse(self.cache, f"refs/heads/{self._spec.branch}")
            if tip:
                git.git(self.cache, "update-ref", seen, tip)
            if self.worktree.exists():
                git.worktree_remove(self.cache, self.worktree, locked_too=True)
            git.worktree_prune(self.cache)
            git.git(self.cache, "branch", "-D", self._spec.branch, check=False)
        shutil.rmtree(self._dir(), ignore_errors=True)


def _text(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def _read_from(path: Path, offset: int, limit: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(limit)
    except FileNotFoundError:
        return b""


def _lines(path: Path) -> list[str]:
    text = _text(path)
    return text.splitlines() if text else []


def _found(folder: Path) -> list[str]:
    """Discovered items filed here, oldest first (their numbers only grow)."""
    items = sorted(folder.glob("*.json"), key=lambda p: (len(p.stem), p.stem))
    out = []
    for item in items:
        text = _text(item)
        if text is not None:
            try:
                json.loads(text)
            except ValueError:
                continue  # half-written: taken on the next poll
            out.append(text)
    return out
