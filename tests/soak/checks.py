"""The invariants checked after a trial's final run, each reading what a user would see: git's
history and status, `hive status --json`, the runs' exit codes and output, what is left running."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from hive.store import names

from .output import tail
from .records import read_events, read_spawns, read_state
from .runs import RUN_TIMEOUT, STOP_TIMEOUT
from .sandbox import Sandbox, SoakError
from .scenario import PLAN, PROCESS_FAULTS, failed_check_marker

EXPECTED_EXIT = {"sigterm": 143, "sigint": 130, "sigint-group": 130}
LINGER_S = 3.0  # how long processes may take to go away after the final run


def run_checks(sb: Sandbox) -> None:
    """Every invariant, after the final run."""
    checks = (
        check_runs,
        check_tasks_on_main,
        check_verified_main,
        check_failed_check,
        check_no_respawn,
        check_user_work,
        check_status,
        check_leftovers,
    )
    for check in checks:
        try:
            check(sb)
        except (SoakError, OSError, ValueError) as e:  # one check that cannot read must not hide the others
            sb.findings.add("harness error (not a Hive finding)", f"{check.__name__}: {e!r}")


def check_runs(sb: Sandbox) -> None:
    """Each run ended as its faults allow: 130 after SIGINT, 143 after SIGTERM, 0 with no fault, never hung."""
    for rec in sb.runs:
        if rec.killed == "hung":
            sb.findings.add(
                f"hang: a run was still going after {RUN_TIMEOUT:.0f}s",
                f"run {rec.label}; its processes: {' | '.join(rec.stuck)}\n{rec.stacks}".rstrip(),
            )
        elif rec.killed == "slow-stop":
            sb.findings.add(
                f"{rec.stop_signal}: doit did not stop within {STOP_TIMEOUT:.0f}s",
                f"run {rec.label}; its processes: {' | '.join(rec.stuck)}\n{rec.stacks}".rstrip(),
            )
        elif rec.died_before_hive():
            sb.notes.append(
                f"run {rec.label}: {rec.stop_signal} arrived while doit was starting, before it loaded Hive "
                f"(exit {rec.code})"
            )
        elif rec.stop_signal and rec.code != EXPECTED_EXIT[rec.stop_signal] and rec.met_the_end():
            sb.notes.append(f"run {rec.label}: {rec.stop_signal} arrived as the run ended (exit {rec.code})")
        elif rec.stop_signal and rec.code != EXPECTED_EXIT[rec.stop_signal]:
            how = f"killed by signal {-rec.code}" if rec.code is not None and rec.code < 0 else f"exit {rec.code}"
            sb.findings.add(
                f"{rec.stop_signal}: doit {how}, expected exit {EXPECTED_EXIT[rec.stop_signal]}", f"run {rec.label}"
            )
        elif not rec.faults and not rec.killed and rec.code != 0:
            sb.findings.add(
                "a run with no fault injected exited non-zero",
                f"run {rec.label} exit {rec.code}: {tail(rec.output(), 3)[-300:]}",
            )


def check_tasks_on_main(sb: Sandbox) -> None:
    """Each task's work and its merge commit on main exactly once, with the file it wrote — in
    pull-request mode on the forge's main, merged through one PR (check_pull_requests)."""
    if sb.forge is not None:
        check_pull_requests(sb)
    where = str(sb.forge.remote) if sb.forge is not None else str(sb.root)
    subjects = sb.git_out("-C", where, "log", "--format=%s", "main").splitlines()
    merges = sb.git_out("-C", where, "log", "--first-parent", "--format=%s", "main").splitlines()
    for t in sb.sc.tasks:
        work = subjects.count(t.message)
        made = f"hive: merge {t.key} —" if sb.forge is None else f"({t.key}, #"
        merged = sum(1 for s in merges if (s.startswith(made) if sb.forge is None else made in s))
        content = sb.git("-C", where, "show", f"main:{t.file}")
        if work != 1:
            sb.findings.add(
                "a task's work is not on main exactly once", f"{t.key}: `{t.message}` {work} times in git log main"
            )
        if merged != 1:
            sb.findings.add(
                "a task has not exactly one merge commit on main",
                f"{t.key}: {merged} `{made}` on main's first-parent history",
            )
        if content.returncode != 0 or content.stdout != t.written + "\n":
            found = repr(content.stdout.strip()) if content.returncode == 0 else "missing"
            sb.findings.add("a task's file on main is wrong", f"{t.file} is {found}, expected {t.written!r}")


