"""Stopping: Ctrl-C and SIGTERM to doit end it cleanly (one line per task, no
traceback, exit 130 / 143) and leave agents for the next run; stopping an agent
(hive stop, a timeout, the end of its session) ends every process of it."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import time

import pytest
from conftest import ONE_THEN_TWO, _with_env, assert_finished_exactly_once, read_pty, wait_for
from test_crash import _alive

THREE_WAITING = "\n".join(
    f"""
### Task {t}: Task {t}
fake: wait-for .hive/fake/go
fake: write {t}.txt {t}
fake: commit work {t}
fake: signal done
"""
    for t in "abc"
)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
def test_sigterm_and_ctrl_c_stop_doit_with_one_line_per_task_and_no_traceback(repo, n, how):
    repo.write_plan("s", THREE_WAITING)
    run = repo.start_doit(*(["-n", str(n)] if n > 1 else []))
    wait_for(lambda: len(repo.starts()) == n, what=f"{n} agents to start")
    if how == "sigterm":
        os.kill(run.pid, signal.SIGTERM)
    else:
        os.killpg(run.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
    assert run.wait(timeout=30) == (143 if how == "sigterm" else 130), run.output()
    err = run.output()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = [ln for ln in err.splitlines() if "stopped watching" in ln]
    assert sorted(ln.split(":")[1] + ":" + ln.split(":")[2] for ln in lines) == sorted(
        f" s:{k}" for k in (t.split(":")[1] for t in repo.starts())
    ), err
    assert all("keeps running in tmux session" in ln for ln in lines), err
    running = [t for t in repo.status_json()["tasks"] if t["state"] == "in_progress"]
    assert len(running) == n and all(t["agent_alive"] for t in running)


@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
def test_worker_threads_stop_like_worker_processes_and_the_next_run_goes_on(repo, how):
    """`doit -P thread` (what the Ray executor runs with): the signal reaches only doit's main
    thread; each worker thread hears of it at its next safe point and says its line."""
    repo.write_plan("s", THREE_WAITING)
    run = repo.start_doit("-n", "3", "-P", "thread")
    wait_for(lambda: len(repo.starts()) == 3, what="three agents to start")
    if how == "sigterm":
        os.kill(run.pid, signal.SIGTERM)
    else:
        os.killpg(run.pid, signal.SIGINT)
    assert run.wait(timeout=30) == (143 if how == "sigterm" else 130), run.output()
    err = run.output()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = sorted(ln for ln in err.splitlines() if "stopped watching" in ln)
    assert len(lines) == 3 and all("keeps running in tmux session" in ln for ln in lines), err
    repo.go()
    r = repo.doit("-n", "3", "-P", "thread")
    assert r.returncode == 0, r.stderr
    assert sorted(repo.starts()) == ["s:a", "s:b", "s:c"]  # re-attached, not started again
    assert_finished_exactly_once(repo, {f"s:{t}": f"work {t}" for t in "abc"})


def test_interrupted_run_resumes_without_respawning(repo):
    repo.write_plan("s", THREE_WAITING)
    run = repo.start_doit("-n", "3")
    wait_for(lambda: len(repo.starts()) == 3, what="three agents to start")
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait(timeout=30) == 143
    repo.go()
    r = repo.doit("-n", "3")
    assert r.returncode == 0, r.stderr
    assert sorted(repo.starts()) == ["s:a", "s:b", "s:c"]
    assert_finished_exactly_once(repo, {f"s:{t}": f"work {t}" for t in "abc"})


def test_the_progress_line_is_cleared_before_the_stop_lines(repo):
    repo.write_plan("s", THREE_WAITING)
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "doit", "-n", "2"],
        cwd=repo.root,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    out = read_pty(master, until=b", s:b ")  # `running: s:a 1s, s:b 0.8s`
    wait_for(lambda: len(repo.starts()) == 2, what="two agents to start")
    os.kill(proc.pid, signal.SIGTERM)
    out += read_pty(master)
    assert proc.wait(timeout=30) == 143
    os.close(master)
    text = out.decode(errors="replace")
    before = text[: text.index("stopped watching")]
    last_progress = before.rfind("running: s:a ")
    assert last_progress >= 0 and "\r\x1b[2K" in before[last_progress:], repr(before[-200:])
    assert "running:" not in text[text.index("stopped watching") :], "drawn again after the stop"
    assert "Traceback" not in text


def agent_processes(repo, key: str) -> dict[int, str]:
    """The processes of this test's agent for `key`, found by its task *and* its repository:
    another copy of the suite on the same machine runs an agent for `s:a` too (this test once
    counted that one; issue 22)."""
    ours = _with_env(f"HIVE_ROOT={repo.root}".encode())
    return {pid: cmd for pid, cmd in _with_env(f"HIVE_TASK={key}".encode()).items() if pid in ours}


# Hive's stop escalates (SIGINT, SIGTERM, SIGKILL) to end an agent that traps signals and the
# child it let escape to a process group of its own. These tests watch that escalation, so
# they run unsandboxed (`mode = "off"`): in the sandbox the agent's processes share a pid
# namespace, and the sandbox's end ends every one of them at the first signal.
UNSANDBOXED = 'mode = "off"\n'


def test_hive_stop_ends_an_agent_that_traps_signals_and_its_escaped_child(repo):
    repo.configure(stop="0.5s", sandbox=UNSANDBOXED)
    repo.write_plan(
        "s",
        """
    ### Task a: Stubborn
    fake: trap
    fake: spawn-child
    fake: wait-for .hive/fake/never
    """,
    )
    run = repo.start_doit()
    child_pid_file = repo.root / ".hive" / "fake" / "child-s_a-a1.pid"
    wait_for(child_pid_file.exists, what="the agent's child")
    child = int(child_pid_file.read_text())
    assert len(agent_processes(repo, "s:a")) >= 3  # the pane's shell, the agent, its child
    r = repo.hive("stop", "s:a")
    assert r.returncode == 0, r.stderr
    for sig in ("SIGINT", "SIGTERM"):
        assert f"sending {sig}" in r.stdout, r.stdout
    assert "agent stopped (no process of it is left)" in r.stdout
    assert agent_processes(repo, "s:a") == {} and not _alive(child)
    assert run.wait(timeout=60) == 1, run.output()
    # the run watching the task stops it in the same stages at the same moment: whichever
    # of the two gets to SIGKILL first sends it
    assert "sending SIGKILL" in r.stdout + run.output(), (r.stdout, run.output())
    assert repo.state("s", "a")["state"] == "blocked"


@pytest.mark.parametrize("sandbox", [UNSANDBOXED, 'mode = "on"\n'], ids=["unsandboxed", "sandboxed"])
def test_a_timeout_ends_every_process_of_the_agent(repo, sandbox: str):
    repo.configure(timeout="2s", attempts=1, stop="0.5s", sandbox=sandbox)
    repo.write_plan(
        "t",
        """
    ### Task a: Never ends
    fake: trap
    fake: spawn-child
    fake: wait-for .hive/fake/never
    """,
    )
    r = repo.doit()
    assert r.returncode == 1
    st = repo.state("t", "a")
    assert st["state"] == "failed" and st["reason"].startswith("timeout")
    assert agent_processes(repo, "t:a") == {}, "none is left, the escaped child neither"
    if sandbox == UNSANDBOXED:  # (a sandboxed child's pid is its pid namespace's)
        assert "sending SIGKILL" in r.stdout
        assert not _alive(int((repo.root / ".hive" / "fake" / "child-t_a-a1.pid").read_text()))


def test_an_agent_that_ignores_hangup_after_hive_done_is_ended_before_the_merge(repo):
    repo.configure(stop="0.5s", sandbox=UNSANDBOXED)
    repo.write_plan(
        "d",
        """
    ### Task a: Lingers
    fake: trap
    fake: write a.txt a
    fake: commit work a
    fake: signal done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert "sending SIGTERM" in r.stdout and "sending SIGKILL" in r.stdout
    assert agent_processes(repo, "d:a") == {}
    assert_finished_exactly_once(repo, {"d:a": "work a"})


