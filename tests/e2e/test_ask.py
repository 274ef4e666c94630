"""Issue 23: an agent asks its human mid-task (`hive ask`), the human answers from another
terminal (`hive answer`), and the run goes on — in the same session while the agent
waits; in a continuation attempt, with every question and answer in its brief, once it
has stopped waiting. Through real `doit`, tmux and the fake agent."""

from __future__ import annotations

import os
import signal

from conftest import wait_for
from test_notify import received, recorder

PLAN = """
### Task 1: Database
fake@2: dump-context
fake: ask "Which database?" Postgres,SQLite
fake: write db.txt {answer}
fake: commit chose the database
fake: signal done

### Task 2: Models
**Depends on:** 1
fake: write models.txt m
fake: commit models
fake: signal done

### Task 3: Docs
fake: write docs.txt d
fake: commit docs
fake: signal done
"""


def asking(repo) -> dict:
    """Task 1's row in `hive status --json` once its agent has asked."""
    rows: dict = {}

    def asked() -> bool:
        rows.update({t["id"]: t for t in repo.status_json()["tasks"]})
        return rows["1"]["question"] != ""

    wait_for(asked, timeout=60, what="the agent's question in `hive status`")
    return rows["1"]


def test_the_agent_waits_for_the_answer_and_goes_on_in_the_same_session(repo, tmp_path):
    out = tmp_path / "events.jsonl"
    repo.configure(extra=recorder(out))
    repo.write_plan("a", PLAN)
    run = repo.start_doit()
    row = asking(repo)
    assert row["state"] == "awaiting_human" and row["reason"] == "asks: Which database?"
    assert row["options"] == ["Postgres", "SQLite"]
    assert row["answer_command"] == "hive answer a:1 --choice Postgres"
    text = repo.hive("status").stdout
    assert "asks: Which database?" in text and "options: Postgres, SQLite" in text
    assert "answer it: `hive answer a:1 --choice Postgres`" in text
    wait_for(lambda: any(e["event"] == "question" for e in received(out)), what="the question event")
    question = [e for e in received(out) if e["event"] == "question"]
    assert len(question) == 1 and question[0]["question"] == "Which database?"
    assert question[0]["options"] == ["Postgres", "SQLite"] and question[0]["command"] == row["answer_command"]

    wrong = repo.hive("answer", "a:1", "--choice", "MySQL")
    assert wrong.returncode == 3 and "'MySQL' is not one of the question's options: Postgres, SQLite" in wrong.stderr
    r = repo.hive("answer", "a:1", "--choice", "sqlite")
    assert r.returncode == 0, r.stderr
    assert "hive: a:1: its agent has your answer and goes on" in r.stdout
    assert run.wait() == 0, run.output()
    assert repo.file_on_main("db.txt") == "SQLite\n"
    assert repo.file_on_main("models.txt") == "m\n"
    assert repo.starts("a:1") == ["a:1"], "one attempt: the agent went on in its session"
    assert repo.state("a", "1")["attempts_used"] == 1
    said = [e["event"] for e in repo.events() if e["task"] == "a:1"]
    assert "asked: Which database?" in said and "answered: question 1" in said
    again = repo.hive("answer", "a:1", "Postgres after all")
    assert again.returncode == 3 and "a:1 has no question waiting for an answer" in again.stderr


def test_an_unanswered_question_holds_the_task_without_counting_and_the_answer_starts_a_continuation(repo, tmp_path):
    out = tmp_path / "events.jsonl"
    repo.configure(attempts=1, extra=recorder(out))
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text().replace("[execution]\n", '[execution]\nask_wait = "1s"\n', 1))
    repo.write_plan("a", PLAN)
    r = repo.doit()
    assert r.returncode == 1
    assert "a:1 is awaiting_human: asked: Which database?" in r.stdout
    assert "answer it: `hive answer a:1 --choice Postgres`" in r.stdout
    assert "hive: a:1: awaiting_human — asked: Which database?" in r.stdout
    assert "— 1 done, 1 skipped, 1 awaiting you (`hive status`)" in r.stdout
    assert repo.file_on_main("docs.txt") == "d\n", "the independent task ran"
    st = repo.state("a", "1")
    assert st["state"] == "awaiting_human" and st["resume"] == "answer"
    assert st["attempts_used"] == 0, "asking is not a failed attempt"
    rows = {t["id"]: t for t in repo.status_json()["tasks"]}
    assert rows["1"]["question"] == "Which database?" and rows["2"]["skipped_because"] == ["a:1"]
    assert rows["1"]["notes"][-1]["text"] == "waiting for the answer to 'Which database?'"
    assert [e["event"] for e in received(out)].count("question") == 1, "said once, though asked and then held"

    approve = repo.hive("approve", "a:1")
    assert approve.returncode == 3 and "a:1's agent asked a question: answer it with `hive answer a:1" in approve.stderr
    r = repo.hive("answer", "a:1", "SQLite,", "it", "is", "small")
    assert r.returncode == 0, r.stdout
    assert "its agent is not waiting any more, so its next attempt starts with every question and answer" in r.stdout
    rows = {t["id"]: t for t in repo.status_json()["tasks"]}
    assert rows["1"]["question"] == "" and rows["1"]["reason"].startswith("answered — its next attempt goes on")
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert repo.file_on_main("db.txt") == "SQLite, it is small\n"
    assert repo.file_on_main("models.txt") == "m\n"
    assert repo.starts("a:1") == ["a:1", "a:1"]
    brief = (repo.root / ".hive" / "fake" / "context-a_1-a2.md").read_text()
    assert "## Questions asked so far, and your human's answers" in brief
    assert "- (attempt 1) **Which database?** (options: Postgres, SQLite)\n  Answer: SQLite, it is small" in brief
    assert "Attempt 1 **asked a question** and ended before the answer came" in brief


def test_a_question_and_its_answer_survive_a_kill9_of_the_run(repo):
    repo.write_plan("a", PLAN)
    run = repo.start_doit()
    asking(repo)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=10)
    row = {t["id"]: t for t in repo.status_json()["tasks"]}["1"]
    assert row["state"] == "awaiting_human" and row["question"] == "Which database?", "still shown after the crash"
    r = repo.hive("answer", "a:1", "--choice", "Postgres")
    assert "its agent has your answer and goes on" in r.stdout, "the agent outlived the run and got it"
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.file_on_main("db.txt") == "Postgres\n"
    assert repo.starts("a:1") == ["a:1"], "the agent that asked finished the task: nothing ran twice"
