"""Issue 39: work is reviewed before it merges — a reviewer agent (`**Review:** <profile>`) reads
the merged result once its checks pass, and its words, or a human's (`hive changes plan:ID`),
reach the author's next attempt. Through real `doit`, tmux and the sandbox, with the fake agent
as author and as reviewer (`fake-review@R:` directives, R its round)."""

from __future__ import annotations

import os
import signal

from conftest import wait_for

REVIEWED = """
### Task 1: Write the greeting
**Review:** fake
**Verify:** test -s hello.txt
fake@1: write hello.txt hello
fake@1: commit first try
fake@2: write hello.txt Hello, world
fake@2: commit as the review asked
fake: dump-context
fake: signal done
fake-review@1: signal changes "Say Hello, world: capitalised, with a comma."
fake-review@2: signal done "It says what the task asks."

### Task 2: Not reviewed
**Review:** none
fake: write other.txt o
fake: commit other
fake: signal done
"""


def test_a_reviewer_asks_for_a_change_the_author_makes_it_and_the_reviewed_tree_merges(repo):
    repo.write_plan("r", REVIEWED, front="review: fake\n")
    r = repo.doit("-n", "2")
    assert r.returncode == 0, r.stdout + repo.hive("logs", "r:1").stdout
    assert repo.file_on_main("hello.txt") == "Hello, world\n", "the tree its second review approved"
    assert repo.file_on_main("other.txt") == "o\n"
    st = repo.state("r", "1")
    assert st["attempt"] == 2 and st["state"] == "done"
    assert [(v["round"], v["attempt"], v["verdict"], v["text"]) for v in st["reviews"]] == [
        (1, 1, "changes", "Say Hello, world: capitalised, with a comma."),
        (2, 2, "approved", "It says what the task asks."),
    ]
    assert repo.state("r", "2").get("reviews", []) == [], "Review: none"
    brief = (repo.root / ".hive" / "fake" / "context-r_1-a2.md").read_text()
    assert "## The review of your last attempt — address it first" in brief
    assert "Say Hello, world: capitalised, with a comma." in brief
    reviewed = [e for e in repo.events() if e.get("event") == "reviewed"]
    assert [e["verdict"] for e in reviewed] == ["changes", "approved"]
    assert all(e["reviewer"] == "fake" for e in reviewed)
    assert "review 1 by fake: changes" in r.stdout and "review 2 by fake: approved" in r.stdout
    first_parents = repo.git("log", "--first-parent", "--format=%s", "main").splitlines()
    assert sum("hive: merge r:1" in s for s in first_parents) == 1, "merged once, reviewed"
    shown = repo.hive("status").stdout
    assert "review 2 by fake: approved" in shown, shown
    assert "review" in repo.hive("timeline").stdout
    report = (repo.root / ".hive" / "report.md").read_text()
    assert "- r:1 review 1 by fake: changes — Say Hello, world: capitalised, with a comma." in report
    assert "- r:1 review 2 by fake: approved — It says what the task asks." in report


HUMAN = """
### Task 1: Indent the file
fake: dump-context
fake: write indented.txt "  with spaces"
fake: commit-once spaces
fake: signal done
"""


def test_a_humans_changes_reach_the_next_brief(repo):
    repo.configure(extra="")
    config = repo.root / ".hive" / "config.toml"
    config.write_text(
        config.read_text().replace('main_branch = "main"\n', 'main_branch = "main"\nauto_merge = false\n')
    )
    repo.write_plan("h", HUMAN)
    assert repo.doit().returncode == 1
    assert repo.state("h", "1")["state"] == "awaiting_human"
    said = repo.hive("changes", "h:1", "--reason", "Use tabs, not spaces.")
    assert said.returncode == 0, said.stderr
    assert "h:1: sent back to its author with your review" in said.stdout
    again = repo.doit()
    assert again.returncode == 1, again.stderr  # its second attempt waits for a review again
    brief = (repo.root / ".hive" / "fake" / "context-h_1-a2.md").read_text()
    assert "a human read the change and asked for changes" in brief and "Use tabs, not spaces." in brief
    reviews = repo.state("h", "1")["reviews"]
    assert [(v["by"], v["verdict"], v["text"]) for v in reviews] == [("human", "changes", "Use tabs, not spaces.")]
    assert repo.hive("changes", "h:1", "--reason", "Tabs everywhere.").returncode == 0  # its second attempt's
    wrong = repo.hive("changes", "h:1", "--reason", "again")  # planned now: nothing to review
    assert wrong.returncode == 3 and "h:1 is planned, not waiting for a review of its change" in wrong.stderr
    reviewer = repo.hive("changes", "--reason", "no task named")
    assert reviewer.returncode == 3 and "no review's session" in reviewer.stderr


STOPPED = """
### Task 1: Reviewed across a crash
**Review:** fake
fake: write a.txt a
fake: commit-once a
fake: signal done
fake-review@1: wait-for .hive/fake/go
fake-review@1: signal done "fine"
"""


