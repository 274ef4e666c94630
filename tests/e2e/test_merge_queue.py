"""The merge queue (issue 25), through real doit runs: checks of finished tasks run at the same
time, each on main plus the tasks queued ahead of it; a task ahead that fails its check has the
ones behind it verified again without it; `[merge] max_checks` caps the checks at once; and
main only ever points at trees whose checks passed (`.hive/verified.jsonl`)."""

from __future__ import annotations

import itertools
import json

from conftest import Repo, assert_finished_exactly_once

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


def main_trees_verified(repo: Repo) -> None:
    """Every commit main moved to by a merge is a tree whose checks passed."""
    verified = {json.loads(line)["tree"] for line in (repo.root / ".hive" / "verified.jsonl").read_text().splitlines()}
    merges = repo.git("log", "--first-parent", "--merges", "--format=%T %s", "main").splitlines()
    assert merges and all(line.split()[0] in verified for line in merges), (merges, verified)


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
