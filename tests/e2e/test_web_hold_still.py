"""Issue 38: the dashboard holds still while a person works in it — in a real browser (Debian's
chromium through Playwright), through real `doit` runs with the fake agent: a half-typed answer
keeps its text, focus, selection and place when a new item arrives during a busy run; a press
and release across an update acts once on the item under it; with JavaScript off every action
works and comes back to its page; after `hive web` restarts, the open page's answer goes through."""

from __future__ import annotations

from pathlib import Path

from conftest import wait_for
from playwright.sync_api import Browser, Page
from webserver import Web, start_web, stop_web

# a busy run: short tasks that keep changing state around what the person is doing
CHURN = "".join(
    f"""
### Task b{n}: Busy {n}
fake: sleep 0.{n % 5 + 2}
fake: write b{n}.txt {n}
fake: commit busy {n}
fake: signal done
"""
    for n in range(1, 9)
)

TYPING = (
    """
### Task q: Ask
fake: ask "Which database, and how?" Postgres,SQLite
fake: write db.txt {answer}
fake: commit db
fake: signal done

### Task w: Work until told
fake: wait-for .hive/fake/go
fake: write w.txt w
fake: commit w
fake: signal done

### Task c: Check the work
**Type:** checkpoint:human-verify
**Depends on:** w
Look at w.txt.
"""
    + CHURN
)

# counts the changes an update made to the attention section (read with page.evaluate: the page's
# Content-Security-Policy refuses the string functions Playwright's wait_for_function compiles)
WATCH = """() => {
  window.updates = 0;
  new MutationObserver(() => { window.updates += 1; }).observe(document.getElementById('attention'),
    {subtree: true, childList: true, characterData: true, attributes: true});
}"""


def _box(page: Page, selector: str) -> dict:
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    return box


def test_a_half_typed_answer_keeps_its_text_focus_and_place_when_a_new_item_arrives(
    repo, web: Web, page: Page, artifacts: Path
):
    repo.configure(extra="[parallel]\nmax_workers = 3\n")
    repo.write_plan("h", TYPING)
    run = repo.start_doit("-n", "3")
    page.goto(web.url)
    field = "#answer-text-h\\:q"
    page.wait_for_selector(field)
    page.evaluate(WATCH)
    page.click(field)
    page.keyboard.type("Postgres, with a twi")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    before = _box(page, field)
    caret = page.evaluate("document.activeElement.selectionStart")
    updates = page.evaluate("window.updates")
    repo.go()  # w finishes: its checkpoint arrives as a new item while the person types
    page.wait_for_selector('li[data-kind="checkpoint"][data-task="h:c"]', timeout=60_000)
    wait_for(lambda: page.evaluate("window.updates") > updates, what="the update")
    page.screenshot(path=artifacts / "typing-while-a-checkpoint-arrives.png", full_page=True)
    assert page.input_value(field) == "Postgres, with a twi"
    assert page.evaluate("document.activeElement.id") == "answer-text-h:q", "focus stays in the box"
    assert page.evaluate("document.activeElement.selectionStart") == caret, "and so does the caret"
    assert abs(_box(page, field)["y"] - before["y"]) < 1, "the new item came below: nothing moved"
    kinds = page.eval_on_selector_all("#attention li", "items => items.map(i => i.dataset.task)")
    assert kinds == ["h:q", "h:c"]
    page.keyboard.press("End")
    page.keyboard.type("st")
    page.keyboard.press("Enter")
    page.wait_for_selector("#said >> text=h:q: its agent has your answer and goes on")
    assert run.wait(timeout=120) == 1, run.output()  # it stops at the checkpoint
    assert repo.file_on_main("db.txt") == "Postgres, with a twist\n"
    assert all(repo.state("h", f"b{n}")["state"] == "done" for n in range(1, 9)), "a busy run around it"


PRESS = """
### Task c1: Approve me
**Type:** checkpoint:human-verify
Approve it.

### Task c2: Not me
**Type:** checkpoint:human-verify
Leave it.

### Task x: Fail when told
fake: wait-for .hive/fake/go
fake: crash 3
"""


