"""Fixtures: real git repos in temp dirs, a private tmux server per test, real
`doit` subprocesses, and the fake agent standing in for the LLM."""

from __future__ import annotations

import compileall
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from webserver import Web, start_web, stop_web

from hive.cli.init import init as hive_init
from hive.store import names

if TYPE_CHECKING:
    from ray_cluster import LocalRayCluster

HERE = Path(__file__).resolve().parent
FAKE_AGENT = HERE / "fake_agent.py"
REAL_HOME = Path.home()

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _default_tmux_sessions() -> str:
    env = {k: v for k, v in os.environ.items() if k != "TMUX_TMPDIR"}
    r = subprocess.run(["tmux", "ls"], capture_output=True, text=True, env=env)
    return r.stdout


@pytest.fixture(scope="session", autouse=True)
def _no_stray_default_tmux():
    """No test may start sessions on the user's own tmux server."""
    before = _default_tmux_sessions()
    yield
    assert _default_tmux_sessions() == before, "a test left sessions on the default tmux server"


@pytest.fixture(autouse=True)
def isolated(monkeypatch):
    """A fake $HOME, pinned git identity, and a private tmux server that is always killed."""
    home_listing = sorted(p.name for p in REAL_HOME.iterdir()) if REAL_HOME.is_dir() else []
    # tmux socket paths must stay short (sun_path is ~108 bytes): use /tmp directly.
    scratch = Path(tempfile.mkdtemp(prefix="hv", dir="/tmp"))
    home = scratch / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMUX_TMPDIR", str(scratch))
    monkeypatch.setenv("HIVE_TMUX_SOCKET", f"t{uuid.uuid4().hex[:8]}")
    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.delenv("HIVE_TASK", raising=False)
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    yield scratch
    socket = os.environ["HIVE_TMUX_SOCKET"]
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    leftovers = _processes_left(f"HIVE_TMUX_SOCKET={socket}".encode())
    shutil.rmtree(scratch, ignore_errors=True)
    assert not leftovers, f"the test left processes running (now killed): {leftovers}"
    after = sorted(p.name for p in REAL_HOME.iterdir()) if REAL_HOME.is_dir() else []
    assert after == home_listing, f"test touched the real $HOME: {set(after) ^ set(home_listing)}"


def _with_env(marker: bytes) -> dict[int, str]:
    """Live processes whose environment carries `marker` (everything a test starts does)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                found[int(name)] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
    return found


def _processes_left(marker: bytes, patience: float = 10.0) -> dict[int, str]:
    """Whatever a test started and did not end (doit runs, workers, agents): given a
    moment to exit, then killed and reported, so no test can leak processes."""
    deadline = time.monotonic() + patience
    while (left := _with_env(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def git(cwd: Path, *args: str, check: bool = True) -> str:
    r = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {r.stderr}")
    return r.stdout.strip()


CONFIG = """\
[agent]
default = "fake"

[agents.fake]
command = ["{python}", "{fake}", "{{context_file}}"]
context_file = "AGENTS.md"

[execution]
spawn_grace_period = "{grace}"
task_timeout = "{timeout}"
max_attempts = {attempts}
stop_patience = "{stop}"

