"""Issue 43: what a new user met in their first hour — a run's output (Hive's lines, none of
doit's dump, the same in a file as on a terminal, the progress line never glued to a message),
a typo in one plan that blinded every view of the run, a checkpoint report that went stale."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys

from conftest import read_pty
from webserver import start_web, stop_web

FAILING = """
### Task a: Fails
**Type:** script
```sh
echo failing; exit 1
```

### Task b: After it
**Type:** script
**Depends on:** a
```sh
echo never
```

### Task c: Alone
fake: write c.txt c
fake: commit c
fake: signal done
"""

DOIT_DUMP = ("TaskFailed", "UnmetDependency", "########", "<stdout>", "<stderr>", "taskid:")


def _on_a_terminal(repo, *args: str) -> tuple[int, str]:
    """`doit ARGS` with a terminal for its stdout and stderr: (exit code, what the terminal got)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "doit", *args], cwd=repo.root, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    out = read_pty(master)
    code = proc.wait(timeout=120)
    os.close(master)
    return code, out.decode(errors="replace")


def _lines_shown(terminal: str) -> list[str]:
    """The lines a terminal shows at the end: the progress line, erased, is gone."""
    shown = []
    for line in terminal.replace("\r\n", "\n").split("\n"):
        line = line.rsplit("\r\x1b[2K", 1)[-1]
        if line and not line.startswith("["):
            shown.append(line)
    return shown


def test_a_failed_run_says_what_happened_in_hives_lines_and_none_of_doits_dump(repo):
    repo.write_plan("f", FAILING)
    piped = repo.doit()
    assert piped.returncode == 1
    assert piped.stderr == "", piped.stderr  # everything Hive says is on stdout: `doit | tee` keeps it
    out = piped.stdout
    assert not [word for word in DOIT_DUMP if word in out], out
    lines = out.splitlines()
    assert "hive: f:a is failed: script exited with status 1" in lines, out
    assert "    `hive retry f:a` after fixing the cause (logs: `hive logs f:a`)" in lines, out
    assert "hive: f:b skipped: waits for f:a (failed)" in lines, out
    assert lines[-1].startswith("hive: run finished in ") and "1 done, 1 failed, 1 skipped" in lines[-1], out
    alone = repo.doit("f:c").stdout.splitlines()[-1]  # the tally of what it was asked to run
    assert alone.startswith("hive: run finished in ") and "— 1 done (`hive status`)" in alone, alone

    repo.hive("retry", "f:a")
    code, terminal = _on_a_terminal(repo)
    assert code == 1 and not [word for word in DOIT_DUMP if word in terminal], terminal
    shown = _lines_shown(terminal)
    for line in ("hive: f:a is failed: script exited with status 1", "hive: f:b skipped: waits for f:a (failed)"):
        assert line in shown, shown


SLOW = """
### Task a: Slow
fake: sleep 3
fake: signal done

### Task b: Slow too
fake: sleep 3
fake: signal done
"""


def test_on_a_terminal_the_progress_line_is_erased_before_each_message_and_drawn_again_while_tasks_run(repo):
    repo.write_plan("s", SLOW)
    code, terminal = _on_a_terminal(repo, "-n", "2")
    assert code == 0, terminal
    # no message is glued to the progress line: each one starts on an erased line
    for match in re.finditer(r"hive: ", terminal):
        before = terminal[: match.start()]
        assert before.endswith("\r\x1b[2K") or before.endswith("\n"), repr(before[-80:])
    assert not re.search(r"running: [^\r\n]*hive:", terminal), terminal
    # drawn again while the agents work (its times move on): more than once per message
    draws = re.findall(r"\[\d/2\] running: s:a (\S+), s:b (\S+)", terminal)
    assert len({d for d in draws}) >= 3, draws