def test_a_press_and_release_across_an_update_acts_once_on_the_item_under_it(repo, web: Web, page: Page):
    repo.configure(attempts=1)
    repo.write_plan("p", PRESS)
    run = repo.start_doit("-n", "3")
    page.goto(web.url)
    button = page.locator('li[data-task="p:c1"] form[data-action="approve"] button', has_text="Approve")
    button.wait_for()
    page.wait_for_selector('li[data-task="p:c2"]')
    page.evaluate(WATCH)
    box = button.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    repo.go()  # x fails: a new item, an update of the whole section between the press and the release
    page.wait_for_selector('li[data-kind="failed"][data-task="p:x"]', timeout=60_000)
    wait_for(lambda: page.evaluate("window.updates") > 0, what="the update")
    page.mouse.up()
    page.wait_for_selector("#said >> text=p:c1: approved")
    approvals = [e for e in repo.events() if e.get("event") == "answered: approved"]
    assert [e["task"] for e in approvals] == ["p:c1"], "one action, on the item that was pressed"
    assert repo.state("p", "c2")["state"] == "awaiting_human"
    run.wait(timeout=120)


NO_SCRIPTS = """
### Task q: Ask
fake: ask "Which database?" Postgres,SQLite
fake: write db.txt {answer}
fake: commit db
fake: signal done

### Task c: Look
**Type:** checkpoint:human-verify
Look.

### Task f: Fail
fake: crash 3

### Task s: Run until stopped
fake: hang
"""


def test_without_javascript_answer_approve_retry_and_stop_work_and_come_back(repo, web: Web, browser: Browser):
    repo.configure(attempts=1, stop="1s", extra="[parallel]\nmax_workers = 4\n")
    repo.write_plan("n", NO_SCRIPTS)
    run = repo.start_doit("-n", "4")
    wait_for(lambda: repo.state("n", "f")["state"] == "failed", timeout=60, what="n:f to fail")
    wait_for(lambda: repo.state("n", "c")["state"] == "awaiting_human", timeout=60, what="the checkpoint")
    wait_for(lambda: repo.status_json()["tasks"][0].get("question"), timeout=60, what="the question")
    wait_for(lambda: repo.state("n", "s").get("agent_token"), timeout=60, what="n:s to run")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(web.url)
        page.fill("#answer-text-n\\:q", "SQLite, please")
        page.locator('li[data-task="n:q"] button', has_text="Answer").click()
        assert page.url.startswith(web.at("?said=")), page.url
        assert "n:q: its agent has your answer and goes on" in page.inner_text("#said")
        page.locator('li[data-task="n:c"] button', has_text="Approve").click()
        assert "n:c: approved" in page.inner_text("#said")
        page.locator('li[data-task="n:f"] button', has_text="Retry").click()
        assert "n:f: re-opened (failed → planned)" in page.inner_text("#said")
        page.goto(web.at("tasks/n:s"))
        page.locator('form[data-action="stop"] button').click()
        assert page.url.startswith(web.at("tasks/n:s?said=")), page.url
        assert "stopped" in page.inner_text("#said")
    finally:
        context.close()
    assert run.wait(timeout=120) == 1, run.output()
    assert repo.file_on_main("db.txt") == "SQLite, please\n"
    assert repo.state("n", "c")["state"] == "done" and repo.state("n", "f")["state"] == "planned"
    assert repo.state("n", "s")["state"] == "blocked"


ASKING = """
### Task q: Ask
fake: ask "Which port?"
fake: write port.txt {answer}
fake: commit port
fake: signal done
"""


def test_after_hive_web_restarts_an_answer_from_the_open_page_goes_through(repo, page: Page):
    repo.write_plan("r", ASKING)
    run = repo.start_doit()
    first = start_web(repo.root)
    try:
        page.goto(first.url)
        page.wait_for_selector("#answer-text-r\\:q")
    finally:
        stop_web(first.proc)
    port = first.url.rsplit(":", 1)[1].strip("/")
    second = start_web(repo.root, "--port", port)
    try:
        page.fill("#answer-text-r\\:q", "8080")
        page.locator('li[data-task="r:q"] button', has_text="Answer").click()
        page.wait_for_selector("#said >> text=r:q: its agent has your answer and goes on")
    finally:
        err = stop_web(second.proc)
    assert "Traceback" not in err, err
    assert run.wait(timeout=120) == 0, run.output()
    assert repo.file_on_main("port.txt") == "8080\n"