def test_a_review_cut_short_by_kill_9_is_found_again_and_its_verdict_recorded_once(repo):
    repo.write_plan("k", STOPPED)
    run = repo.start_doit()
    wait_for(lambda: any(e.get("event") == "reviewing" for e in repo.events()), timeout=60, what="the review")
    wait_for(lambda: any(a >= 1000 for _, a, _ in repo.spawns()), timeout=30, what="the reviewer agent")
    os.killpg(run.pid, signal.SIGKILL)  # the run dies; the reviewer, in its tmux session, does not
    run.wait(timeout=30)
    repo.go()  # it gives its verdict while no run watches
    wait_for(lambda: list((repo.root / ".hive" / "signals").glob("*-r1t1/signal.json")), timeout=30, what="the verdict")
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.file_on_main("a.txt") == "a\n"
    reviewed = [e for e in repo.events() if e.get("event") == "reviewed"]
    assert [e["verdict"] for e in reviewed] == ["approved"], "recorded once"
    reviewers = [a for _, a, event in repo.spawns() if a >= 1000 and event == "start"]
    assert reviewers == [1011], "its one reviewer, found again: not started a second time"


FAILING = """
### Task 1: A reviewer that crashes
**Review:** fake
fake: write a.txt a
fake: commit-once a
fake: signal done
fake-review: crash 3
"""

ALWAYS = """
### Task 1: A reviewer never pleased
**Review:** fake
fake: write a.txt a
fake: commit-once a
fake: signal done
fake-review: signal changes "Not yet."
"""


def test_a_reviewer_that_fails_twice_and_reviews_past_max_reviews_wait_for_a_human(repo):
    config = repo.root / ".hive" / "config.toml"
    config.write_text(config.read_text().replace("[merge]\n", "[merge]\nmax_reviews = 1\n"))
    repo.write_plan("f", FAILING)
    repo.write_plan("m", ALWAYS)
    r = repo.doit("-n", "2")
    assert r.returncode == 1, r.stderr
    failed = repo.state("f", "1")
    assert failed["state"] == "awaiting_human" and failed["resume"] == "review"
    assert failed["reason"].startswith("its review failed twice (") and "hive changes f:1" in failed["reason"]
    assert [v["verdict"] for v in failed["reviews"]] == ["failed"]
    pleased = repo.state("m", "1")
    assert pleased["state"] == "awaiting_human" and pleased["attempt"] == 2
    assert "its reviews asked for changes 2 times ([merge] max_reviews = 1)" in pleased["reason"]
    assert [v["verdict"] for v in pleased["reviews"]] == ["changes", "changes"]
    assert repo.hive("approve", "m:1").returncode == 0  # a human takes it as it is: no review again
    assert repo.doit("m:1").returncode == 0 and repo.file_on_main("a.txt") == "a\n"


SHOWN = "HIVE_TASK HIVE_ROOT HIVE_PORT HIVE_WORKTREE GIT_CEILING_DIRECTORIES CLAUDECODE ANTHROPIC_API_KEY"
ENVIRONMENTS = """
### Task 1: Leave its environment
**Review:** fake
fake: write-env {fake}/author.env {shown}
fake: write a.txt a
fake: commit a
fake: signal done
fake-review: write-env {fake}/reviewer.env {shown}
fake-review: signal done fine
"""


def test_an_author_and_its_reviewer_get_the_environment_one_launcher_gives(repo):
    """Issue 44: starting an agent was written twice, and the reviewer's copy dropped the user's own
    GIT_CEILING_DIRECTORIES. One launcher (engine/launch.py) starts both."""
    fake = repo.root / ".hive" / "fake"
    repo.write_plan("e", ENVIRONMENTS.format(fake=fake, shown=SHOWN))
    r = repo.doit(env={"GIT_CEILING_DIRECTORIES": "/srv/users-own", "CLAUDECODE": "1", "ANTHROPIC_API_KEY": "sk-x"})
    assert r.returncode == 0, r.stdout + r.stderr
    author, reviewer = ({} for _ in range(2))
    for found, name in ((author, "author.env"), (reviewer, "reviewer.env")):
        found.update(line.split("=", 1) for line in (fake / name).read_text().splitlines())
    for env in (author, reviewer):
        assert env["HIVE_TASK"] == "e:1" and env["HIVE_ROOT"] == str(repo.root) and env["HIVE_PORT"].isdigit()
        ceilings = env["GIT_CEILING_DIRECTORIES"].split(os.pathsep)
        assert ceilings[0] == str(repo.root / "worktrees") and "/srv/users-own" in ceilings, env
        assert env["CLAUDECODE"] == "<unset>"  # a nested agent's marker is never passed on
        assert env["ANTHROPIC_API_KEY"] == "<unset>"  # nor a credential, in the sandbox
    assert author["HIVE_WORKTREE"] == reviewer["HIVE_WORKTREE"], "the reviewer reads the author's checkout"
