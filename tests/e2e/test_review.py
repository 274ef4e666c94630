"""Issue 39: work is reviewed before it merges — a reviewer agent (`**Review:** <profile>`) reads
the merged result once its checks pass, and its words, or a human's (`hive changes plan:ID`),
reach the author's next attempt. Through real `doit`, tmux and the sandbox, with the fake agent
as author and as reviewer (`fake-review@R:` directives, R its round)."""

from __future__ import annotations

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
    assert r.returncode == 0, r.stderr + repo.hive("logs", "r:1").stdout
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
    assert "review 1 by fake: changes" in r.stderr and "review 2 by fake: approved" in r.stderr
    first_parents = repo.git("log", "--first-parent", "--format=%s", "main").splitlines()
    assert sum("hive: merge r:1" in s for s in first_parents) == 1, "merged once, reviewed"
    shown = repo.hive("status").stdout
    assert "review 2 by fake: approved" in shown, shown
    assert "review" in repo.hive("timeline").stdout


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