def check_pull_requests(sb: Sandbox) -> None:
    """Pull-request mode: one PR per task, opened once and merged once through the API, and
    nothing the forge was asked that GitHub would not have answered."""
    forge = sb.forge
    assert forge is not None
    for problem in forge.problems:
        sb.findings.add("a request the forge does not know, or an answer GitHub would not give", problem)
    pulls = [i for i in forge.issues.values() if i.pull is not None]
    for t in sb.sc.tasks:
        head = names.forge_branch(PLAN, t.id)
        mine = [i for i in pulls if i.pull is not None and i.pull.head == head]
        if len(mine) != 1 or mine[0].pull is None or mine[0].pull.merged_at is None:
            states = [(i.number, i.state, bool(i.pull and i.pull.merged_at)) for i in mine]
            sb.findings.add("a task has not exactly one merged pull request", f"{t.key}: {states}")
            continue
        merges = [c for c in forge.calls if c.method == "PUT" and c.path.endswith(f"/pulls/{mine[0].number}/merge")]
        if sum(c.status == 200 for c in merges) != 1:
            sb.findings.add(
                "a pull request was not merged exactly once",
                f"{t.key}: PR #{mine[0].number}, merge calls answered {[c.status for c in merges]}",
            )
    opened = sum(1 for c in forge.calls if c.method == "POST" and c.path.endswith("/pulls") and c.status == 201)
    if opened != len(sb.sc.tasks):
        sb.findings.add("not one pull request opened per task", f"{opened} opened for {len(sb.sc.tasks)} tasks")


def check_verified_main(sb: Sandbox) -> None:
    """Every commit a merge of a task with a Verify moved main to is a tree whose checks passed
    (the merge queue records each in .hive/verified.jsonl): nothing unverified reached main.
    A commit main pointed to, not one on its history: a batch's members are never main."""
    checked = {t.key for t in sb.sc.tasks if t.verify is not None}
    if not checked or sb.forge is not None:  # pull-request mode: main moves on the forge, merged there
        return
    path = sb.root / ".hive" / "verified.jsonl"
    verified = {json.loads(line)["tree"] for line in path.read_text().splitlines()} if path.exists() else set()
    # every commit main pointed to (its reflog): a batch moves main over its members' merge
    # commits, which are on its first-parent line but were never main, nor verified alone
    for line in sb.git_out("log", "--walk-reflogs", "--format=%T %s", "refs/heads/main").splitlines():
        tree, _, subject = line.partition(" ")
        key = subject.removeprefix("hive: merge ").split(" —")[0] if subject.startswith("hive: merge ") else ""
        if key in checked and tree not in verified:
            sb.findings.add(
                "main moved to a tree whose checks did not pass", f"{key}: {subject[:80]} (tree {tree[:10]})"
            )


def check_failed_check(sb: Sandbox) -> None:
    """The task whose check fails once did fail it once (its attempt ended `check_failed`), and
    was merged after (check_tasks_on_main)."""
    task = next((t for t in sb.sc.tasks if sb.sc.fails_its_first_check(t)), None)
    if task is None:
        return
    outcomes = [h.get("outcome") for h in read_state(sb.root, task.id).get("history", [])]
    # a kill or signal may cut the run short between the failure and its record: the next run
    # then verifies the same tree again (and it passes), which is right
    cut = any(f.kind in PROCESS_FAULTS for r in sb.sc.rounds for f in r.faults)
    if not failed_check_marker(sb.root, task).exists() or ("check_failed" not in outcomes and not cut):
        sb.findings.add("the check that fails once did not, or was not recorded", f"{task.key}: {outcomes}")
    sb.notes.append(f"check-fail:{task.key} failed its first check ({outcomes})")


