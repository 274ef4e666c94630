"""hive/agentshim.py through the `.hive/bin/hive` that agents run: a signal written quickly and
exactly as `agent_signals.send` writes one; everything else handed to the whole CLI."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hive import agentshim, scripts
from hive.lifecycle import SIGNALS, Kind
from hive.store import agent_signals
from hive.store.paths import Paths

PLAN, TASK, ATTEMPT = "auth", "2.1", 3


def test_its_verbs_are_the_signals():
    assert agentshim.KINDS == {verb: kind.value for verb, kind in SIGNALS.items()}


@pytest.mark.parametrize("reason", ["", 'says "no"\\ at\n\tonce\x00', "réseau — 网络 🐝", "\ud800"])
def test_a_signal_is_what_json_dumps_writes(reason: str):
    fields = {"signal": "too_big", "reason": reason, "time": 1795775229.7381, "task": 'a:"x"', "attempt": 2}
    assert agentshim._payload(*fields.values()) == json.dumps(fields)


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths(tmp_path)


def hive(paths: Paths, *args: str, signal_file: bool = True) -> subprocess.CompletedProcess[str]:
    """`hive ARGS` as an agent runs it: the shim on PATH, the variables Hive sets."""
    env = {
        **os.environ,
        "PATH": f"{agent_signals.ensure_shim(paths)}{os.pathsep}{os.environ['PATH']}",
        "HIVE_TASK": f"{PLAN}:{TASK}",
        "HIVE_ATTEMPT": str(ATTEMPT),
        "HIVE_ROOT": str(paths.root),
    }
    if signal_file:
        env[agentshim.SIGNAL_FILE] = str(paths.signal_file(PLAN, TASK, ATTEMPT))
    return subprocess.run(["hive", *args], env=env, capture_output=True, text=True, timeout=60)


def read(paths: Paths) -> agent_signals.Signal | None:
    return agent_signals.read(paths.signal_file(PLAN, TASK, ATTEMPT))


def test_the_shim_runs_the_shim_module_isolated(paths: Paths):
    agent_signals.ensure_shim(paths)
    assert f"exec {shlex.join(scripts.argv(agentshim.__file__))} " in paths.shim.read_text()


@pytest.mark.parametrize("args", [["--reason", "all tests pass"], ["--reason=all tests pass"]])
def test_a_signal_is_written_where_hive_said(paths: Paths, args: list[str]):
    done = hive(paths, "done", *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"hive: {PLAN}:{TASK} signalled done; Hive takes it from here — stop now.\n"
    sig = read(paths)
    assert sig is not None and (sig.kind, sig.reason) == (Kind.DONE, "all tests pass") and sig.time > 0


def test_the_first_signal_counts(paths: Paths):
    assert hive(paths, "blocked", "--reason", "needs a key").returncode == 0
    again = hive(paths, "done")
    assert again.returncode == 0
    assert again.stdout == f"hive: {PLAN}:{TASK} attempt {ATTEMPT} had already signalled; this one is ignored.\n"
    sig = read(paths)
    assert sig is not None and (sig.kind, sig.reason) == (Kind.BLOCKED, "needs a key")
    folder = paths.signal_file(PLAN, TASK, ATTEMPT).parent
    assert [p.name for p in folder.iterdir()] == ["signal.json"]  # no temp file left


def test_the_same_signal_as_the_whole_cli_writes(paths: Paths):
    """Without HIVE_SIGNAL_FILE (a shim older than the run, or a hand-made environment) the whole
    CLI signals: the same file, the same words."""
    slow = hive(paths, "too-big", "--reason", "split it", signal_file=False)
    assert slow.returncode == 0, slow.stderr
    assert slow.stdout == f"hive: {PLAN}:{TASK} signalled too-big; Hive takes it from here — stop now.\n"
    sig = read(paths)
    assert sig is not None and (sig.kind, sig.reason) == (Kind.TOO_BIG, "split it")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["done", "--help"], "--reason"),  # help: the CLI's own
        (["--version"], "hive-agents"),
        (["done", "--reason"], "expected one argument"),  # a mistake: the CLI's error
    ],
)
def test_anything_else_is_the_whole_cli(paths: Paths, args: list[str], says: str):
    out = hive(paths, *args)
    assert says in out.stdout + out.stderr
    assert read(paths) is None


# The shell's own way (agentshim.shim): a plain signal is written without starting Python; the
# rest falls to the module. Run by dash (Debian's sh) and by bash (others' sh).
SHELLS = [sh for sh in ("dash", "bash") if shutil.which(sh)]


def shell_hive(
    tmp_path: Path, shell: str, *args: str, slow: str = "echo SLOW", **env: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The shim's text with a slow way that only says it was taken, run by `shell`."""
    script = tmp_path / "hive"
    script.write_text(agentshim.shim(slow))
    signal = tmp_path / "signals" / "signal.json"
    signal.parent.mkdir(exist_ok=True)
    variables = {"HIVE_SIGNAL_FILE": str(signal), "HIVE_TASK": "auth:2.1", "HIVE_ATTEMPT": "3", **env}
    run = subprocess.run(
        [shell, str(script), *args], env={"PATH": os.environ["PATH"], **variables}, capture_output=True, text=True
    )
    return run, signal


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(
    ("args", "kind", "reason"),
    [
        (["done"], Kind.DONE, ""),
        (["done", "--reason", "all 12 tests pass (pytest -q)"], Kind.DONE, "all 12 tests pass (pytest -q)"),
        (["blocked", "--reason=needs an API key: ask ops"], Kind.BLOCKED, "needs an API key: ask ops"),
        (["too-big", "--reason", ""], Kind.TOO_BIG, ""),
    ],
)
def test_a_plain_signal_is_written_by_the_shell(tmp_path: Path, shell: str, args: list[str], kind: Kind, reason: str):
    run, signal = shell_hive(tmp_path, shell, *args)
    assert run.returncode == 0 and "SLOW" not in run.stdout, run.stdout + run.stderr
    assert run.stdout == f"hive: auth:2.1 signalled {args[0]}; Hive takes it from here — stop now.\n"
    sig = agent_signals.read(signal)
    assert sig is not None and (sig.kind, sig.reason) == (kind, reason) and sig.time > 1.7e9
    assert json.loads(signal.read_text())["task"] == "auth:2.1" and json.loads(signal.read_text())["attempt"] == 3
    assert [p.name for p in signal.parent.iterdir()] == ["signal.json"]  # no temp file left
    again, _ = shell_hive(tmp_path, shell, "blocked", "--reason", "later")
    assert again.stdout == "hive: auth:2.1 attempt 3 had already signalled; this one is ignored.\n"
    assert agent_signals.read(signal) == sig


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["done", "--reason", 'says "no"'], {}),
        (["done", "--reason", "back\\slash"], {}),
        (["done", "--reason", "two\nlines"], {}),
        (["done", "--reason", "tab\there"], {}),
        (["done", "--reason", "réseau 🐝"], {}),
        (["done", "--reason", "\x1b]0;title\x07"], {}),
        (["done", "--reason"], {}),  # the CLI's error
        (["done", "--help"], {}),
        (["done", "extra"], {}),
        (["changes", "--reason", "x"], {}),  # a reviewer's verb, not an author's
        (["review:done"], {}),
        (["blocked"], {"HIVE_REVIEW": "1"}),  # an author's verb, not a reviewer's
        (["done"], {"HIVE_ATTEMPT": "03"}),  # JSON has no leading zeros
        (["done"], {"HIVE_ATTEMPT": ""}),
        (["done"], {"HIVE_TASK": 'a:"b"'}),
        (["done"], {"HIVE_SIGNAL_FILE": ""}),
        (["done"], {"HIVE_SIGNAL_FILE": "/nonexistent/folder/signal.json"}),
    ],
)
def test_anything_but_a_plain_signal_is_the_modules(tmp_path: Path, shell: str, args: list[str], env: dict[str, str]):
    run, signal = shell_hive(tmp_path, shell, *args, **env)
    assert run.stdout == "SLOW " + " ".join(args) + "\n", run.stderr
    assert not signal.exists()