[sandbox]
# where bubblewrap works (CI installs it) agents run sandboxed, as by default; the fake agent
# logs its starts and signals here
writable = [{writable}]
{sandbox}
[merge]
main_branch = "main"
"""


@dataclass
class Run:
    proc: subprocess.Popen
    out_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        """What it printed so far: Hive's lines (stdout) and doit's errors (stderr), in order."""
        return self.out_path.read_text()

    def wait(self, timeout: float = 180) -> int:
        return self.proc.wait(timeout=timeout)

    def running(self) -> bool:
        return self.proc.poll() is None


@dataclass
class Repo:
    root: Path

    def write_plan(self, name: str, body: str, status: str = "approved", front: str = "") -> Path:
        text = textwrap.dedent(body).lstrip("\n")
        if status:
            text = f"---\nstatus: {status}\n{front}---\n" + text
        path = self.root / "plans" / f"{name}.md"
        path.write_text(text)
        return path

    def configure(
        self,
        grace: str = "10s",
        timeout: str = "2m",
        attempts: int = 2,
        extra: str = "",
        stop: str = "5s",
        sandbox: str = "",
        writable: tuple[str, ...] = (),
    ) -> None:
        """The fake agent's config; `extra`: more tables; `sandbox`: more lines of `[sandbox]`;
        `writable`: more of its `writable` paths."""
        text = CONFIG.format(
            python=sys.executable,
            fake=FAKE_AGENT,
            grace=grace,
            timeout=timeout,
            attempts=attempts,
            stop=stop,
            writable=", ".join(json.dumps(p) for p in (f"{self.root}/.hive/fake/", *writable)),
            sandbox=sandbox,
        )
        (self.root / ".hive" / "config.toml").write_text(text + extra)

    def doit(self, *args: str, timeout: float = 180, env: dict | None = None) -> subprocess.CompletedProcess:
        # its own session: a kill -9 of doit's process group (crash tests) never reaches pytest
        return subprocess.run(
            [sys.executable, "-m", "doit", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )

    def start_doit(self, *args: str, env: dict | None = None, prefix: tuple[str, ...] = ()) -> Run:
        """doit in the background, in its own process group (so a test can kill -9 it and
        its workers together), its output in a file the test can poll; `prefix`: what runs it
        (e.g. `prlimit`)."""
        self._runs = getattr(self, "_runs", 0) + 1
        out = self.root.parent / f"doit-{self._runs}.out"
        with open(out, "w") as f:
            proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", "doit", *args],
                cwd=self.root,
                stdout=f,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(env or {})},
            )
        return Run(proc, out)

    def events(self) -> list[dict]:
        path = self.root / ".hive" / "events.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def timeline(self) -> list[tuple[str, int, float, str]]:
        """(task, attempt, time, event) of every fake-agent start and signal."""
        log = self.root / ".hive" / "fake" / "spawns.log"
        rows = []
        for line in log.read_text().splitlines() if log.exists() else []:
            task, attempt, at, event = line.split()
            rows.append((task, int(attempt), float(at), event))
        return rows

    def use_fake_planner(self) -> None:
        """`hive plan` runs tests/fake_planner.py (an interactive profile) as its planner."""
        cfg = self.root / ".hive" / "config.toml"
        command = json.dumps([sys.executable, str(HERE / "fake_planner.py"), "{context_file}"])
        cfg.write_text(
            cfg.read_text().replace('default = "fake"', 'default = "fake"\nplanner = "fakeplanner"')
            + f'\n[agents.fakeplanner]\ncommand = {command}\nmode = "interactive"\n'
        )

    def go(self, name: str = "go") -> None:
        (self.root / ".hive" / "fake").mkdir(parents=True, exist_ok=True)
        (self.root / ".hive" / "fake" / name).write_text("")

    def hive(self, *args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "hive", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )

    def git(self, *args: str, check: bool = True) -> str:
        return git(self.root, *args, check=check)

    def spawns(self) -> list[tuple[str, int, str]]:
        """(task, attempt, event) for every fake-agent start and signal."""
        log = self.root / ".hive" / "fake" / "spawns.log"
        if not log.exists():
            return []
        out = []
        for line in log.read_text().splitlines():
            task, attempt, _, event = line.split()
            out.append((task, int(attempt), event))
        return out

    def starts(self, task: str | None = None) -> list[str]:
        return [t for t, _, e in self.spawns() if e == "start" and (task is None or t == task)]

    def state(self, plan: str, task_id: str) -> dict:
        path = self.root / ".hive" / "state" / plan / f"{task_id}.json"
        return json.loads(path.read_text()) if path.exists() else {"state": "planned"}

    def agent_commits(self) -> str:
        """The subjects of every commit of the repository and of the sandboxed attempts' own
        git directories (`.hive/gitdirs`, where their agents commit until Hive brings them back)."""
        # check=False: while Hive makes a worktree, `git log --all` may meet it half-made and fail
        out = [self.git("log", "--all", "--format=%s", check=False)]
        for private in (self.root / ".hive" / "gitdirs").glob("*"):
            if private.is_dir():
                log = ["git", "--git-dir", str(private), "log", "--all", "--format=%s"]
                out.append(subprocess.run(log, capture_output=True, text=True, check=False).stdout)
        return "\n".join(out)

    def status_json(self) -> dict:
        r = self.hive("status", "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def main_log(self) -> list[str]:
        return self.git("log", "--format=%s", "main").splitlines()

    def worktrees(self) -> list[str]:
        """Every worktree but the main checkout and the workers' spares (`[worktrees] reuse`)."""
        return [path for path in self._linked_worktrees() if not names.is_spare(Path(path).name)]

    def spares(self) -> list[str]:
        """The checkouts workers keep for their next task; each must hold nothing but what main has."""
        found = [path for path in self._linked_worktrees() if names.is_spare(Path(path).name)]
        listed = self.git("worktree", "list", "--porcelain").split("\n\n")
        assert not [b for b in listed if "\nlocked" in b], f"a checkout left locked: {listed}"
        for path in found:
            assert git(Path(path), "status", "--porcelain") == "", f"a spare checkout holds changes: {path}"
            assert git(Path(path), "symbolic-ref", "-q", "HEAD", check=False) == "", f"{path}: not detached"
            assert git(self.root, "merge-base", "--is-ancestor", git(Path(path), "rev-parse", "HEAD"), "main") == ""
        return found

    def _linked_worktrees(self) -> list[str]:
        return [
            line.split(" ", 1)[1]
            for line in self.git("worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")
        ][1:]

    def file_on_main(self, path: str) -> str | None:
        r = subprocess.run(["git", "-C", str(self.root), "show", f"main:{path}"], capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else None


@pytest.fixture
def repo(isolated) -> Repo:
    root = isolated / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# project\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "initial commit")
    # what `hive init` does (tests/e2e/test_init.py runs the command), without a Python of its
    # own: ~0.25 s in each of the ~300 tests that start from a repo
    hive_init(root)
    repo = Repo(root)
    repo.configure()
    return repo


# A task and one that depends on it, each committing one file (crash and fault tests).
ONE_THEN_TWO = """
### Task 1: Work
fake: write w.txt w
fake: commit the work
fake: signal done

### Task 2: Next
**Depends on:** 1
fake: write n.txt n
fake: commit next work
fake: signal done
"""


def assert_finished_exactly_once(repo: Repo, tasks: dict[str, str]) -> None:
    """Every task done, its commit on main once, no ghost runs, no leftovers."""
    data = repo.status_json()
    states = {t["plan"] + ":" + t["id"]: t for t in data["tasks"]}
    for key, message in tasks.items():
        assert states[key]["state"] == "done", states[key]
        assert repo.main_log().count(message) == 1, repo.main_log()
    assert data["counts"]["in_progress"] == 0
    assert repo.worktrees() == []
    repo.spares()  # whatever a worker keeps for its next task holds nothing of its own
    assert not [b for b in repo.git("branch", "--format=%(refname:short)").split() if b.startswith("hive/")]


def read_pty(master: int, until: bytes | None = None) -> bytes:
    """What a program wrote to the terminal, up to `until` (or until it closed it)."""
    out = b""
    while until is None or until not in out:
        try:
            data = os.read(master, 4096)
        except OSError:  # the other side closed
            break
        if not data:
            break
        out += data
    return out


def wait_for(predicate, timeout: float = 30, interval: float = 0.05, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


# --- the real agent CLIs (tests/real_cli) -------------------------------------------------------
# Here rather than in tests/real_cli/conftest.py: test modules import helpers with
# `from conftest import ...`, and a second conftest module would shadow this one.

API_KEY = "test-key"


@pytest.fixture(scope="session")
def cli_paths() -> dict[str, Path]:
    """name -> executable, for claude, codex, gemini and aider, installed on first use
    (tests/clis.py). Session-scoped, so the install, which writes under the real home,
    happens before `isolated` takes its snapshot of the real home."""
    from clis import CLIS, cli_path

    return {name: cli_path(name) for name in CLIS}


@pytest.fixture
def model_server():
    from model_server import ModelServer

    with ModelServer(api_key=API_KEY) as server:
        yield server


class _Hello(http.server.BaseHTTPRequestHandler):
    """Answers every GET with `hello <path>`."""

    def do_GET(self) -> None:
        body = f"hello {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


def _serving() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def http_server() -> Iterator[int]:
    """A real HTTP server on 127.0.0.1 (also reachable as `localhost`); yields its port."""
    yield from _serving()


@pytest.fixture
def other_http_server() -> Iterator[int]:
    """Another one, on another port (a refusal of its port is the allowlist's, not an empty port)."""
    yield from _serving()


@pytest.fixture
def home(isolated: Path) -> Path:
    """The temp $HOME that `isolated` set."""
    path = Path(os.environ["HOME"])
    assert path.is_relative_to(isolated)
    return path


@pytest.fixture
def git_repo(isolated: Path) -> Path:
    """A git repo with one commit on main (the git identity comes from `isolated`)."""
    root = isolated / "work"
    root.mkdir()
    (root / "README.md").write_text("# project\n")
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"], ["commit", "-q", "-m", "initial commit"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return root


# --- a real local Ray cluster (tests/ray; issue 11) ---------------------------------------------
# Here too rather than in tests/ray/conftest.py. The cluster's processes inherit `isolated`'s
# HIVE_TMUX_SOCKET, so one left running fails the test that started it.


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "ray_cluster(**kwargs): arguments of LocalRayCluster for the ray_cluster fixture (workers=4, ...)"
    )
    from clis import CACHE

    # Made before any test runs: under pytest-xdist one worker may install the CLIs while
    # another's test compares the real home's listing before and after (`isolated`), and the
    # install's first act would otherwise create ~/.cache there.
    CACHE.mkdir(parents=True, exist_ok=True)
    if not hasattr(config, "workerinput"):  # once, in pytest's own process, before its workers start
        # An editable install compiles nothing, and where PYTHONDONTWRITEBYTECODE is set (as in
        # this machine's environment) no run writes bytecode either: every doit and hive the
        # tests start (thousands) compiled Hive from source, ~0.15 s of CPU each. Compiled once
        # here, as pip compiles an installed tool.
        compileall.compile_dir(HERE.parent / "hive", quiet=1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = [HERE / tier for tier in ("e2e", "ray", "real_cli")]  # the `slow` marker (setup.cfg) is by folder
    for item in items:
        if any(item.path.is_relative_to(tier) for tier in slow):
            item.add_marker(pytest.mark.slow)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `pytest -n N --dist loadgroup` (the README's command) the Ray tests run one after
    another in one worker: a cluster takes 3-4 processes and ~1 GB, and two at once on two
    cores would make their timing the test (and each worker would start its own shared
    cluster). xdist's own grouping (an `xdist_group` marker, written into the test's id) does
    nothing under pytest 9, whose ids no longer read `item._nodeid`: the scheduler groups
    them itself, by folder."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class RayTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "ray" if nodeid.startswith("tests/ray/") else nodeid

    return RayTogether(config, log)


@pytest.fixture
def ray_cluster(isolated: Path, request: pytest.FixtureRequest) -> Iterator[LocalRayCluster]:
    """A started LocalRayCluster (tests/ray_cluster.py): a head on 127.0.0.2 and two worker nodes
    on 127.0.0.3 and .4, each offering 2 `hive_agent` and its own HIVE_NODE_WORKDIR
    (<isolated>/node-1, node-2); ~5-8 s to start on 2 cores, ~20 s on a busy one.
    `@pytest.mark.ray_cluster(workers=4)` changes its shape. At the end every process of it is
    SIGKILLed; a Ray driver the test left connected in this process is shut down and fails the
    test. `@pytest.mark.ray_cluster(shared=True)`: the cluster of its module (`shared_ray_cluster`),
    for a test that leaves the cluster as it found it (no node killed), which saves a start."""
    from ray_cluster import LocalRayCluster, driver_connected, shutdown_driver

    marker = request.node.get_closest_marker("ray_cluster")
    kwargs = dict(marker.kwargs) if marker else {}
    if kwargs.pop("shared", False):
        assert not kwargs, f"a shared cluster has the default shape, not {kwargs}"
        shared: LocalRayCluster = request.getfixturevalue("shared_ray_cluster")
        yield shared
        left_connected = driver_connected()
        shutdown_driver()
        assert not left_connected, "the test left its Ray driver connected: use `with cluster.connect():`"
        return
    # the nodes import what the test defines (its module, conftest) from where pytest did
    kwargs = {"pythonpath": [HERE, request.path.parent], **kwargs}
    cluster = LocalRayCluster(isolated, **kwargs).start()
    yield cluster
    left_connected = driver_connected()
    shutdown_driver()
    cluster.stop()
    assert not left_connected, "the test left its Ray driver connected: use `with cluster.connect():`"


@pytest.fixture(scope="module")
def shared_ray_cluster(request: pytest.FixtureRequest) -> Iterator[LocalRayCluster]:
    """One LocalRayCluster for the tests of a module marked `ray_cluster(shared=True)`. Its nodes
    get a HOME, tmux server and git identity of their own, not the first test's (`isolated` is
    per test): what they leave (an agent, a session) is no test's, and each test checks the
    cluster holds none of its attempts (`leftovers`)."""
    from ray_cluster import LocalRayCluster

    scratch = Path(tempfile.mkdtemp(prefix="hs", dir="/tmp"))
    home = scratch / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    socket = f"s{uuid.uuid4().hex[:8]}"
    own = {"HOME": str(home), "TMUX_TMPDIR": str(scratch), "HIVE_TMUX_SOCKET": socket, **GIT_ENV}
    cluster = LocalRayCluster(scratch, pythonpath=[HERE, request.path.parent])
    with pytest.MonkeyPatch.context() as mp:  # what the nodes inherit as they start
        for key, value in own.items():
            mp.setenv(key, value)
        cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, env={**os.environ, **own})
        shutil.rmtree(scratch, ignore_errors=True)


# --- the dashboard's browser tests (tests/e2e/test_web*.py) ------------------------------------


@pytest.fixture
def web(repo) -> Iterator[Web]:
    server = start_web(repo.root)
    yield server
    err = stop_web(server.proc)
    assert server.proc.returncode in (0, 143), err
    assert "Traceback" not in err and "ERROR" not in err, err


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """One headless chromium for the module (started before any test's fake $HOME and tmux
    socket, so it is not one of a test's processes); its own home for its caches."""
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is needed: apt-get install -y chromium (.ci/run installs it)"
    home, real = tmp_path_factory.mktemp("browser-home"), os.environ["HOME"]
    os.environ["HOME"] = str(home)
    try:
        playwright = sync_playwright().start()
        launched = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"], env=dict(os.environ))
    finally:
        os.environ["HOME"] = real
    yield launched
    launched.close()
    playwright.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1360, "height": 1000})
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    yield opened
    context.close()


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    base = os.environ.get("HIVE_TEST_ARTIFACTS")
    folder = Path(base) / "web" if base else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    print(f"hive web screenshots: {folder}")
    return folder
