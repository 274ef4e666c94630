"""Issue 37: what an agent leaves in the folders it may write (its signal folder, its task's
questions folder, its discovered-work folder, its private git directory) is hostile input.
Through real `doit` (under `prlimit --as=4G`: a link to /dev/zero read whole would exhaust it)
and real bubblewrap: every trap ends with a reason that names it, the run ends, `hive status`
answers at once, and the tasks beside the traps merge."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import wait_for

from hive.store.paths import Paths

ON = 'mode = "on"\n'
LIMIT = ("prlimit", "--as=4294967296", "--")  # 4 GiB of address space for doit and all it starts


def _script(task_id: str, title: str, body: str) -> str:
    return f"""
### Task {task_id}: {title}
**Type:** script

```bash
set -e
{body.strip()}
```
"""


# The private git directory, as the sandbox shows it (the worktree's .git names it), and its branch
GITDIR = 'gd=$(git rev-parse --absolute-git-dir); ref="$gd/$(git symbolic-ref HEAD)"'
WORK = "echo work > work-$HIVE_TASK_ID.txt; git add -A; git -c user.name=a -c user.email=a@a commit -qm work"

TRAPS = {  # task: (what it leaves, the reason its attempt fails with; "" = it merges all the same)
    "sig-fifo": ('mkfifo "$(dirname "$HIVE_SIGNAL_FILE")/signal.json"', "its signal file is a FIFO, not a file"),
    "sig-zero": ('ln -s /dev/zero "$HIVE_SIGNAL_FILE"', "its signal file is a symbolic link, not a file"),
    "sig-huge": ('head -c 100000 /dev/zero > "$HIVE_SIGNAL_FILE"', "its signal file is 100,000 bytes, more than"),
    "ref-fifo": (f'{WORK}; {GITDIR}; rm "$ref"; mkfifo "$ref"', "which is a FIFO, not a file"),
    "ref-zero": (f'{WORK}; {GITDIR}; rm "$ref"; ln -s /dev/zero "$ref"', "which is a symbolic link, not a file"),
    "obj-fifo": (
        f'{WORK}; {GITDIR}; mkfifo "$gd/objects/info/commit-graph"',
        "objects/info/commit-graph, which is a FIFO",
    ),
    "alt-swap": (
        f'{WORK}; {GITDIR}; echo /dev > "$gd/objects/info/alternates"',
        "objects/info/alternates, which is changed",
    ),
    "q-fifo": ('mkfifo "$QUESTIONS/1.json"; ' + WORK, ""),
    "q-zero": ('ln -s /dev/zero "$QUESTIONS/1.json"; ln -s /dev/zero "$QUESTIONS/1.answer.json"; ' + WORK, ""),
    "q-many": ('for i in $(seq 1 3000); do : > "$QUESTIONS/x$i"; done; ' + WORK, ""),
    "found-fifo": ('mkfifo "$FOUND/D1.json"; ln -s /dev/zero "$FOUND/D2.json"; ' + WORK, ""),
    "notes-big": ('head -c 3000000 /dev/zero | tr "\\0" "x" >> "$NOTES"; hive note "still sane"; ' + WORK, ""),
}


def _plan(repo) -> str:
    paths = Paths(repo.root)
    tasks = [_script("ok", "An honest task beside them", "echo ok > ok.txt")]
    for task_id, (trap, _) in TRAPS.items():
        where = (
            f"QUESTIONS={paths.questions_dir('h', task_id)}; FOUND={paths.discovered_dir('h')}; "
            f"NOTES={paths.notes_file('h', task_id)}; HIVE_TASK_ID={task_id}"
        )
        tasks.append(_script(task_id, f"Leave a trap: {task_id}", f"{where}\n{trap}"))
    return "".join(tasks)


def test_every_trap_an_agent_leaves_fails_its_attempt_or_is_dropped_and_the_run_goes_on(repo):
    repo.configure(sandbox=ON, attempts=1, extra="[parallel]\nmax_workers = 4\n")
    repo.write_plan("h", _plan(repo))
    home = Path(os.environ["HOME"])
    checkout, homes = repo.git("status", "--porcelain"), sorted(p.name for p in home.iterdir())
    run = repo.start_doit("-n", "4", prefix=LIMIT)
    # while it runs, status answers (a FIFO in a questions folder froze it)
    for _ in range(3):
        began = time.monotonic()
        assert repo.hive("status", timeout=15).returncode in (0, 1)
        assert time.monotonic() - began < 10
    assert run.wait(timeout=240) == 1, run.output()
    began = time.monotonic()
    status = repo.status_json()
    assert time.monotonic() - began < 10
    by_id = {t["id"]: t for t in status["tasks"]}
    assert by_id["ok"]["state"] == "done" and repo.file_on_main("ok.txt") == "ok\n"
    for task_id, (_, reason) in TRAPS.items():
        task = by_id[task_id]
        if reason:
            assert task["state"] == "failed", (task_id, task)
            assert reason in task["reason"], (task_id, task["reason"])
            assert repo.file_on_main(f"work-{task_id}.txt") is None, "nothing of it was brought back"
        else:
            assert task["state"] == "done", (task_id, task)
            assert repo.file_on_main(f"work-{task_id}.txt") == "work\n"
    assert by_id["notes-big"]["notes"][-1]["text"] == "still sane"
    assert not [d for d in status["discovered"] if d["plan"] == "h"], "nothing it left was an item"
    stderr = run.output()
    assert "Traceback" not in stderr, stderr
    assert repo.git("status", "--porcelain") == checkout, "nothing of the user's checkout changed"
    assert sorted(p.name for p in home.iterdir()) == homes, "nor of their home"
    # the failures are held for a human, not tried again on the next run
    again = repo.doit(timeout=120)
    assert again.returncode == 1 and "attempt 2" not in again.stderr, again.stderr


def test_a_signal_trap_while_no_run_watches_is_met_by_the_next_run(repo):
    """The trap is found by the start-of-run reconcile and `hive status`, not the watch."""
    repo.configure(sandbox=ON, attempts=1)
    repo.write_plan(
        "h", _script("w", "Wait for the run to go", 'mkfifo "$(dirname "$HIVE_SIGNAL_FILE")/signal.json"; sleep 30')
    )
    run = repo.start_doit()
    signal_dir = Paths(repo.root).signal_dir("h", "w", 1)
    wait_for(lambda: (signal_dir / "signal.json").exists(), timeout=60, what="the FIFO")
    os.killpg(run.pid, signal.SIGKILL)  # the run and its workers die; the script is left running
    run.wait(timeout=30)
    status = repo.hive("status", timeout=15)
    assert "its signal file is a FIFO, not a file" in status.stdout, status.stdout
    again = repo.doit(timeout=120)
    assert again.returncode == 1
    assert "its signal file is a FIFO, not a file" in repo.state("h", "w")["reason"]


def test_a_script_that_finished_while_no_run_watched_is_not_run_again(repo):
    repo.configure(attempts=2)
    repo.write_plan(
        "h",
        _script(
            "s",
            "Finish after the run is gone",
            f"while [ ! -e go ]; do sleep 0.05; done; echo once >> {repo.root}/.hive/fake/ran.txt; echo done > s.txt",
        ),
    )
    run = repo.start_doit()
    worktree = wait_for(lambda: repo.state("h", "s").get("agent_token") and repo.state("h", "s")["worktree"])
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=30)
    (Path(worktree) / "go").write_text("")  # it finishes while no run watches
    exit_file = Paths(repo.root).exit_file("h", "s", 1)
    wait_for(exit_file.exists, timeout=60, what="the script to finish")
    r = repo.doit(timeout=120)
    assert r.returncode == 0, r.stdout
    assert "its script finished (exit 0) in attempt 1 while no run watched" in r.stdout
    assert (repo.root / ".hive" / "fake" / "ran.txt").read_text() == "once\n", "it ran once"
    assert repo.file_on_main("s.txt") == "done\n"
    assert repo.state("h", "s")["attempt"] == 1


PROTECTED = """
### Task a: Rewrite Hive's controls
**Type:** script