@pytest.mark.parametrize("shell", SHELLS)
def test_a_reviewers_verdict_is_written_by_the_shell(tmp_path: Path, shell: str):
    run, signal = shell_hive(tmp_path, shell, "changes", "--reason", "rename x to count", HIVE_REVIEW="1")
    assert run.returncode == 0 and "SLOW" not in run.stdout
    sig = agent_signals.read(signal, review=True)
    assert sig is not None and (sig.kind, sig.reason) == (Kind.CHANGES, "rename x to count")


def commands(tmp_path: Path, **scripts: str) -> str:
    """A PATH whose first folder holds these shell scripts (name → text) in place of commands."""
    folder = tmp_path / "commands"
    folder.mkdir(exist_ok=True)
    for name, text in scripts.items():
        (folder / name).write_text(f"#!/bin/sh\n{text}\n")
        (folder / name).chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.parametrize("shell", SHELLS)
def test_a_stop_that_lands_once_the_signal_is_linked_lets_the_shell_finish(tmp_path: Path, shell: str):
    """Hive sees the signal the moment it is linked and stops the agent's processes, the shim
    among them: it still removes its temporary file and tells its agent the signal was sent
    (killed there, it told an agent its signal failed, which then gave up: a flake)."""
    rm = shutil.which("rm")
    stop = f'kill -HUP $PPID; kill -INT $PPID; kill -TERM $PPID; kill -HUP $$; exec {rm} "$@"'
    run, signal = shell_hive(tmp_path, shell, "done", PATH=commands(tmp_path, rm=stop))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == "hive: auth:2.1 signalled done; Hive takes it from here — stop now.\n"
    assert [p.name for p in signal.parent.iterdir()] == ["signal.json"]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_slow_way_taken_late_can_be_stopped_as_any_command(tmp_path: Path, shell: str):
    """Where the link fails for another reason than a signal already there, the module takes
    over; it (`hive ask` waits long) gets the stop's signals again."""
    slow = "sh -c 'kill -TERM $$; echo SURVIVED' sh"
    run, signal = shell_hive(tmp_path, shell, "done", slow=slow, PATH=commands(tmp_path, ln="exit 1"))
    assert "SURVIVED" not in run.stdout and not signal.exists()


