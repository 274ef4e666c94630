"""The dashboard's actions (hive/web/routes) call what the `hive` verbs call (hive/actions): the
same change of state, the same event in `.hive/events.jsonl`, the verb's own words back — and a
user error is the verb's message, with nothing changed."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from conftest import git
from web_helpers import CSRF, ask, client, plan, state

from hive.actions import answer as answering
from hive.store.paths import Paths
from hive.store.questions import load

HX = {"hx-request": "true"}


def post(root: Path, action: str, read_only: bool = False, headers: dict | None = None, **fields: str):
    return client(root, read_only=read_only).post(
        f"/actions/{action}", data={"csrf_token": CSRF, **fields}, headers={**HX, **(headers or {})}
    )


def events(root: Path) -> list[dict]:
    return [json.loads(line) for line in Paths(root).events.read_text().splitlines()]


def saved(root: Path, plan_name: str, task_id: str) -> dict:
    return json.loads(Paths(root).state_file(plan_name, task_id).read_text())


def test_retry_reopens_a_blocked_task_and_records_it_as_hive_retry_does(git_repo: Path):
    plan(git_repo, "p", "### Task 1: One\n")
    state(git_repo, "p", "1", state="blocked", reason="blocked: needs a key", attempts_used=2)
    r = post(git_repo, "retry", key="p:1")
    assert r.status_code == 200, r.text
    assert "p:1: re-opened (blocked → planned); the next `doit` runs it again" in r.text
    assert saved(git_repo, "p", "1")["state"] == "planned" and saved(git_repo, "p", "1")["attempts_used"] == 0
    assert events(git_repo)[-1]["event"] == "retry requested"


def test_a_decision_is_answered_with_its_option_and_the_task_is_done(git_repo: Path):
    plan(git_repo, "p", "### Task 1: Pick\n**Type:** checkpoint:decision\n**Options:** Postgres, SQLite\nWhich?\n")
    state(git_repo, "p", "1", state="awaiting_human", reason="checkpoint reached (decision)")
    r = post(git_repo, "approve", key="p:1", choice="sqlite")
    assert r.status_code == 200 and "p:1: choice: SQLite — the next `doit` goes on from it" in r.text, r.text
    st = saved(git_repo, "p", "1")
    assert st["state"] == "done" and st["answer"] == "choice: SQLite"
    assert st["merge_commit"] == git(git_repo, "rev-parse", "main")
    assert events(git_repo)[-1]["event"] == "answered: choice: SQLite"


def test_a_checkpoint_rejected_reopens_the_task_before_it_with_the_feedback(git_repo: Path):
    plan(git_repo, "p", "### Task 1: Page\n\n### Task 2: Check\n**Type:** checkpoint:human-verify\n**Depends on:** 1\n")
    state(git_repo, "p", "1", state="done")
    state(git_repo, "p", "2", state="awaiting_human")
    empty = post(git_repo, "approve", key="p:2", reject="  ")
    assert empty.status_code == 400 and "a rejection needs its reason" in empty.text
    assert saved(git_repo, "p", "2")["state"] == "awaiting_human", "nothing changed"
    r = post(git_repo, "approve", key="p:2", reject="the heading is <wrong>")
    assert r.status_code == 200 and "p:1: re-opened (done → planned) with your feedback" in r.text
    assert "&lt;wrong&gt;" not in r.text and saved(git_repo, "p", "1")["feedback"] == "the heading is <wrong>"


def test_an_answer_is_filed_as_hive_answer_files_it(git_repo: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(answering, "DELIVERY_PATIENCE", 0.0)  # no agent here to take it
    plan(git_repo, "p", "### Task 1: Db\n")
    state(git_repo, "p", "1", state="in_progress", worker="w1", attempt=1, started_at=1.0)
    ask(git_repo, "p", "1", "Which database?", ("Postgres", "SQLite"))
    wrong = post(git_repo, "answer", key="p:1", choice="MySQL")
    said = html.unescape(wrong.text)
    assert wrong.status_code == 400 and "'MySQL' is not one of the question's options: Postgres, SQLite" in said
    assert 'class="error"' in wrong.text
    r = post(git_repo, "answer", key="p:1", choice="Postgres", text="with <pgvector>")
    assert r.status_code == 200 and "p:1: answer recorded; its agent is not waiting any more" in r.text
    q = load(Paths(git_repo), "p", "1")[-1]
    assert (q.choice, q.answer) == ("Postgres", "with <pgvector>")


def test_an_action_the_state_does_not_allow_says_why_as_the_verb_does(git_repo: Path):
    plan(git_repo, "p", "### Task 1: One\n")
    state(git_repo, "p", "1", state="done")
    r = post(git_repo, "approve", key="p:1")
    assert r.status_code == 400 and "p:1 is done, not awaiting an answer" in r.text
    r = post(git_repo, "stop", key="p:1")
    assert r.status_code == 400 and "p:1 has no running agent" in r.text
    assert post(git_repo, "retry", key="").status_code == 400, "a form always names its task"
    assert post(git_repo, "launch", key="p:1").status_code == 404


def test_without_the_csrf_token_or_in_read_only_nothing_is_done(git_repo: Path):
    plan(git_repo, "p", "### Task 1: One\n")
    state(git_repo, "p", "1", state="blocked")
    bare = client(git_repo).post("/actions/retry", data={"key": "p:1"})
    assert bare.status_code == 403
    assert post(git_repo, "retry", read_only=True, key="p:1").status_code == 403
    assert saved(git_repo, "p", "1")["state"] == "blocked"


def test_a_form_posted_without_scripts_comes_back_to_its_page_with_the_answer(git_repo: Path):
    """Issue 38: with scripts off (or before htmx wires a form) a form posts as a form, from a page
    whose `Referrer-Policy` once made the browser send `Origin: null`: the CSRF token is the proof."""
    plan(git_repo, "p", "### Task 1: One\n")
    state(git_repo, "p", "1", state="failed")
    web = client(git_repo)
    fields = {"csrf_token": CSRF, "key": "p:1", "back": "/"}
    r = web.post("/actions/retry", data=fields, headers={"origin": "null"})
    assert r.status_code == 303 and r.headers["location"].startswith("/?said="), r.text
    page = web.get(r.headers["location"]).text
    said = page[page.index('id="said"') : page.index("</div>", page.index('id="said"'))]
    assert "p:1: re-opened (failed → planned); the next `doit` runs it again" in said
    assert "re-opened" not in web.get(r.headers["location"]).text, "shown once"
    state(git_repo, "p", "1", state="failed")
    back = web.post("/actions/retry", data={**fields, "back": "/tasks/p:1"}).headers["location"]
    assert back.startswith("/tasks/p:1?said=")
    elsewhere = web.post("/actions/retry", data={**fields, "back": "https://example.com/"}).headers["location"]
    assert elsewhere.startswith("/?said="), "never another site"
    wrong = web.post("/actions/retry", data={**fields, "key": "p:9"})
    assert wrong.status_code == 303
    assert '<div class="error">p:9 is planned; only failed' in web.get(wrong.headers["location"]).text
    assert web.post("/actions/retry", data=fields, headers={"origin": "http://evil.example"}).status_code == 403


def test_the_pages_send_their_own_origin_with_a_form(git_repo: Path):
    assert client(git_repo).get("/").headers["referrer-policy"] == "same-origin"


def test_the_trace_download_is_the_timeline_as_chrome_trace_json(git_repo: Path):
    plan(git_repo, "p", "### Task 1: One\n")
    entry = {"attempt": 1, "worker": "w1", "started_at": 10.0, "finished_at": 20.0, "outcome": "done"}
    state(git_repo, "p", "1", state="done", history=(entry,))
    r = client(git_repo).get("/trace.json")
    assert r.headers["content-disposition"] == 'attachment; filename="hive-trace.json"'
    slices = [e for e in r.json()["traceEvents"] if e["ph"] == "X"]
    assert [(e["name"], e["dur"]) for e in slices] == [("p:1 setup", 10_000_000)]


def test_a_held_change_offers_merge_and_retry_and_retry_runs_it_again(git_repo: Path):
    """Issue 37: a task whose change touches Hive's own files waits with both ways out."""
    plan(git_repo, "p", "### Task 1: One\n")
    why = "changes Hive's own files: dodo.py — `hive approve p:1` merges it as it is"
    state(git_repo, "p", "1", state="awaiting_human", resume="held", reason=why, branch="hive/p-1-a1")
    page = client(git_repo).get("/").text
    assert "changes Hive&#39;s own files: dodo.py" in page and ">Merge</button>" in page and ">Retry</button>" in page
    r = post(git_repo, "retry", key="p:1")
    assert r.status_code == 200 and "p:1: re-opened (awaiting_human → planned)" in r.text, r.text
    assert saved(git_repo, "p", "1")["state"] == "planned" and saved(git_repo, "p", "1")["resume"] == ""


def test_a_branch_waiting_for_review_is_sent_back_with_the_changes_typed_on_the_page(git_repo: Path):
    """Issue 39: the dashboard's Changes beside Approve does what `hive changes plan:ID` does."""
    plan(git_repo, "p", "### Task 1: One\n")
    state(git_repo, "p", "1", state="awaiting_human", resume="review", reason="review branch hive/p-1", attempt=1)
    page = client(git_repo).get("/").text
    assert 'data-action="changes"' in page and ">Changes</button>" in page
    r = post(git_repo, "changes", key="p:1", text="Name the <config> key")
    assert r.status_code == 200 and "p:1: sent back to its author with your review" in r.text, r.text
    st = saved(git_repo, "p", "1")
    assert st["state"] == "planned" and st["reviews"][-1]["text"] == "Name the <config> key"
    assert events(git_repo)[-1]["event"] == "reviewed" and events(git_repo)[-1]["reviewer"] == "you"
    empty = post(git_repo, "changes", key="p:1", text=" ")
    assert empty.status_code == 400
