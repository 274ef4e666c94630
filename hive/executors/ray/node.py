"""The node side of the Ray executor: one actor per project and node (`NodeAgent`), holding
that node's attempts. An attempt brings the repository there from a bundle (into a cache
kept per project under the node's workdir), makes its worktree, and runs the agent in tmux
exactly as the local executor does: the same brief, `hive done` writing its signal under a
node-local HIVE_ROOT, its output logged, its exit status recorded. The controller watches
it for all of that and for new commits, and it answers from files, so an attempt survives
its controller and the next `doit` re-attaches."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import threading
import time
from pathlib import Path

from hive import logcap
from hive.adapters import git, procfs, worktrees
from hive.errors import CommandError, HiveError
from hive.executors.base import AgentRef, Launch
from hive.executors.ray import lifeline
from hive.executors.ray.shipping import LOG_CHUNK, Cursor, Pulled, Spec, create_bundle, take_bundle
from hive.executors.tmux.executor import TmuxExecutor
from hive.sandbox import bwrap, gitdir, network, policy
from hive.store import agent_signals
from hive.store.files import (
    NOTES,
    SMALL,
    NotAFile,
    atomic_write,
    create_exclusive,
    list_untrusted,
    locked,
    read_untrusted,
)
from hive.store.names import split_key
from hive.store.paths import Paths

SEEN_KEPT = 50  # commits remembered per project for incremental bundles
WATCH_STEP = 0.05  # how often a watch looks at an attempt's files (here, not over the network)
OUTPUT_BATCH = 0.25  # output alone is sent once it has been growing this long


def node_workdir(workdir: str) -> Path:
    """This node's folder for Hive: its HIVE_NODE_WORKDIR, else [executor] workdir."""
    return Path(os.environ.get("HIVE_NODE_WORKDIR") or os.path.expanduser(workdir))


def node_home(workdir: str, project: str) -> Path:
    return node_workdir(workdir) / project


class Node:
    """What the attempts of one project on this node share: its repository cache and its tmux server."""

    def __init__(self, project: str, workdir: str) -> None:
        import ray

        self.home = node_home(workdir, project)
        # not bare: with per-worktree config (Hive's excludes) a bare repository's core.bare
        # would apply to its worktrees too, and git refuses to work in them
        self.cache = self.home / "repo"
        self.lock = self.home / "cache.lock"
        self.node_id = ray.get_runtime_context().get_node_id()
        self.actor_id = ray.get_runtime_context().get_actor_id() or ""
        self.ip = ray.util.get_node_ip_address()
        # one tmux server per node: on one machine two nodes' agents must not share one
        os.environ["HIVE_TMUX_SOCKET"] = f"{os.environ.get('HIVE_TMUX_SOCKET', 'hive')}-{self.node_id[:8]}"
        self.tmux = TmuxExecutor()

    def seen(self) -> list[str]:
        """Commits the cache holds (the newest first): a bundle for this node leaves them out."""
        with locked(self.lock):  # not while another attempt creates the cache
            if not (self.cache / ".git").exists():
                return []
            res = git.git(
                self.cache,
                "for-each-ref",
                "--sort=-committerdate",
                f"--count={SEEN_KEPT}",
                "--format=%(objectname)",
                "refs/hive/seen/",
                check=False,
            )
        return res.stdout.split() if res.code == 0 else []


