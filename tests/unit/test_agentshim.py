"""hive/agentshim.py through the `.hive/bin/hive` that agents run: a signal written quickly and
exactly as `agent_signals.send` writes one; everything else handed to the whole CLI."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
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
