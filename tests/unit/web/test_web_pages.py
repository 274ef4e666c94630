"""The dashboard's pages from a project on disk (hive/web/views, taskpage, pages): every task of an
approved plan in the DAG with its state, what needs the human first with its actions, and every
text from a plan, an agent or a log escaped — never markup."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from web_helpers import ask, client, plan, state

from hive.store.files import append_line
from hive.store.paths import Paths
from hive.web import views

XSS = "<img src=x onerror=alert(1)>"

PLAN = f"""
# Shop

### Task 1: {XSS}
Build it.

### Task 2: Pick a database
**Type:** checkpoint:decision
**Options:** Postgres, SQLite
**Depends on:** 1
Which one?

### Task 3: Models
**Depends on:** 2

### Task 4: Docs

### Task 5: Tests
**Depends on:** 4
"""


def shop(root: Path) -> Path:
    plan(root, "shop", PLAN)
    state(root, "shop", "1", state="done", merge_commit="a" * 40, files=("app.py",), updated_at=1000.0)
    state(root, "shop", "2", state="awaiting_human", reason="checkpoint reached", updated_at=1002.0)
    state(root, "shop", "4", state="in_progress", worker="w1", started_at=1003.0, attempt=1, updated_at=1003.0)
    state(root, "shop", "5", state="blocked", reason="blocked: <b>needs</b> a key", updated_at=1004.0)
    return root


def nodes(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-task="([^"]+)" data-state="([^"]+)"', html))


def test_the_dag_shows_every_task_with_its_state(git_repo: Path):
    html = client(shop(git_repo)).get("/").text
    assert nodes(html) == {
        "shop:1": "done",
        "shop:2": "awaiting_human",
        "shop:3": "planned",
        "shop:4": "in_progress",
        "shop:5": "blocked",
    }
    assert "critical path: shop:1 → shop:2 → shop:3" in html


def test_a_title_that_is_markup_is_shown_as_text_everywhere(git_repo: Path):
    root = shop(git_repo)
    c = client(root)
    for page in (c.get("/").text, c.get("/tasks/shop:1").text):
        assert "<img" not in page, "the title became an element"
        assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;b&gt;needs&lt;/b&gt;" in c.get("/").text


def test_a_log_is_shown_as_the_terminal_showed_it_and_escaped(git_repo: Path):
    root = shop(git_repo)
    log = Paths(root).log_file("shop", "4")
    log.parent.mkdir(parents=True)
    log.write_bytes(b"\x1b[31mred\x1b[0m line\nspin 1\rspin 2\n<script>alert(1)</script>\x07\n")
    page = client(root).get("/tasks/shop:4").text
    shown = re.search(r'<pre class="log" data-task="shop:4">(.*?)</pre>', page, re.S).group(1)
    assert shown == "red line\nspin 2\n&lt;script&gt;alert(1)&lt;/script&gt;\n"
    dag = client(root).get("/").text
    assert "&lt;script&gt;alert(1" in dag, "the running task's last output line, in its node (cut to fit)"
    assert "<script>alert" not in dag


def test_what_needs_the_human_comes_first_in_the_order_it_came_each_with_its_actions(git_repo: Path):
    root = shop(git_repo)
    plan(root, "extra", "### Task q: Ask\n")
    state(root, "extra", "q", state="in_progress", worker="w2", started_at=1005.0, attempt=1, updated_at=1005.0)
    ask(root, "extra", "q", "Which <port>?", ("8080", "9090"))
    d = views.dashboard(root)
    assert [(i.kind, i.key) for i in d.items] == [
        ("question", "extra:q"),
        ("checkpoint", "shop:2"),
        ("blocked", "shop:5"),
    ]
    kinds = {i.key: (i.actions, i.options) for i in d.items}
    assert kinds["shop:2"] == (("choose", "reject"), ("Postgres", "SQLite"))
    assert kinds["extra:q"] == (("answer",), ("8080", "9090"))
    assert kinds["shop:5"] == (("retry",), ())
    html = client(root).get("/").text
    attention = html[html.index('id="attention"') : html.index('id="plans"')]
    assert attention.index('data-task="shop:2"') < attention.index('data-task="shop:5"')
    assert "Which &lt;port&gt;?" in attention
    assert 'name="choice" value="Postgres"' in attention and 'data-action="retry"' in attention


def test_read_only_pages_name_the_command_instead_of_a_form(git_repo: Path):
    html = client(shop(git_repo), read_only=True).get("/").text
    assert "<form" not in html and "hive approve shop:2 --choice Postgres" in html and "read-only" in html


def test_a_task_page_shows_its_attempts_questions_and_merge(git_repo: Path):
    root = git_repo
    plan(root, "p", "### Task 1: One\n**Verify:** true\nDo it.\n")
    history = (
        {"attempt": 1, "worker": "w1", "started_at": 100.0, "finished_at": 160.0, "outcome": "failed",
         "reason": "Verify failed (exit 1): true", "usage": {"tokens_in": 1200, "tokens_out": 300, "cost_usd": 0.5}},
    )  # fmt: skip
    state(
        root,
        "p",
        "1",
        state="failed",
        attempt=1,
        attempts_used=1,
        reason="Verify failed (exit 1): true",
        history=history,
    )
    append_line(Paths(root).notes_file("p", "1"), '{"attempt": 1, "time": 150.0, "text": "half <done>"}')
    page = client(root).get("/tasks/p:1").text
    assert "Verify failed (exit 1): true" in page and "1.2k in / 300 out, $0.50" in page
    assert "half &lt;done&gt;" in page and 'data-action="retry"' in page
    assert client(root).get("/tasks/p:9").status_code == 404
    assert client(root).get("/tasks/nope").status_code == 404


def test_the_cost_section_sums_the_tasks_and_holds_the_run_to_its_budget(git_repo: Path):
    root = git_repo
    plan(root, "p", "### Task 1: One\n\n### Task 2: Two\n")
    (root / ".hive" / "config.toml").write_text('[budget]\nrun_usd = 1.0\n[merge]\nmain_branch = "main"\n')
    used = {"tokens_in": 5000, "tokens_out": 1000, "cost_usd": 0.75}
    entry = {"attempt": 1, "worker": "w1", "started_at": 10.0, "finished_at": 20.0, "outcome": "done", "usage": used}
    state(root, "p", "1", state="done", history=(entry,))
    state(root, "p", "2", state="done", history=({**entry, "started_at": 30.0, "finished_at": 40.0},))
    Paths(root).run_record.write_text('{"started": 5.0, "pid": 0}')
    d = views.dashboard(root)
    assert d.cost.cost_usd == 1.5 and d.cost.spend.reached
    assert [(i.kind, i.key) for i in d.items] == [("budget", "")]
    html = client(root).get("/").text
    assert "$1.50" in html and "<polyline" in html and "the latest run spent $1.50 of its $1.00" in html


def test_an_invalid_plan_shows_its_problems_beside_every_valid_plan(git_repo: Path):
    """One typo in a plan blinded the whole dashboard (issue 43): the others are still shown."""
    root = shop(git_repo)
    (root / "plans" / "broken.md").write_text("---\nstatus: approved\n---\n### Task 1: A\n**Typ:** script\n")
    r = client(root).get("/")
    assert r.status_code == 200 and "did you mean &#39;**Type:**&#39;?" in r.text
    assert nodes(r.text)["shop:1"] == "done"
    drawn = client(root).app.state.site.render("")
    assert "unknown field" in drawn.sections["summary"] and "shop:1" in drawn.sections["plans"]


def test_a_bug_while_drawing_is_an_internal_error_with_its_traceback_in_the_log(
    git_repo: Path, monkeypatch: pytest.MonkeyPatch
):
    root = shop(git_repo)

    def broken(*_args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(views, "dashboard", broken)
    c = client(root)
    assert "internal error while drawing this page" in c.app.state.site.render("").sections["summary"]
    c = TestClient(c.app, base_url="http://127.0.0.1:8765", raise_server_exceptions=False)
    r = c.get("/")
    assert r.status_code == 500 and "hive web: internal error (traceback in" in r.text
    assert "RuntimeError: a bug" in Paths(root).debug_log.read_text()


def test_a_new_item_joins_at_the_end_whatever_its_time_and_the_others_keep_their_place():
    """Issue 38: a checkpoint that arrived on top moved a question's buttons 390 px down."""
    from hive.web.attention import Arrivals, Item, Kind

    def item(key: str, at: float, kind: Kind = Kind.QUESTION) -> Item:
        return Item(kind, key, key, "", at)

    arrivals = Arrivals()
    assert [i.key for i in arrivals.arrange([item("p:1", 10), item("p:2", 20)])] == ["p:1", "p:2"]
    assert [i.key for i in arrivals.arrange([item("p:0", 5), item("p:1", 10), item("p:2", 21)])] == [
        "p:1",
        "p:2",
        "p:0",
    ]
    changed = arrivals.arrange([item("p:0", 5), item("p:1", 10, Kind.CHECKPOINT), item("p:2", 21)])
    assert [i.id for i in changed] == ["need-question-p:2", "need-question-p:0", "need-checkpoint-p:1"]