class Attempt:
    """One attempt on this node: its worktree, its agent in tmux, what it left for the controller."""

    def __init__(self, node: Node, spec: Spec) -> None:
        self.node, self.spec = node, spec
        self.token = 0
        self.acked = Cursor()
        self.dir = node.home / "attempts" / hashlib.sha1(spec.name.encode()).hexdigest()[:12]
        self.root = self.dir / "root"  # HIVE_ROOT for the agent: `hive done` / `note` / `discover` write here
        self.worktree = self.dir / "wt"
        self.log = self.dir / "output.log"
        self.exit_file = self.dir / "exit"
        self.seen_ref = f"refs/hive/seen/{self.dir.name}"
        # what `hive done`, `note` and `discover` write under the node-local HIVE_ROOT (a watch looks every step)
        paths, (plan, task_id) = Paths(self.root), split_key(spec.key)
        self.signal_file = paths.signal_file(plan, task_id, spec.attempt)
        self.notes_file = paths.notes_file(plan, task_id)
        self.found_dir = paths.discovered_dir(plan)
        self.private = self.dir / "gitdir"  # its own git directory, when sandboxed (hive.sandbox.gitdir)
        self.bad = ""  # what it left in its private git directory that is not git's (then nothing is brought back)
        self.refused = self.dir / "refused.jsonl"  # what its sandbox's proxy refused
        self.stopping = threading.Event()  # ends the watch in flight: the controller wants its news now

    def _ref(self) -> AgentRef:
        s = self.spec
        return AgentRef(str(self.root), s.key, s.attempt, s.name, self.token)

    def _local(self, text: str) -> str:
        """The controller's paths in `text`, as this node's (the worktree first: it may lie below the root)."""
        s = self.spec
        return text.replace(s.worktree, str(self.worktree)).replace(s.root, str(self.root))

    def where(self) -> dict[str, str]:
        return {
            "ip": self.node.ip,
            "node_id": self.node.node_id,
            "socket": os.environ["HIVE_TMUX_SOCKET"],
            "worktree": str(self.worktree),
            "controller_worktree": self.spec.worktree,
            "branch": self.spec.branch,
            "log_cap": str(self.spec.log_cap),  # the controller's log of it keeps as much
        }

    def start(self, bundle: bytes) -> int:
        spec, cache = self.spec, self.node.cache
        self.dir.mkdir(parents=True, exist_ok=True)
        # whose it is, for the lifeline when this actor dies, and for an actor that comes after it
        held = {"actor": self.node.actor_id, "name": spec.name, "key": spec.key, "attempt": spec.attempt}
        atomic_write(self.dir / lifeline.HELD, json.dumps(held))
        with locked(self.node.lock):  # attempts on this node share the cache
            if not (cache / ".git").exists():
                cache.mkdir(parents=True, exist_ok=True)
                git.git(cache, "init", "-q")
            if bundle:
                take_bundle(cache, bundle)
            refs = f"update {self.seen_ref} {spec.start}\nupdate refs/heads/{spec.branch} {spec.start}\n"
            git.git(cache, "update-ref", "--stdin", stdin=refs)
            if self.worktree.exists():  # a start retried after it failed half-way
                shutil.rmtree(self.worktree)
            add = ["worktree", "add", "-q", str(self.worktree), spec.branch]
            if git.git(cache, *add, check=False).code != 0:  # git may still know a worktree deleted there
                git.worktree_prune(cache)
                git.git(cache, *add)
        self._place()
        env = {k: self._local(v) for k, v in spec.env.items()}
        shims = agent_signals.ensure_shim(Paths(self.root))
        env["PATH"] = f"{shims}{os.pathsep}{os.environ.get('PATH', '')}"  # this node's PATH, not the controller's
        env["GIT_CEILING_DIRECTORIES"] = str(self.worktree.parent)  # its git never looks above its worktree
        if spec.setup:  # in the sandbox too: the checkout holds what an earlier attempt's agent wrote
            inside = self._setup_sandbox() if spec.sandbox is not None else policy.UNCONFINED
            done = inside.run(spec.setup, self.worktree, {**os.environ, **env}, spec.setup_timeout)
            if done.code != 0:
                raise HiveError(f"worktree setup command failed on {self.node.ip} (exit {done.code}): {spec.setup}")
        argv, unset = [self._local(a) for a in spec.argv], spec.unset
        beside: tuple[str, ...] = ()
        if spec.sandbox is not None:
            confined = self._sandbox(spec.sandbox, argv)
            argv, env, unset = [*confined.prefix, *argv], {**env, **confined.env}, unset + confined.unset
            beside = confined.beside
        self.token = self.node.tmux.start(
            Launch(
                self._ref(),
                argv,
                env,
                self.worktree,
                self.log,
                self.exit_file,
                self.dir / "agent.env",
                self.worktree / spec.brief,
                unset=unset,
                beside=beside,
                confined=spec.sandbox is not None,
                log_cap=spec.log_cap,  # bounded here too: what it prints stays on this node's disk
            )
        ).ref.token
        return self.token

    def _sandbox(self, rules: policy.Rules, argv: list[str]) -> policy.Confined:
        """The sandbox this node makes for the agent, as the controller's machine would: it
        writes its checkout, its node-local HIVE_ROOT (signal, notes, discovered items) and
        a git directory of its own (the node's cache, which other attempts share, stays
        read-only); without bubblewrap here, `mode = "on"` refuses, "auto" says so in its log."""
        why = self._cannot_sandbox(rules)
        if why:
            said = f"hive: warning: on node {self.node.ip} the agent runs without a sandbox: {why}\n"
            logcap.append(self.log, said.encode(), self.spec.log_cap)
            return policy.UNCONFINED
        refs = {self.spec.branch: self.spec.start}
        shown = gitdir.create(self.private, self.worktree, self.spec.branch, refs, self.dir / "excludes")
        own = (self.worktree, self.root, self.private)
        files = ((shown, self.worktree / ".git"),)
        box = policy.Box(self.node.home, tuple(argv), own, str(self.dir), self.refused, files)
        # ... its way out: also to the model servers this node's environment names
        return policy.confine(dataclasses.replace(rules, allow=(*rules.allow, *network.hosts_in(os.environ))), box)

    def _cannot_sandbox(self, rules: policy.Rules) -> str:
        """Why bubblewrap cannot sandbox here ("" if it can); with `mode = "on"` that fails the start."""
        why = bwrap.unavailable()
        if why and rules.required:
            raise HiveError(f'[sandbox] mode = "on", but on node {self.node.ip} {why}')
        return why

    def _setup_sandbox(self) -> policy.Confined:
        """`[worktrees] setup` here: it writes the checkout, as a check does on the controller."""
        assert self.spec.sandbox is not None
        if self._cannot_sandbox(self.spec.sandbox):
            return policy.UNCONFINED  # as its agent will run (`_sandbox` says so)
        box = policy.Box(self.node.home, ("bash",), (self.worktree,), f"setup {self.dir}", self.refused)
        return policy.confine(self.spec.sandbox, box)

    def _bring_back(self) -> None:
        """The agent's commits, from its own git directory into the cache's branch (where the
        controller's bundles come from), once it has made new ones."""
        if not self.bad and gitdir.pending(self.private, self.spec.branch):
            with locked(self.node.lock):
                try:
                    gitdir.bring_back(self.node.cache, self.worktree, self.private, self.spec.branch)
                except NotAFile as e:  # the controller ends the attempt on it, as on a signal file that is not one
                    where = e.path.relative_to(self.private) if e.path.is_relative_to(self.private) else e.path
                    self.bad = f"its private git directory holds {where}, which is {e.what}"
                    create_exclusive(self.signal_file, agent_signals.bad_file(self.bad))

    def _place(self) -> None:
        """Hive's files in the worktree, as the controller placed them in its own."""
        s = self.spec
        for name, (data, mode) in s.files.items():
            path = self.worktree / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(self._local(data.decode()).encode() if name == s.brief else data)
            path.chmod(mode)
        for name in s.hidden:
            git.skip_worktree(self.worktree, name)
        worktrees.set_excludes(self.node.cache, self.worktree, self.dir / "excludes", list(s.excludes))

    def poll(self, cursor: Cursor | None) -> Pulled:
        """Everything new since `cursor` (None: since the last cursor a controller sent)."""
        self.acked = cursor = cursor or self.acked
        # the marker, then the tail, when what lay at cursor.log was cut out of the log here (hive.logcap)
        output = logcap.chunk(self.log, cursor.log, limit=LOG_CHUNK)
        notes = _lines(self.notes_file)[cursor.notes :]
        found = _found(self.found_dir)[cursor.found :]
        refused = _lines(self.refused)[cursor.refused :]
        exit_text = _text(self.exit_file)
        signal = _signal(self.signal_file)
        tip = self._tip()
        # the new commits come with the news of them: the controller acts on them at once
        commits = self.bundle([cursor.tip]) if tip and cursor.tip and tip != cursor.tip else b""
        return Pulled(
            alive=procfs.pid_alive(self.token) and exit_text is None,
            exit=exit_text,
            log=output.data,
            signal=signal,
            notes=tuple(notes),
            found=tuple(found),
            refused=tuple(refused),
            tip=tip,
            cursor=Cursor(
                output.end,
                cursor.notes + len(notes),
                cursor.found + len(found),
                tip,
                signal is not None,
                cursor.refused + len(refused),
            ),
            commits=commits,
            since=cursor,
            log_at=output.start,
            log_marker=output.marker,
        )

    def watch(self, cursor: Cursor | None, wait: float) -> Pulled:
        """`poll` once there is news: at once for what the controller acts on (a commit, the
        signal, notes, discovered items, the agent's end), output once it has been growing
        for OUTPUT_BATCH, anything after `wait` (the controller's sign of life). Looking
        here every WATCH_STEP costs a few file reads (~50 µs); a Ray call costs this actor
        ~0.5 ms of CPU (measured here), and the controller its own share, per look."""
        self.acked = cursor = cursor or self.acked
        began = time.monotonic()
        grew_at = 0.0
        while not self.stopping.is_set():
            now = time.monotonic()
            if now - began >= wait or self._news(cursor):
                break
            if logcap.size(self.log) > cursor.log:
                grew_at = grew_at or now
                if now - grew_at >= OUTPUT_BATCH:
                    break
            self.stopping.wait(WATCH_STEP)
        return self.poll(cursor)

    def _news(self, cursor: Cursor) -> bool:
        return (
            self._tip() != cursor.tip
            or (not cursor.signal and self.signal_file.exists())
            or self.exit_file.exists()
            or not procfs.pid_alive(self.token)
            or len(_lines(self.notes_file)) > cursor.notes
            or _count(self.found_dir) > cursor.found
        )

    def _tip(self) -> str:
        """The branch's commit, from its ref file when git keeps one (every poll asks)."""
        self._bring_back()
        loose = _text(self.node.cache / ".git" / "refs" / "heads" / self.spec.branch)
        return loose.strip() if loose else git.try_rev_parse(self.node.cache, f"refs/heads/{self.spec.branch}")

    def bundle(self, known: list[str]) -> bytes:
        """The branch's commits the controller lacks (`known`: commits it has)."""
        return create_bundle(self.node.cache, f"refs/heads/{self.spec.branch}", known, self.node.home / "spool")

    def output(self, since: int = 0) -> logcap.Chunk:
        return logcap.chunk(self.log, since)

    def screen(self, lines: int) -> str:
        return self.node.tmux.agent(self._ref()).screen(lines)

    def stop(self, patience: float, finished: bool) -> tuple[str, list[str]]:
        """Stop the agent as the local executor does, then commit what it left uncommitted
        to its branch (the controller fetches it next), as the local engine would."""
        said: list[str] = []
        left = self.node.tmux.agent(self._ref()).stop(patience, finished, said.append)
        self._bring_back()  # its commits first: what it left uncommitted is committed on top of them
        if worktrees.health(self.worktree) == worktrees.OK:
            try:
                worktrees.restore_branch(self.worktree, self.spec.branch)
                worktrees.retire_context(self.worktree, self.spec.brief)
                worktrees.salvage(self.worktree, f"hive: changes {self.spec.key} attempt {self.spec.attempt} left")
            except (HiveError, CommandError) as e:  # e.g. its worktree deleted meanwhile: its commits are kept
                gone = worktrees.health(self.worktree) == worktrees.MISSING
                why = "its worktree there was deleted" if gone else str(e)
                said.append(f"what it left uncommitted on {self.node.ip} was not committed: {why}")
        return left, said

    def close(self) -> None:
        """Remove the worktree and the branch; the cache keeps the commits (as seen)."""
        self.node.tmux.agent(self._ref()).close()
        cache = self.node.cache
        self._bring_back()
        gitdir.remove(self.private)
        with locked(self.node.lock):
            tip = self._tip()
            if self.worktree.exists():
                git.worktree_remove(cache, self.worktree, locked_too=True)
            if tip:
                refs = f"update {self.seen_ref} {tip}\ndelete refs/heads/{self.spec.branch}\n"
                git.git(cache, "update-ref", "--stdin", stdin=refs)
        shutil.rmtree(self.dir, ignore_errors=True)