def test_ctrl_c_while_doit_forks_its_workers_stops_every_worker_at_once(repo):
    """A Ctrl-C that reaches a worker in the instant after its fork, before any of Hive
    runs in it, once escaped as a traceback and left a worker deaf to the stop: doit
    waited 10 s for it and it ran on as an orphan (seen in the soak)."""
    repo.write_plan("f", ONE_THEN_TWO)
    started = time.monotonic()
    r = repo.doit("-n", "2", env={"HIVE_FAULT": "sigint:worker-forked"})
    assert r.returncode == 130, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert time.monotonic() - started < 8, "doit waited for a worker that did not hear the stop"
    assert _with_env(f"HIVE_ROOT={repo.root}".encode()) == {}, "a process of the stopped run is left"
    r = repo.doit("-n", "2")
    assert r.returncode == 0, r.stderr
    assert_finished_exactly_once(repo, {"f:1": "the work", "f:2": "next work"})


def test_the_agent_gets_the_environment_of_doit_not_of_an_older_tmux_server(repo):
    """A tmux session starts with the environment of whoever started the tmux server;
    `IS_SANDBOX=1` exported to `doit` never reached the agent when a server already ran."""
    socket = os.environ["HIVE_TMUX_SOCKET"]
    server_env = {k: v for k, v in os.environ.items() if k != "IS_SANDBOX"} | {"STALE_FROM_SERVER": "1"}
    subprocess.run(
        ["tmux", "-L", socket, "new-session", "-d", "-s", "older", "sleep", "600"], env=server_env, check=True
    )
    repo.write_plan(
        "e",
        """
    ### Task 1: Look around
    fake: env IS_SANDBOX
    fake: env STALE_FROM_SERVER
    fake: signal done
    """,
    )
    r = repo.doit(env={"IS_SANDBOX": "1"})
    assert r.returncode == 0, r.stderr
    log = (repo.root / ".hive" / "logs" / "e" / "1.log").read_text()
    assert "IS_SANDBOX=1" in log, log
    assert "STALE_FROM_SERVER=1" not in log, log
    assert not list((repo.root / ".hive" / "run").glob("*.env")), "the environment file (it may hold keys) is gone"


def test_an_agent_whose_login_shell_resets_path_still_reaches_hive(repo):
    """codex runs commands with `bash -lc`; Debian's /etc/profile resets PATH and `hive
    done` was "command not found": the brief names the command that works there."""
    repo.write_plan(
        "l",
        """
    ### Task 1: Login shell
    fake: write l.txt l
    fake: commit login work
    fake: signal-login done
    """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert_finished_exactly_once(repo, {"l:1": "login work"})
