"""The merge queue (issue 25), through real doit runs: checks of finished tasks run at the same
time, each on main plus the tasks queued ahead of it; a task ahead that fails its check has the
ones behind it verified again without it; `[merge] max_checks` caps the checks at once;
`[merge] batch` verifies the tasks that finish meanwhile together, and bisects a batch that
fails; and main only ever points at trees whose checks passed (`.hive/verified.jsonl`)."""

from __future__ import annotations

import itertools
import json
import signal

import pytest
from conftest import Repo, assert_finished_exactly_once, wait_for

from hive.store import queue

# a check that records when it ran (in .hive/fake, which checks and agents may write)
CHECK = (
    'echo "{t} start $(date +%s.%N)" >> .hive-log; sleep {secs}; echo "{t} end $(date +%s.%N)" >> .hive-log'
).replace(".hive-log", "{root}/.hive/fake/checks.log")


def plan(repo: Repo, tasks: str, secs: float) -> str:
    body = ""
    for t in tasks:
        body += f"\n### Task {t}: Part {t}\n**Verify:** {CHECK.format(t=t, secs=secs, root=repo.root)}\n"
        body += f"fake: write {t}.txt {t}\nfake: commit part {t}\nfake: signal done\n"
    return body


def check_intervals(repo: Repo) -> dict[str, list[tuple[float, float]]]:
    """task -> (start, end) of each run of its check."""
    runs: dict[str, list[tuple[float, float]]] = {}
    started: dict[str, float] = {}
    for line in (repo.root / ".hive" / "fake" / "checks.log").read_text().splitlines():
        task, what, at = line.split()
        if what == "start":
            started[task] = float(at)
        else:
            runs.setdefault(task, []).append((started.pop(task), float(at)))
    return runs


def main_trees_verified(repo: Repo) -> list[str]:
    """Every commit main moved to by a merge is a tree whose checks passed. Read from main's
    reflog — each place main pointed at — not its history: a batch moves main over its members'
    own merge commits at once, and those trees were never verified alone. The merges main moved
    to, oldest first."""
    verified = {json.loads(line)["tree"] for line in (repo.root / ".hive" / "verified.jsonl").read_text().splitlines()}
    moves = [line.split(" ", 2) for line in repo.git("log", "-g", "--format=%T %H %s", "main").splitlines()]
    merges = [(tree, commit) for tree, commit, subject in moves if subject.startswith("hive: merge ")]
    assert merges and all(tree in verified for tree, _ in merges), (merges, verified)
    return [commit for _, commit in reversed(merges)]


def checked_events(repo: Repo, key: str) -> list[dict]:
    return [e for e in repo.events() if e["task"] == key and e["event"] == "checked"]


def test_checks_of_finished_tasks_run_at_the_same_time_and_main_gets_only_verified_trees(repo: Repo):
    repo.configure()
    repo.write_plan("p", plan(repo, "abc", 3))
    r = repo.doit("-n", "3", timeout=240)
    assert r.returncode == 0, r.stderr
    assert_finished_exactly_once(repo, {f"p:{t}": f"part {t}" for t in "abc"})
    runs = check_intervals(repo)
    assert sorted(runs) == ["a", "b", "c"]
    first = [spans[0] for spans in runs.values()]
    overlapping = sum(1 for s, e in first if any(s2 < e and s < e2 for s2, e2 in first if (s2, e2) != (s, e)))
    assert overlapping >= 2, f"the checks ran one after another: {runs}"
    main_trees_verified(repo)
    # each check is recorded with the base it ran on and how long it took
    for t in "abc":
        events = checked_events(repo, f"p:{t}")
        assert events and all(e["passed"] and e["seconds"] >= 3 and len(e["base"]) >= 40 for e in events), events


def test_a_task_ahead_that_fails_its_check_has_the_one_behind_verified_again_without_it(repo: Repo):
    repo.configure(attempts=1)
    gate = repo.root / ".hive" / "fake" / "a-checking"
    repo.write_plan(
        "p",
        f"""
### Task a: Breaks
**Verify:** touch {gate}; sleep 3; exit 1
fake: write a.txt a
fake: commit part a
fake: signal done

### Task b: Fine
**Verify:** {CHECK.format(t="b", secs=0.2, root=repo.root)}
fake: wait-for .hive/fake/a-checking
fake: write b.txt b
fake: commit part b
fake: signal done
""",
    )
    r = repo.doit("-n", "2", timeout=240)
    assert r.returncode != 0  # a failed
    assert repo.state("p", "a")["state"] == "failed" and "Verify failed (exit 1)" in repo.state("p", "a")["reason"]
    assert repo.state("p", "b")["state"] == "done"
    assert repo.file_on_main("a.txt") is None and repo.file_on_main("b.txt") == "b\n"
    events = checked_events(repo, "p:b")
    assert len(events) == 2 and events[0]["base"] != events[1]["base"], events  # first on top of a, then without
    assert events[1]["base"] == repo.git("rev-parse", "main^1")  # what main was when b was published
    assert len(check_intervals(repo)["b"]) == 2
    runs = repo.state("p", "b")["checks"]
    assert [(r["base"], r["passed"]) for r in runs] == [(e["base"], True) for e in events]
    report = (repo.root / ".hive" / "report.md").read_text()
    assert "## Tasks verified more than once" in report
    assert f"- p:b: passed on {events[0]['base'][:10]} in" in report, report
    main_trees_verified(repo)
    assert json.loads((repo.root / ".hive" / "queue.json").read_text())["entries"] == []