class NodeAgent:
    """The Ray actor: one per project and node, holding that node's attempts. Each attempt
    holds one unit of the agent resource through its own placement group, so the resource
    still caps agents per node, while an attempt costs no new process: 64 actors starting
    at once took 29 s on a 2-core machine, 64 attempts here do not start a process at all."""

    def __init__(self, project: str, workdir: str) -> None:
        self.node = Node(project, workdir)
        self.attempts: dict[str, Attempt] = {}
        self.lock = threading.Lock()
        self._clear_orphans()
        # held open, never written, while this process lives: its closing ends this actor's agents
        self._lifeline = lifeline.start(
            self.node.home / "attempts", self.node.actor_id, self.node.home / "lifeline.log"
        )

    def _clear_orphans(self) -> None:
        """Attempts an earlier actor here left when it died: their controllers have taken
        them as lost and run them elsewhere, so their agents must not go on here (its
        lifeline ended them, unless it could not: a node that came back after dying whole)."""
        attempts = self.node.home / "attempts"
        lifeline.end_agents(attempts, None)
        for folder in attempts.glob("*"):
            shutil.rmtree(folder, ignore_errors=True)
        if (self.node.cache / ".git").exists():
            with locked(self.node.lock):
                git.worktree_prune(self.node.cache)

    def _get(self, name: str) -> Attempt:
        attempt = self.attempts.get(name)
        if attempt is None:
            raise HiveError(f"no attempt {name} on node {self.node.ip}")
        return attempt

    def seen(self) -> list[str]:
        return self.node.seen()

    def names(self) -> list[str]:
        return list(self.attempts)

    def where(self, name: str) -> dict[str, str]:
        attempt = self.attempts.get(name)
        return attempt.where() if attempt else {}

    def start(self, spec: Spec, bundle: bytes) -> tuple[int, dict[str, str]]:
        """The agent's token, and where it runs."""
        with self.lock:
            if spec.name in self.attempts:
                raise HiveError(f"attempt {spec.name} already runs on node {self.node.ip}")
            attempt = self.attempts[spec.name] = Attempt(self.node, spec)
        try:
            return attempt.start(bundle), attempt.where()
        except BaseException:
            self.close(spec.name)
            raise

    def locate(self, name: str) -> int | None:
        """The agent's token while this node holds its attempt, even once the agent has
        ended: what it left here (a signal, its exit status, its last commits) reaches the
        controller only through a watch, so a new run re-attaches instead of starting over."""
        attempt = self.attempts.get(name)
        return attempt.token if attempt else None

    def watch(self, name: str, cursor: Cursor | None, wait: float) -> Pulled:
        return self._get(name).watch(cursor, wait)

    def bundle(self, name: str, known: list[str]) -> bytes:
        return self._get(name).bundle(known)

    def output(self, name: str, since: int = 0) -> logcap.Chunk:
        return self._get(name).output(since)

    def screen(self, name: str, lines: int) -> str:
        attempt = self.attempts.get(name)
        return attempt.screen(lines) if attempt else ""

    def stop(self, name: str, patience: float, finished: bool, cursor: Cursor | None) -> tuple[str, list[str], Pulled]:
        """What survived, what the stop said, and what is new since `cursor` once it stopped
        (the last output, and what it left uncommitted, committed)."""
        attempt = self._get(name)
        attempt.stopping.set()
        left, said = attempt.stop(patience, finished)
        return left, said, attempt.poll(cursor)

    def close(self, name: str) -> None:
        with self.lock:
            attempt = self.attempts.pop(name, None)
        if attempt is not None:
            attempt.close()


