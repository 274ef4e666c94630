#!/usr/bin/env python3
"""The dashboard's screenshot for the docs (docs/web-dashboard.png), taken of a real busy run:

    .venv/bin/python bench/web_screenshot.py [--out docs/web-dashboard.png] [--keep]

In a scratch repo (bench/run.py's Sandbox), a plan of 40 tasks run by the tests' fake agent
(tests/fake_agent.py: each sleeps a while, writes a file, commits, signals), one of which asks a
question, one a checkpoint and one failing, is run with `doit -n 4` beside `hive web`; once the
question and the checkpoint wait while three agents still work, chromium (Debian's, through Playwright)
opens the page, types half an answer as a person would, and takes the screenshot."""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests"))

import run as bench  # noqa: E402 — bench/run.py: Sandbox, new_repo, init_hive
from webserver import start_web, stop_web  # noqa: E402 — tests/webserver.py: `hive web` as a user runs it

FAKE = BENCH.parent / "tests" / "fake_agent.py"
CONFIG = f"""[agent]
default = "fake"

[agents.fake]
command = ["{bench.PY}", "{FAKE}", "{{context_file}}"]
context_file = "AGENTS.md"

[execution]
max_attempts = 1

[parallel]
max_workers = 4

[sandbox]
writable = ["{{root}}/.hive/fake/"]
"""


def plan(rng: random.Random) -> str:
    parts = ["---\nstatus: approved\n---\n# Checkout rework\n\n## Tasks\n"]
    for i in range(1, 41):
        deps = [str(d) for d in sorted({rng.randint(1, i - 1) for _ in range(rng.randint(0, 2))})] if i > 8 else []
        deps += ["check"] if i > 30 else []  # the checkpoint comes early: what follows it waits for you
        parts.append(f"### Task {i}: {rng.choice(TITLES)} {i}\n**Depends on:** {', '.join(deps) or 'none'}\n")
        if i == 4:
            parts.append('fake: ask "Which payment provider?" Stripe,Adyen\n')
        if i == 6:
            parts.append("fake: sleep 1\nfake: crash 2\n")
        work = f"fake: write f{i}.txt {i}\nfake: commit task {i}\nfake: signal done\n"
        parts.append(f"fake: sleep {rng.uniform(4, 12):.1f}\n{work}")
    parts.append("### Task check: Check the cart page\n**Type:** checkpoint:human-verify\n**Depends on:** none\n")
    parts.append("Open /cart and check the totals.\n")
    return "\n".join(parts)


TITLES = ["Cart model", "Price rules", "Tax table", "Checkout API", "Receipt mail", "Coupon codes", "Stock check"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(BENCH.parent / "docs" / "web-dashboard.png"))
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    sb = bench.Sandbox()
    root = bench.new_repo(sb, "shop", hive=False)
    bench.init_hive(sb, root, CONFIG.replace("{root}", str(root)))
    (root / "plans" / "checkout.md").write_text(plan(random.Random(7)))
    run = subprocess.Popen(
        [bench.PY, "-m", "doit", "-n", "4"], cwd=root, env=sb.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    web = start_web(root)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1360, "height": 1000})
            page.goto(web.url)
            page.wait_for_selector('li[data-kind="question"]', timeout=120_000)
            page.wait_for_selector('li[data-kind="checkpoint"]', timeout=120_000)
            page.wait_for_selector('li[data-kind="failed"]', timeout=120_000)
            deadline = time.monotonic() + 120
            while page.locator('g.node[data-state="in_progress"]').count() < 3 and time.monotonic() < deadline:
                time.sleep(0.2)
            page.click('li[data-kind="question"] input[name="text"]')
            page.keyboard.type("Stripe, with the EU account")
            time.sleep(2)  # a few updates of the busy run around the half-typed answer
            page.screenshot(path=args.out, full_page=False)
            browser.close()
        print(f"bench: the dashboard of a busy run: {args.out}")
    finally:
        stop_web(web.proc)
        run.terminate()
        run.wait(timeout=60)
        subprocess.run(["tmux", "-L", sb.socket, "kill-server"], env=sb.env, check=False, capture_output=True)
        if not args.keep:
            shutil.rmtree(sb.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