def test_max_checks_caps_the_checks_at_once(repo: Repo):
    repo.configure(extra="")
    config = repo.root / ".hive" / "config.toml"
    config.write_text(config.read_text().replace("[merge]\n", "[merge]\nmax_checks = 1\n"))
    repo.write_plan("p", plan(repo, "ab", 1.5))
    r = repo.doit("-n", "2", timeout=240)
    assert r.returncode == 0, r.stderr
    assert_finished_exactly_once(repo, {"p:a": "part a", "p:b": "part b"})
    spans = sorted(span for runs in check_intervals(repo).values() for span in runs)
    assert all(end <= nxt for (_, end), (nxt, _) in itertools.pairwise(spans)), f"checks overlapped: {spans}"
    main_trees_verified(repo)


# --- batches ([merge] batch) ------------------------------------------------------------------

# A check that says it started, then waits for the test's go: while it runs, the other tasks finish
GATED = (
    'echo "$HIVE_TASK" >> {root}/.hive/fake/checks.log; touch {root}/.hive/fake/checking; '
    "while [ ! -e {root}/.hive/fake/go ]; do sleep 0.05; done"
)


def batched(repo: Repo, attempts: int = 2, test_command: str = "") -> None:
    """Batches of up to 4, one check at a time, five workers."""
    tests = f"require_tests = true\ntest_command = '{test_command}'\n" if test_command else ""
    repo.configure(attempts=attempts, extra=f"batch = 4\nmax_checks = 1\n{tests}\n[parallel]\nmax_workers = 5\n")


def five_tasks(verify: dict[str, str]) -> str:
    """p:a, then p:b..p:e, which finish once p:a's check runs (each with its `verify`, if any)."""
    body = ""
    for t in "abcde":
        body += f"\n### Task {t}: Part {t}\n" + (f"**Verify:** {verify[t]}\n" if t in verify else "")
        body += "fake: wait-for .hive/fake/checking\n" if t != "a" else ""
        body += f"fake: write {t}.txt {t}\nfake: commit part {t}\nfake: signal done\n"
    return body


def gathered(repo: Repo) -> list[str]:
    """The batch p:b..p:e gathered into behind p:a's check, in queue order ([] until it has)."""
    entries = queue.regroup(queue.load(repo.root / ".hive" / "queue.json"))
    groups = [[e.key for e in g] for g in queue.groups(entries) if all(e.built for e in g)]
    return groups[1] if [len(g) for g in groups] == [1, 4] else []


def check_runs(repo: Repo) -> list[dict]:
    """Every `checked` event, oldest first."""
    return [e for e in repo.events() if e["event"] == "checked"]


def test_tasks_that_finish_while_a_check_runs_are_verified_together_by_one_run(repo: Repo):
    batched(repo, test_command=GATED.format(root=repo.root))
    repo.write_plan("p", five_tasks({}))
    run = repo.start_doit("-n", "5")
    batch = wait_for(lambda: gathered(repo), timeout=90, what="p:b..p:e to gather behind p:a's check")
    repo.go()
    assert run.wait() == 0, run.output()
    assert_finished_exactly_once(repo, {f"p:{t}": f"part {t}" for t in "abcde"})
    runs = (repo.root / ".hive" / "fake" / "checks.log").read_text().split()
    assert runs == ["p:a", batch[-1]], "p:a's test_command, then the batch's, once, run by its last task"
    checked = check_runs(repo)
    assert [(e["task"], e.get("batch")) for e in checked] == [("p:a", None), (batch[-1], batch)]
    assert checked[1]["base"] == repo.state("p", "a")["merge_commit"], "a batch's base is its first task's"
    # main moved twice: to p:a's merge, then over the batch's members to its leader's merge
    moves = main_trees_verified(repo)
    assert moves == [repo.state("p", "a")["merge_commit"], repo.state(*batch[-1].split(":"))["merge_commit"]]
    for key in batch:  # each task keeps its own merge commit (on main's first-parent line) and files
        st = repo.state(*key.split(":"))
        assert st["files"] == [f"{key[2:]}.txt"]
        assert repo.git("log", "-1", "--format=%s", st["merge_commit"]).startswith(f"hive: merge {key}")
        assert repo.git("merge-base", "--is-ancestor", st["merge_commit"], "main") == ""
    report = (repo.root / ".hive" / "report.md").read_text()
    assert "Tasks verified more than once" not in report, report