def test_the_modules_signal_outlasts_a_stop_too(paths: Paths):
    """The Python way (a reason the shell leaves to it): the stop's signals are ignored from
    before the signal is written."""
    code = (
        "import os, signal, sys; from hive import agentshim\n"
        "def send(*args):\n"
        "    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):\n"
        "        os.kill(os.getpid(), sig)\n"
        "    return True\n"
        "agentshim.send = send\n"
        "sys.exit(agentshim.main(['done', '--reason', 'réseau']))\n"
    )
    env = {**os.environ, "HIVE_TASK": f"{PLAN}:{TASK}", "HIVE_ATTEMPT": str(ATTEMPT)}
    env[agentshim.SIGNAL_FILE] = str(paths.signal_file(PLAN, TASK, ATTEMPT))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"hive: {PLAN}:{TASK} signalled done; Hive takes it from here — stop now.\n"


@pytest.mark.parametrize("reason", ["ok", "réseau"])  # the shell's way, the module's
def test_a_signal_sent_succeeds_though_its_terminal_is_gone(paths: Paths, reason: str):
    """Hive stops the session the signal came from, and its terminal hangs up under `hive
    done` as it says what it did (here: a full device): the signal is sent all the same."""
    env = {
        **os.environ,
        "PATH": f"{agent_signals.ensure_shim(paths)}{os.pathsep}{os.environ['PATH']}",
        "HIVE_TASK": f"{PLAN}:{TASK}",
        "HIVE_ATTEMPT": str(ATTEMPT),
        agentshim.SIGNAL_FILE: str(paths.signal_file(PLAN, TASK, ATTEMPT)),
    }
    with open("/dev/full", "w") as full:
        run = subprocess.run(["hive", "done", "--reason", reason], env=env, stdout=full, stderr=subprocess.PIPE)
    assert run.returncode == 0, run.stderr
    sig = read(paths)
    assert sig is not None and sig.reason == reason
