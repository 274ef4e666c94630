"""Issue 23, seed 004: a failure skips only the tasks that wait for it. Plain `doit` keeps
going by default ([execution] keep_going); what waits for a stopped task is skipped, and
`doit list`, `hive status` and the report say what it waits for; the report reaches a
terminal status. `keep_going = false` gives doit's stop-at-the-first-failure."""

from __future__ import annotations

PLAN = """
### Task 1: Schema
fake: signal blocked which database?

### Task 2: Models
**Depends on:** 1
fake: write models.txt m
fake: commit models
fake: signal done

### Task 3: Views
**Depends on:** 2
fake: write views.txt v
fake: commit views
fake: signal done

### Task 4: Docs
fake: write docs.txt d
fake: commit docs
fake: signal done
"""


def test_a_blocked_task_skips_only_what_waits_for_it_and_everyone_says_why(repo):
    repo.write_plan("k", PLAN)
    r = repo.doit()
    assert r.returncode == 1, r.stdout
    assert repo.file_on_main("docs.txt") == "d\n", "the independent task ran despite the blocked one"
    assert repo.starts() == ["k:1", "k:4"] or repo.starts() == ["k:4", "k:1"]
    by_id = {t["id"]: t for t in repo.status_json()["tasks"]}
    assert by_id["2"]["skipped_because"] == ["k:1"] and by_id["3"]["skipped_because"] == ["k:1"]
    assert by_id["2"]["reason"] == "skipped: waits for k:1 (blocked)" and by_id["4"]["skipped_because"] == []
    text = repo.hive("status").stdout
    assert "skipped" in text and "skipped: waits for k:1 (blocked)" in text
    listing = repo.doit("list").stdout
    assert "Views  [skipped: waits for k:1 (blocked)]" in listing
    report = (repo.root / ".hive" / "report.md").read_text()
    assert "**Status:** completed_with_failures" in report
    assert "⏭️ skipped" in report and "skipped: waits for k:1 (blocked)" in report
    assert "**Run time:** " in report and "## Merge commits" in report and "k:4 — Docs" in report
    assert "hive: run finished in " in r.stdout
    assert "— 1 done, 1 blocked, 2 skipped (`hive status`); report: .hive/report.md" in r.stdout


def test_keep_going_false_stops_at_the_first_task_that_does_not_finish(repo):
    repo.configure(extra="")
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text().replace("[execution]\n", "[execution]\nkeep_going = false\n", 1))
    repo.write_plan("k", PLAN)
    assert repo.doit().returncode == 1
    assert repo.starts() == ["k:1"], "Task 1 runs first (critical path) and the run stops there"