def check_no_respawn(sb: Sandbox) -> None:
    """No agent of a task starts after that task was recorded done (merged), and
    no attempt's agent starts twice."""
    done_at: dict[str, float] = {}
    for e in read_events(sb.root):
        if e.get("to") == "done":
            done_at.setdefault(e["task"], e["time"])
    seen: Counter[tuple[str, int]] = Counter()
    for task, attempt, at, event in read_spawns(sb.spawn_log):
        if event != "start":
            continue
        seen[(task, attempt)] += 1
        if task in done_at and at > done_at[task]:
            sb.findings.add(
                "an agent was spawned for a task already merged",
                f"{task} attempt {attempt} started at {at:.3f}, merged at {done_at[task]:.3f}",
            )
    for (task, attempt), count in seen.items():
        if count > 1:
            sb.findings.add(
                "one attempt's agent was started more than once", f"{task} attempt {attempt}: {count} starts"
            )


def check_user_work(sb: Sandbox) -> None:
    """The user's edits, untracked file and own commits as the user left them, never committed by Hive."""
    u = sb.user
    assert u is not None
    lost = "the user's work in the main checkout was touched"
    if (sb.root / "user.txt").read_bytes() != u.dirty:
        sb.findings.add(lost, f"user.txt (uncommitted edit) is now {(sb.root / 'user.txt').read_bytes()!r}")
    notes = sb.root / "scratch" / "notes.txt"
    if not notes.exists() or notes.read_bytes() != u.notes:
        sb.findings.add(lost, "scratch/notes.txt (untracked) changed or is gone")
    committed = "the user's uncommitted work was committed"
    if sb.git("rev-parse", "main:user.txt").stdout.strip() != u.committed_blob:
        sb.findings.add(committed, "user.txt's content on main is not the one the user committed")
    for marker, what in zip(u.markers, ("user.txt's uncommitted edit", "scratch/notes.txt"), strict=True):
        hits = log_everywhere(sb, "-S", marker)
        if hits:
            sb.findings.add(committed, f"{what} is in: {tail(hits, 3)}")
    if log_everywhere(sb, "--", "scratch"):
        sb.findings.add(committed, "a commit touches scratch/")
    subjects = sb.git_out("log", "--format=%s", "main").splitlines()
    for s in u.commits:
        if subjects.count(s) != 1:
            sb.findings.add(
                "a commit the user made during a run is not on main exactly once",
                f"{s!r}: {subjects.count(s)} times",
            )
    head = sb.git("symbolic-ref", "HEAD").stdout.strip()
    if head != "refs/heads/main":
        sb.findings.add("the main checkout is no longer on main", f"HEAD is {head or 'detached'}")
    status = sb.git_out("status", "--porcelain")
    if status != u.status:
        sb.findings.add("the main checkout's git status changed", f"before {u.status!r}, after {status!r}")


def log_everywhere(sb: Sandbox, *args: str) -> str:
    """`git log --all` (every branch, ref and worktree HEAD); a half-made worktree
    whose HEAD is still 000… makes that fail, and then every ref but HEADs is read."""
    r = sb.git("log", "--all", "--format=%h %s", *args)
    if r.returncode == 0:
        return r.stdout.strip()
    return sb.git_out("log", "--branches", "--tags", "--glob=refs/hive/*", "--format=%h %s", *args)