def test_a_batch_that_fails_is_bisected_the_culprit_fails_and_the_rest_reach_main(repo: Repo):
    batched(repo, attempts=1)
    repo.write_plan(
        "p", five_tasks({"a": GATED.format(root=repo.root), "b": "true", "c": "exit 1", "d": "true", "e": "true"})
    )
    run = repo.start_doit("-n", "5")
    batch = wait_for(lambda: gathered(repo), timeout=90, what="p:b..p:e to gather behind p:a's check")
    repo.go()
    assert run.wait() != 0, run.output()  # the culprit failed
    st = repo.state("p", "c")
    assert st["state"] == "failed" and st["reason"] == "Verify failed (exit 1): exit 1", st["reason"]
    for t in "abde":  # (the culprit's worktree is kept for its next attempt)
        assert repo.state("p", t)["state"] == "done" and repo.main_log().count(f"part {t}") == 1
        assert repo.file_on_main(f"{t}.txt") == f"{t}\n"
    assert repo.file_on_main("c.txt") is None
    runs = check_runs(repo)[1:]  # after p:a's
    assert runs[0]["batch"] == batch and not runs[0]["passed"], runs
    # one run for the batch, then halves: far fewer than the batch's run and one for each task
    assert 2 <= len(runs) <= len(batch), [(e["task"], e.get("batch"), e["passed"]) for e in runs]
    assert [e["task"] for e in runs if not e["passed"]][-1] == "p:c", "the culprit failed alone at last"
    main_trees_verified(repo)
    # the batch's run is its leader's, with the tasks it verified; the report names them
    assert repo.state(*batch[-1].split(":"))["checks"][0]["batch"] == batch
    report = (repo.root / ".hive" / "report.md").read_text()
    twice = [e["task"] for e in runs if sum(r["task"] == e["task"] for r in runs) > 1]
    assert not twice or (f"- {twice[0]}: failed on" in report and "(a batch of" in report), report
    assert json.loads((repo.root / ".hive" / "queue.json").read_text())["entries"] == []


@pytest.mark.parametrize("point", ["batch-checking", "batch-published"])
def test_kill9_in_a_batch_loses_and_duplicates_nothing(repo: Repo, point: str):
    batched(repo, test_command=GATED.format(root=repo.root))
    repo.write_plan("p", five_tasks({}))
    crashed = repo.start_doit("-n", "5", env={"HIVE_FAULT": point})
    wait_for(lambda: gathered(repo), timeout=90, what="p:b..p:e to gather behind p:a's check")
    repo.go()
    assert crashed.wait() == -signal.SIGKILL, crashed.output()
    r = repo.doit("-n", "5", timeout=120)
    assert r.returncode == 0, r.stderr
    assert_finished_exactly_once(repo, {f"p:{t}": f"part {t}" for t in "abcde"})
    for t in "abcde":
        st = repo.state("p", t)
        assert st["files"] == [f"{t}.txt"], "the files merged are known even after a crash"
        assert repo.git("log", "-1", "--format=%s", st["merge_commit"]).startswith(f"hive: merge p:{t}")
        assert repo.starts(f"p:{t}") == [f"p:{t}"], "its agent ran once"
    main_trees_verified(repo)
    assert len([m for m in repo.main_log() if m.startswith("hive: merge ")]) == 5


def test_a_batch_whose_leader_is_gone_is_led_by_the_last_one_left_and_no_one_waits_for_it(repo: Repo):
    batched(repo, test_command=GATED.format(root=repo.root))
    repo.write_plan("p", five_tasks({}))
    crashed = repo.start_doit("-n", "5", env={"HIVE_FAULT": "batch-checking"})
    batch = wait_for(lambda: gathered(repo), timeout=90, what="p:b..p:e to gather behind p:a's check")
    repo.go()
    assert crashed.wait() == -signal.SIGKILL, crashed.output()  # as the batch's run began
    leader, members = batch[-1], batch[:-1]
    r = repo.doit("-n", "5", *members, timeout=120)  # the leader's task does not run: its entry goes
    assert r.returncode == 0, r.stderr
    for key in members:
        st = repo.state(*key.split(":"))
        assert st["state"] == "done" and st["files"] == [f"{key[2:]}.txt"], st
    assert repo.state(*leader.split(":"))["state"] == "in_progress"
    r = repo.doit("-n", "5", timeout=120)
    assert r.returncode == 0, r.stderr
    assert_finished_exactly_once(repo, {f"p:{t}": f"part {t}" for t in "abcde"})
    main_trees_verified(repo)
