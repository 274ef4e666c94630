"""Issue 45 with a real agent: Claude Code, against the scripted model server, as the author of a
task in pull-request mode through one CI-fix round — its first try fails the forge's CI, the
failed check's log reaches its next brief, and what it reads there makes the fix, pushed to the
same PR and merged. The token never reaches it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cli_setup import MODEL, cli_env
from clis import cli_bin_dir
from forge import Forge
from forge.ci import CI
from forge.fixture import TOKEN, forge_fixture  # noqa: F401 (the `forge` fixture)

CONFIG = """\
[agent]
default = "claude"

[execution]
spawn_grace_period = "60s"
task_timeout = "4m"
max_attempts = 2

[merge]
main_branch = "main"
mode = "pr"

[forge]
api_url = "{url}"
repository = "acme/shop"
poll = "0.2s"
approvals = 0

[prices]
"{model}" = {{ input = 3.0, output = 15.0 }}
"""

# The model is stateless: the same command each attempt. It takes the greeting from the CI log in
# its brief (CLAUDE.md) when there is one — the line begins with FAILED, which no line of the task
# text does — and writes a wrong one before that.
FIX = (
    "w=$(sed -n 's/^FAILED test_greeting: hello.txt must say: //p' CLAUDE.md | tail -1); "
    "printf '%s\\n' \"${w:-helo}\" > hello.txt && git add hello.txt && "
    'git commit -qm "greeting: ${w:-first try}"'
)
GREETING = f"""
### Task 1: The greeting
Write the greeting the project's tests expect.

model> run: {FIX}
model> run: printenv GH_TOKEN GITHUB_TOKEN; echo env-looked-at
model> run: hive done
model> say: the greeting is committed
"""


def _ci(read) -> tuple[str, str]:
    if read("hello.txt") == "Hello, world\n":
        return "success", "1 passed"
    return "failure", "collected 1 item\nFAILED test_greeting: hello.txt must say: Hello, world\n1 failed"


def test_claude_code_fixes_what_ci_said_on_its_pull_request(repo, cli_paths, model_server, forge: Forge):
    repo.git("remote", "add", "origin", str(forge.remote))
    repo.git("push", "-q", "origin", "main")
    (repo.root / ".hive" / "config.toml").write_text(CONFIG.format(url=forge.url, model=MODEL))
    repo.write_plan("web", GREETING)
    env = cli_env("claude", model_server, Path(os.environ["HOME"]))
    env["PATH"] = f"{os.environ['PATH']}{os.pathsep}{cli_bin_dir('claude')}"
    env["GH_TOKEN"] = TOKEN
    with CI(forge, _ci) as ci:
        r = repo.doit(env=env, timeout=400)
    assert r.returncode == 0, r.stdout + repo.hive("logs", "web:1").stdout
    assert [c for _, c in ci.ran] == ["failure", "success"]
    st = repo.state("web", "1")
    assert st["state"] == "done" and st["ci_rounds"] == 1 and st["attempts_used"] == 1, st
    [number] = [n for n, i in forge.issues.items() if i.pull]
    assert forge.issues[number].pull.merged_at, "merged through the API"
    assert repo.file_on_main("hello.txt") == "Hello, world\n", "the fix it read in the CI log"
    seen = json.dumps([req.body for req in model_server.log()])
    assert "env-looked-at" in seen and TOKEN not in seen, "its environment had no token to print"