def check_status(sb: Sandbox) -> None:
    """`hive status --json`: every task done, none in progress."""
    r = sb.hive("status", "--json")
    if r.returncode != 0:
        sb.findings.add("hive status --json failed", f"exit {r.returncode}: {tail(r.stderr, 3)}")
        return
    data = json.loads(r.stdout)
    states = {f"{t['plan']}:{t['id']}": t for t in data["tasks"]}
    for t in sb.sc.tasks:
        got = states.get(t.key, {})
        if got.get("state") != "done":
            sb.findings.add("a task is not done", f"{t.key} is {got.get('state')!r}: {_gist(got.get('reason', ''))}")
    if data["counts"].get("in_progress", 0) != 0:
        sb.findings.add(
            "hive status counts tasks in_progress after the final run",
            f"{data['counts']['in_progress']} in_progress",
        )


def check_spare(sb: Sandbox, path: Path, block: str) -> None:
    """A spare checkout (`[worktrees] reuse`) is whole, unlocked, detached at a commit main holds
    (in pull-request mode, the forge's main as last fetched), and holds no change of its own."""
    if "\nlocked" in block or "\ndetached" not in block:
        sb.findings.add("a spare checkout left locked or on a branch", block.replace("\n", " "))
    status = sb.git("status", "--porcelain", cwd=path)
    if status.returncode != 0 or status.stdout.strip():
        sb.findings.add("a spare checkout holds changes", f"{path.name}: {tail(status.stdout + status.stderr, 3)}")
    main = "refs/remotes/origin/main" if sb.forge is not None else "main"  # pull-request mode: the forge's
    if sb.git("merge-base", "--is-ancestor", "HEAD", main, cwd=path).returncode != 0:
        sb.findings.add("a spare checkout holds commits main has not", path.name)


def check_leftovers(sb: Sandbox) -> None:
    """Nothing left behind: worktrees, branches, git locks, tmux sessions, Hive's error log, processes."""
    listing = sb.git("worktree", "list", "--porcelain")
    if listing.returncode != 0:  # what the user would see too: not the harness's fault
        sb.findings.add("`git worktree list` fails in the repository", tail(listing.stderr, 2))
    for block in listing.stdout.strip().split("\n\n")[1:]:
        path = Path(block.splitlines()[0].split(" ", 1)[1])
        name = path.name
        if "\nprunable" in block:  # its directory is gone, git still lists it
            sb.findings.add("a stale (prunable) worktree entry left", name)
        elif names.is_spare(name):  # a worker's checkout for its next task: nothing of its own
            check_spare(sb, path, block)
        else:
            sb.findings.add("worktrees left", name)
    branches = [b for b in sb.git_out("branch", "--format=%(refname:short)").split() if b.startswith("hive/")]
    if branches:
        sb.findings.add("hive/* branches left", ", ".join(branches))
    locks = sorted(str(p.relative_to(sb.root)) for p in (sb.root / ".git").rglob("*.lock"))
    if locks:
        sb.findings.add("git lock files left", ", ".join(locks))
    sessions = sb.tmux_sessions()
    if sessions:
        sb.findings.add("tmux sessions left", ", ".join(sessions))
    debug = sb.root / ".hive" / "hive.log"
    if debug.exists():
        logged = debug.read_text(errors="replace")
        titles = [line[4:120] for line in logged.splitlines() if line.startswith("--- ")]
        said = f"{len(logged)} bytes; entries: {'; '.join(titles[:3]) or 'none'}; last line: {tail(logged, 1)[:200]}"
        sb.findings.add(".hive/hive.log (Hive's internal-error log) exists", said)
    deadline = time.monotonic() + LINGER_S
    while (procs := sb.processes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid, cmd in procs:
        sb.findings.add("processes left after the final run", f"{pid} {cmd[:120]}")
    sb.check_executor()


def _gist(reason: str) -> str:
    """A reason whole, or its start and its end: a failed command's reason names the command
    first and says what it printed last (seed 20016's tmux error was cut off)."""
    text = " | ".join(reason.strip().splitlines())
    return text if len(text) <= 360 else f"{text[:120]} … {text[-240:]}"
