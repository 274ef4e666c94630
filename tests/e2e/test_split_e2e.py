"""`hive plan --split`: a task an agent said is too big is replaced in its plan by the
tasks a (scripted) planner wrote, its dependents wait for all of them, and once the human
approves the plan again `doit` runs them and merges their work."""

from __future__ import annotations

PLAN = """
# Report tool

## Context
Keep it small.

### Task 1: Parser
fake: write parser.txt p
fake: commit the parser
fake: signal done

### Task 2: Parser and printer and exporter
**Depends on:** 1
fake: signal too-big {reason}

### Task 3: Docs
**Depends on:** 1, 2
fake: write docs.txt d
fake: commit the docs
fake: signal done

## Notes
Written by hand; kept as it is.
"""


# what tests/fake_planner.py writes for task 2, without the heading it puts above
SPLIT_SECTIONS = """### Task 2.1: First half
**Depends on:** none

fake: write half1.txt one
fake: commit first half
fake: signal done

### Task 2.2: Second half
**Depends on:** 2.1

fake: write half2.txt two
fake: commit second half
fake: signal done
"""


def _too_big(repo, reason: str = "three tools in one"):
    path = repo.write_plan("r", PLAN.format(reason=reason))
    repo.use_fake_planner()
    r = repo.doit()
    assert r.returncode == 1, r.stderr
    assert repo.state("r", "2")["state"] == "too_big"
    assert repo.state("r", "3")["state"] == "planned", "3 waits for 2"
    return path


def test_a_too_big_task_split_by_the_planner_runs_as_its_parts_once_approved(repo):
    path = _too_big(repo)
    before = path.read_text()
    r = repo.hive("plan", "--split", "r:2")
    assert r.returncode == 0, r.stdout
    assert "plans/r.md: task 2 is now tasks 2.1, 2.2" in r.stdout
    assert "3 now depend on 2.1, 2.2 instead of 2" in r.stdout
    assert "set back to draft" in r.stdout and "hive approve plans/r.md" in r.stdout
    assert "left out 1 lines" in r.stdout, "the planner's '## The split' heading is not put in the plan"
    # the plan as the human wrote it, but for task 2's section, 3's Depends on and the status
    old_section = before[before.index("### Task 2:") : before.index("### Task 3:")]
    expected = (
        before.replace("status: approved", "status: draft", 1)
        .replace(old_section, SPLIT_SECTIONS + "\n")
        .replace("### Task 3: Docs\n**Depends on:** 1, 2\n", "### Task 3: Docs\n**Depends on:** 1, 2.1, 2.2\n")
    )
    assert path.read_text() == expected
    brief = next((repo.root / ".hive" / "planning").glob("split-r-2-*[0-9a-f].md")).read_text()
    assert "three tools in one" in brief and "fake: signal too-big" in brief, "the reason and the task's text"
    draft = repo.doit()
    assert "hive approve plans/" in draft.stdout and repo.starts() == ["r:1", "r:2"], "a draft plan does not run"
    a = repo.hive("approve", "plans/r.md")
    assert a.returncode == 0, a.stderr
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert repo.starts() == ["r:1", "r:2", "r:2.1", "r:2.2", "r:3"]
    for key in ("2.1", "2.2", "3"):
        assert repo.state("r", key)["state"] == "done"
    for name in ("parser.txt", "half1.txt", "half2.txt", "docs.txt"):
        assert repo.file_on_main(name) is not None, name
    log = repo.main_log()  # newest first
    assert log.index("the docs") < log.index("second half") < log.index("first half")


REFUSED = """
### Task 1: Small
fake: signal done

### Task m: Misnumbered
fake: signal too-big misnumbered

### Task b: Broken
fake: signal too-big broken

### Task s: Silent
fake: signal too-big silent
"""


def test_split_refuses_what_it_cannot_split_and_never_leaves_a_broken_plan(repo):
    path = repo.write_plan("q", REFUSED)
    repo.use_fake_planner()
    assert repo.doit("-c").returncode == 1
    before = path.read_bytes()

    def refused(*args: str) -> str:
        r = repo.hive("plan", *args)
        assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
        assert path.read_bytes() == before, "the plan is untouched"
        return r.stderr

    assert "needs a goal or --split, not both" in refused()
    assert "needs a goal or --split, not both" in refused("Add login", "--split", "q:m")
    assert "no plan named 'nope'" in refused("--split", "nope:m")
    assert "plan q has no task '9'" in refused("--split", "q:9")
    assert "q:1 is done: `hive plan --split` is for a task an agent said is too big" in refused("--split", "q:1")

    err = refused("--split", "q:s")
    assert "the planning agent exited with status 0 without writing .hive/planning/split-q-s-" in err
    assert "| fake planner: nothing to split" in err

    err = refused("--split", "q:b")
    assert "depends on unknown task '99'" in err and "the plan with task b split is not valid" in err
    assert "plans/q.md is unchanged" in err
    proposed = next((repo.root / ".hive" / "planning").glob("split-q-b-*-proposed.md"))
    assert "### Task b.1: First half" in proposed.read_text(), "the plan it would have been, to look at"

    err = refused("--split", "q:m")
    assert "the new tasks are numbered 7, 8; the tasks that replace task m must be numbered m.1, m.2" in err
    tasks = next((repo.root / ".hive" / "planning").glob("split-q-m-*-tasks.md"))
    assert f"fix the tasks in {tasks.relative_to(repo.root)} and run `hive plan --split q:m` again" in err
    # the human fixes the planner's tasks; the next --split puts them in without a new planner
    tasks.write_text(
        tasks.read_text().replace("Task 7:", "Task m.1:").replace("Task 8:", "Task m.2:").replace(":** 7", ":** m.1")
    )
    r = repo.hive("plan", "--split", "q:m")
    assert r.returncode == 0, r.stderr
    assert "putting the tasks already written in" in r.stdout and "task m is now tasks m.1, m.2" in r.stdout
    assert "### Task m.1: First half" in path.read_text() and not tasks.exists()
    assert "planning agent (fakeplanner) started" not in r.stdout, "no planner was started again"