```bash
set -e
printf '\\n[sandbox]\\nmode = "off"\\n[notify]\\ncommand = ["touch", "%s"]\\n' "$HOME/notified" >> .hive/config.toml
echo 'open("'"$HOME"'/pwned", "w")' >> dodo.py
mkdir -p plans
printf -- '---\\nstatus: approved\\n---\\n### Task 1: Mine\\n**Type:** script\\n\\n' > plans/x.md
printf -- '```bash\\ntouch "%s/ran"\\n```\\n' "$HOME" >> plans/x.md
git add -f .hive/config.toml dodo.py plans/x.md
git -c user.name=a -c user.email=a@a commit -qm "take over"
```

### Task b: An honest task
**Type:** script

```bash
echo b > b.txt
```
"""


def test_a_change_to_hives_own_files_waits_for_a_human_and_reaches_main_only_when_approved(repo):
    home = Path(os.environ["HOME"])
    repo.configure(sandbox=ON, attempts=1)
    repo.write_plan("p", PROTECTED)
    repo.git("add", "-A")
    repo.git("commit", "-qm", "the plan")
    r = repo.doit("-n", "2")
    assert r.returncode == 1, r.stdout
    st = repo.state("p", "a")
    assert st["state"] == "awaiting_human" and st["resume"] == "held", st
    assert "changes Hive's own files: .hive/config.toml, dodo.py, plans/x.md" in st["reason"]
    assert repo.file_on_main("b.txt") == "b\n", "the task beside it merged"
    assert "pwned" not in (repo.file_on_main("dodo.py") or "") and repo.file_on_main("plans/x.md") is None
    listing = subprocess.run([sys.executable, "-m", "doit", "list"], cwd=repo.root, capture_output=True, text=True)
    assert listing.returncode == 0 and not (home / "pwned").exists(), "nothing of the agent's ran"
    status = repo.hive("status").stdout
    assert "changes Hive's own files" in status and "hive approve p:a" in status, status
    # retry: a new attempt told what to leave alone (a script repeats itself, and is held again)
    assert repo.hive("retry", "p:a").returncode == 0
    repo.doit()
    brief = Paths(repo.root).context_copy("p", "a", 2).read_text()
    assert "held its change for a human" in brief and "changes Hive's own files: .hive/config.toml" in brief
    assert repo.state("p", "a")["state"] == "awaiting_human"
    # approve: merged as it is
    assert repo.hive("approve", "p:a").returncode == 0
    r = repo.doit("p:a")
    assert repo.state("p", "a")["state"] == "done", r.stdout
    assert "pwned" in repo.file_on_main("dodo.py")


def test_a_module_merged_into_the_projects_root_is_never_imported_by_doit_or_hive(repo):
    """doit puts the dodo's folder first on sys.path: a `sqlite3.py` there (doit imports sqlite3
    as it opens its database) ran with the user's rights at every `doit`."""
    marker = repo.root.parent / "shadowed"
    (repo.root / "sqlite3.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (repo.root / "networkx.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    repo.git("add", "-A")
    repo.git("commit", "-qm", "modules named like what doit and Hive import")
    repo.write_plan("p", _script("1", "Anything", "echo x > x.txt"))
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert not marker.exists()


BIG = """
### Task big: Commit a big file
**Type:** script

```bash
set -e
head -c 3000000 /dev/urandom > data.bin
git add data.bin
git -c user.name=a -c user.email=a@a commit -qm "a big file"
```

### Task left: Leave a big file uncommitted
**Type:** script

```bash
head -c 3000000 /dev/urandom > dump.bin
```

### Task small: A small file
**Type:** script

```bash
echo small > small.txt
```
"""


def test_a_file_over_max_file_mb_waits_for_a_human_before_it_reaches_the_repository(repo):
    repo.configure(sandbox=ON, attempts=1)
    config = repo.root / ".hive" / "config.toml"
    config.write_text(config.read_text().replace('main_branch = "main"\n', 'main_branch = "main"\nmax_file_mb = 1\n'))
    repo.write_plan("b", BIG)
    r = repo.doit("-n", "3")
    assert r.returncode == 1, r.stderr
    assert repo.file_on_main("small.txt") == "small\n"
    big, left = repo.state("b", "big"), repo.state("b", "left")
    assert (
        big["state"] == "awaiting_human"
        and "adds files over [merge] max_file_mb = 1: data.bin (3.0 MB)" in big["reason"]
    )
    assert (
        left["state"] == "awaiting_human"
        and "leaves uncommitted files over [merge] max_file_mb = 1: dump.bin" in left["reason"]
    )
    # the sandboxed agent's commit never reached the repository's objects
    blobs = subprocess.run(["git", "count-objects", "-v"], cwd=repo.root, capture_output=True, text=True).stdout
    assert "size-pack: 0" in blobs and int(blobs.split("size: ")[1].split()[0]) < 1000, blobs
    assert repo.hive("approve", "b:big").returncode == 0 and repo.hive("approve", "b:left").returncode == 0
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.git("ls-tree", "main", "data.bin") and repo.git("ls-tree", "main", "dump.bin"), "merged as they are"