def _text(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def _count(folder: Path) -> int:
    return len(_items(folder))


def _lines(path: Path) -> list[str]:
    """The lines of its notes file, which its agent writes: none of one that is not a file or
    is bigger than NOTES (its notes are shipped by line, counted from the first)."""
    try:
        return read_untrusted(path, NOTES).decode("utf-8", errors="replace").splitlines()
    except (FileNotFoundError, NotAFile):
        return []


def _signal(path: Path) -> str | None:
    """Its signal file, as the controller reads one: a file that is not one is sent as what it
    is (`agent_signals.read` ends the attempt on it)."""
    try:
        return read_untrusted(path, SMALL).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except NotAFile as e:
        return agent_signals.bad_file(agent_signals.bad_signal(e))


def _found(folder: Path) -> list[str]:
    """Discovered items filed here, oldest first (their numbers only grow; each file is
    written whole, by create_exclusive); what is not an item's file is left out."""
    out = []
    for name in sorted(_items(folder), key=lambda n: (len(n), n)):
        try:
            out.append(read_untrusted(folder / name, SMALL).decode("utf-8", errors="replace"))
        except (FileNotFoundError, NotAFile):
            continue
    return out


def _items(folder: Path) -> list[str]:
    try:
        return [name for name in list_untrusted(folder) if name.endswith(".json")]
    except (FileNotFoundError, NotAFile):
        return []
