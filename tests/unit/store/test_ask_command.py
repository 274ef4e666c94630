"""`hive ask` as an agent runs it: it waits at most HIVE_ASK_WAIT (the run's ask_wait), then
tells the agent what to do and exits 75; it prints the answer and exits 0 once there is one;
without HIVE_ASK_WAIT (an agent on a Ray node) it says to use `hive blocked`."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from hive.store import questions
from hive.store.paths import Paths


def _ask(root: Path, *args: str, wait: str | None = "0.4") -> subprocess.CompletedProcess:
    env = {**os.environ, "HIVE_TASK": "shop:3", "HIVE_ATTEMPT": "1", "HIVE_ROOT": str(root)}
    env.pop("HIVE_ASK_WAIT", None)
    if wait is not None:
        env["HIVE_ASK_WAIT"] = wait
    return subprocess.run(
        [sys.executable, "-m", "hive", "ask", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_no_answer_in_time_tells_the_agent_to_commit_note_and_end(tmp_path: Path):
    r = _ask(tmp_path, "Which database?", "--options", "Postgres, SQLite", "--details", "both work")
    assert r.returncode == 75
    assert "no answer yet to question 1" in r.stdout and "commit your work" in r.stdout and "hive note" in r.stdout
    [q] = questions.load(Paths(tmp_path), "shop", "3")
    assert (q.text, q.options, q.details) == ("Which database?", ("Postgres", "SQLite"), "both work")
    assert q.gave_up_at and not q.delivered and not q.answered


def test_the_answer_is_printed_alone_on_stdout(tmp_path: Path):
    def answer_soon() -> None:
        folder = Paths(tmp_path).questions_dir("shop", "3")
        while not (folder / "1.json").exists():
            time.sleep(0.05)
        questions.answer(Paths(tmp_path), "shop", "3", "the data is small", "sqlite")

    helper = threading.Thread(target=answer_soon)
    helper.start()
    r = _ask(tmp_path, "Which database?", "--options", "Postgres,SQLite", wait="30")
    helper.join()
    assert r.returncode == 0 and r.stdout == "SQLite — the data is small\n"
    assert "waiting up to 30s for the answer" in r.stderr
    [q] = questions.load(Paths(tmp_path), "shop", "3")
    assert q.delivered and not q.gave_up_at


def test_an_agent_that_cannot_reach_its_human_is_told_to_use_blocked(tmp_path: Path):
    r = _ask(tmp_path, "Which database?", wait=None)
    assert r.returncode == 3
    assert "`hive ask` cannot reach your human from here" in r.stderr and "hive blocked --reason" in r.stderr
    assert questions.load(Paths(tmp_path), "shop", "3") == []