def test_a_typo_in_one_plan_leaves_every_view_of_the_others(repo):
    repo.write_plan("good", "### Task 1: Fine\nfake: write a.txt a\nfake: commit a\nfake: signal done\n")
    assert repo.doit().returncode == 0
    repo.write_plan("bad", "### Task 1: Typo\n**Typ:** script\n\n```sh\ntrue\n```\n")
    status = repo.hive("status")
    assert status.returncode == 0, status.stderr
    assert "plans/bad.md:5: unknown field '**Typ:**' — did you mean '**Type:**'?" in status.stdout
    assert "good:1" in status.stdout and "done" in status.stdout
    data = json.loads(repo.hive("status", "--json").stdout)
    assert [t["plan"] + ":" + t["id"] for t in data["tasks"]] == ["good:1"]
    assert len(data["errors"]) == 1 and data["errors"][0].startswith("plans/bad.md:5: unknown field")
    web = start_web(repo.root)
    try:
        import urllib.request

        with urllib.request.urlopen(web.url, timeout=30) as page:
            html = page.read().decode()
        assert 'data-task="good:1" data-state="done"' in html and "unknown field" in html
    finally:
        stop_web(web.proc)
    refused = repo.doit()
    assert refused.returncode == 3 and "plans/bad.md:5: unknown field" in refused.stderr  # doit still refuses


DECISION = """
### Task 1: Build
fake: signal done

### Task 2: Pick a database
**Type:** checkpoint:decision
**Depends on:** 1
**Options:** Postgres, SQLite
- **Postgres:** robust, needs a server
- **SQLite:** one file

### Task 3: Alone
fake: signal done

### Task 4: Use it
**Depends on:** 2
fake: signal done
"""


def test_the_checkpoint_report_is_as_things_stand_at_each_run_and_lists_each_option_once(repo):
    repo.write_plan("d", DECISION)
    first = repo.doit("d:2")
    assert first.returncode == 1 and "**Progress:** 1/4 tasks complete" in first.stdout, first.stdout
    assert first.stdout.count("- **SQLite:** one file") == 1, first.stdout
    assert repo.doit("d:3").returncode == 0
    again = repo.doit("d:2")
    assert "**Progress:** 2/4 tasks complete" in again.stdout, again.stdout
    assert again.stdout.count("- **Postgres:** robust, needs a server") == 1, again.stdout
    saved = (repo.root / ".hive" / "checkpoints" / "d" / "2.md").read_text()
    assert "**Progress:** 2/4 tasks complete" in saved
    assert repo.hive("approve", "d:2", "--choice", "SQLite").returncode == 0
    assert repo.doit().returncode == 0
    [row] = [line for line in repo.hive("status").stdout.splitlines() if line.startswith("  d:2 ")]
    assert row.rstrip().endswith("answered: choice: SQLite"), row


def test_the_polish_a_new_user_noticed(repo):
    """`hive logs` holds a failed Verify's output; `doit list --status` says what its letters mean;
    `doit info` shows no internals; `hive retry a b` retries both, and a planned task says what
    it waits for; `hive --help` puts the people's verbs first."""
    repo.write_plan(
        "p",
        """
    ### Task a: Checked
    **Verify:** echo the-verify-said-this; exit 1
    fake: write a.txt a
    fake: commit a
    fake: signal done

    ### Task b: Blocked
    fake: signal blocked needs a key

    ### Task c: After a
    **Depends on:** a
    fake: signal done
    """,
    )
    assert repo.doit().returncode == 1
    logs = repo.hive("logs", "p:a")
    assert "the-verify-said-this" in logs.stdout and "p:a Verify (exit 1)" in logs.stdout, logs.stdout
    listed = repo.doit("list", "--status")
    assert "R: not done, runs at the next `doit` · U: up to date (done)" in listed.stdout, listed.stdout
    info = repo.doit("info", "p:c")
    assert "args=" not in info.stdout and "hive_rank" not in info.stdout and "meta" not in info.stdout, info.stdout
    waits = repo.hive("retry", "p:c")
    assert waits.returncode == 3
    assert (
        "p:c is planned; only failed, blocked, too_big tasks can be retried — it is skipped: waits for p:a (failed)"
        in (waits.stderr)
    )
    both = repo.hive("retry", "p:a", "p:b")
    assert both.returncode == 0, both.stderr
    assert [line.split(" (")[0] for line in both.stdout.splitlines()[:2]] == [
        "hive: p:a: re-opened",
        "hive: p:b: re-opened",
    ]
    usage = repo.hive("--help").stdout
    assert usage.index("  status") < usage.index("run by agents (their brief says when):") < usage.index("  done ")
    assert (
        "(default: 80)" in repo.hive("logs", "--help").stdout and "(default: 8765" in repo.hive("web", "--help").stdout
    )
