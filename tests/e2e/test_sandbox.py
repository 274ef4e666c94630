"""Issue 24: agents in a bubblewrap sandbox (`[sandbox] mode = "on"`), through real `doit`, tmux
and the fake agent. As root nothing but the sandbox stops these writes (SANDBOX-NOTES.md), so a
"denied" here proves the sandbox."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import uuid
from pathlib import Path

from conftest import wait_for

ON = 'mode = "on"\n'  # the fake agent's own log folder is writable in every test's config


TRIES = """
### Task 1: Stay in your checkout
fake: try-write {root}/main-checkout.txt
fake: try-write {home}/in-home.txt
fake: try-write {root}/worktrees/beside-me.txt
fake: try-write /etc/{tag}
fake: try-read {home}/.ssh/id_ed25519
fake: try-write {root}/.git/refs/heads/evil
fake: try-git {root} update-ref refs/heads/main HEAD
fake: try-write {root}/.hive/state/forged.json
fake: try-write {root}/.hive/signals/forged.json
fake: try-write /tmp/{tag}
fake: try-git . update-ref refs/heads/main HEAD
fake: try-read {root}/.hive/discovered/s/D1.json
fake: discover Found-more-work while-in-the-sandbox
fake: note working inside the sandbox
fake: write a.txt a
fake: commit work in the sandbox
fake: signal done
"""


def _tried(repo) -> dict[str, str]:
    """What each try printed, by its target."""
    out = {}
    for line in repo.hive("logs", "s:1", "-n", "200").stdout.splitlines():
        if line.startswith("fake agent: try-"):
            what, _, said = line.removeprefix("fake agent: ").rpartition(": ")
            out[what] = said
    return out


def test_a_sandboxed_agent_writes_only_its_checkout_and_its_task_still_merges(repo):
    home, tag = Path(os.environ["HOME"]), f"hive-sandbox-{uuid.uuid4().hex[:8]}"
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    repo.configure(sandbox=ON)
    repo.write_plan("s", TRIES.format(root=repo.root, home=home, tag=tag))
    others = repo.root / ".hive" / "discovered" / "s" / "D1.json"  # filed by another of its plan's tasks
    others.parent.mkdir(parents=True)
    others.write_text('{"title": "Someone else\'s item", "details": "", "discovered_from": "s:2"}')
    main_before = repo.git("rev-parse", "main")
    r = repo.doit()
    assert r.returncode == 0, r.stderr + repo.hive("logs", "s:1").stdout
    tried = _tried(repo)
    for target in (
        f"try-write {repo.root}/main-checkout.txt",
        f"try-write {home}/in-home.txt",
        f"try-write {repo.root}/worktrees/beside-me.txt",
        f"try-write /etc/{tag}",
        f"try-read {home}/.ssh/id_ed25519",
        f"try-write {repo.root}/.git/refs/heads/evil",
        f"try-write {repo.root}/.hive/state/forged.json",
        f"try-write {repo.root}/.hive/signals/forged.json",
        f"try-read {repo.root}/.hive/discovered/s/D1.json",
    ):
        assert tried.get(target, "").startswith("denied"), (target, tried)
    assert tried[f"try-git {repo.root} update-ref refs/heads/main HEAD"] != "exit 0"
    assert tried[f"try-write /tmp/{tag}"] == "ok", "its /tmp is its own"
    assert tried["try-git . update-ref refs/heads/main HEAD"] == "exit 0", "main in its own git directory only"
    for path in (
        repo.root / "main-checkout.txt",
        home / "in-home.txt",
        repo.root / "worktrees" / "beside-me.txt",
        Path("/etc") / tag,
        Path("/tmp") / tag,
        repo.root / ".git" / "refs" / "heads" / "evil",
    ):
        assert not path.exists(), path
    assert repo.file_on_main("a.txt") == "a\n"
    assert repo.git("rev-parse", "main^1") == main_before, "main moved only by Hive's merge"
    first_parents = repo.git("log", "--first-parent", "--format=%s", "main").splitlines()
    assert first_parents == ["hive: merge s:1 — Stay in your checkout", "initial commit"]
    assert "work in the sandbox" in repo.git("log", "--format=%s", "main^2")
    assert repo.status_json()["tasks"][0]["notes"][-1]["text"] == "working inside the sandbox"
    assert not list((repo.root / ".hive" / "gitdirs").iterdir()), "its private git directory is gone"
    # what it discovered went to a folder of its own, filed by Hive beside the others it never saw
    assert [(d["key"], d["title"]) for d in repo.status_json()["discovered"]] == [
        ("s:D1", "Someone else's item"),
        ("s:D2", "Found-more-work"),
    ]


NETWORK = """
### Task 1: Reach only what you may
fake: try-url http://127.0.0.1:{port}/allowed
fake: try-url http://localhost:{port}/not-allowed
fake: try-connect 127.0.0.1 {port}
fake: env GITHUB_TOKEN
fake: env AWS_SECRET_ACCESS_KEY
fake: env JAVA_HOME
fake: env KEPT_TOKEN
fake: write a.txt a
fake: commit work
fake: signal done
"""


def test_a_sandboxed_agent_reaches_only_allowed_hosts_and_none_of_your_secrets(repo, http_server):
    """`network = "allowlist"` (the default): 127.0.0.1 is allowed, `localhost` (the same server)
    is not; no direct connection at all. Credentials of the user's environment stay out."""
    repo.configure(sandbox=ON + 'allow = ["127.0.0.1"]\npass_env = ["KEPT_*"]\n')
    repo.write_plan("s", NETWORK.format(port=http_server))
    secrets = {"GITHUB_TOKEN": "ghp_x", "AWS_SECRET_ACCESS_KEY": "aws", "JAVA_HOME": "/opt/jdk", "KEPT_TOKEN": "k"}
    r = repo.doit(env={**os.environ, **secrets})
    assert r.returncode == 0, r.stderr + repo.hive("logs", "s:1").stdout
    log = repo.hive("logs", "s:1", "-n", "200").stdout
    port = http_server
    assert f"try-url http://127.0.0.1:{port}/allowed: ok hello /allowed" in log
    assert f"try-url http://localhost:{port}/not-allowed: denied (HTTP 403)" in log
    assert f"try-connect 127.0.0.1 {port}: failed" in log, "no way out but the proxy"
    assert f"hive sandbox: refused a connection to localhost:{port} (not in [sandbox] allow)" in log
    for line in ("GITHUB_TOKEN=<unset>", "AWS_SECRET_ACCESS_KEY=<unset>", "JAVA_HOME=/opt/jdk", "KEPT_TOKEN=k"):
        assert f"\n{line}" in log, line
    task = repo.status_json()["tasks"][0]
    assert (task["refused"], task["refused_hosts"]) == (1, [f"localhost:{port}"])
    shown = repo.hive("status").stdout
    assert f"sandbox refused 1 connection(s) to localhost:{port} ([sandbox] allow)" in shown, shown
    assert repo.file_on_main("a.txt") == "a\n"


def test_kill9_of_doit_with_sandboxed_agents_then_the_next_run_reattaches_and_merges_once(repo):
    repo.configure(sandbox=ON)
    repo.write_plan(
        "s",
        """
        ### Task 1: Work, then wait
        fake: write a.txt a
        fake: commit committed in the sandbox before the crash
        fake: wait-for .hive/fake/go
        fake: signal done

        ### Task 2: After it
        **Depends on:** 1
        fake: write b.txt b
        fake: commit second
        fake: signal done
        """,
    )
    run = repo.start_doit()
    wait_for(lambda: "before the crash" in repo.agent_commits(), what="the agent's commit in its own git directory")
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=10)
    repo.go()
    r = repo.doit()
    assert r.returncode == 0, r.stdout
    assert "re-attaching" in r.stdout or "found its `hive done` signal" in r.stdout
    assert repo.file_on_main("a.txt") == "a\n" and repo.file_on_main("b.txt") == "b\n"
    assert repo.starts() == ["s:1", "s:2"], "nothing ran twice"
    assert repo.git("log", "--format=%s", "main").count("committed in the sandbox before the crash") == 1


FETCH = Path(__file__).parent.parent / "fixtures" / "fetch.py"
ESCAPE = Path(__file__).parent.parent / "fixtures" / "try_escape.py"


def with_a_key() -> Path:
    """The home, with a private key in `~/.ssh` (hidden from every sandbox)."""
    home = Path(os.environ["HOME"])
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    return home


def nothing_escaped(repo, home: Path, tag: str) -> None:
    """None of try_escape.py's attempts left a trace."""
    git_ref = repo.root / ".git" / "refs" / "heads" / f"evil-{tag}"
    beside = repo.root / "worktrees" / f"beside-me-{tag}.txt"
    for path in (
        repo.root / f"main-checkout-{tag}.txt",
        home / f"in-home-{tag}.txt",
        Path("/etc") / tag,
        beside,
        git_ref,
    ):
        assert not path.exists(), path


def test_a_script_task_runs_in_the_sandbox_too(repo, http_server):
    """... and so does `[worktrees] setup` (a next attempt's checkout holds what an agent wrote)."""
    home, tag = with_a_key(), f"script-{uuid.uuid4().hex[:8]}"
    setup = f'\n[worktrees]\nsetup = "python3 {ESCAPE} {repo.root} {home} setup-{tag}"\n'
    repo.configure(sandbox=ON + 'allow = ["127.0.0.1"]\n', extra=setup)
    main_before = repo.git("rev-parse", "main")
    repo.write_plan(
        "s",
        f"""
        ### Task 1: A script
        **Type:** script

        ```bash
        echo made-by-the-script > made.txt
        python3 {ESCAPE} {repo.root} {home} {tag}
        python3 {FETCH} http://127.0.0.1:{http_server}/ok > fetched.txt
        if python3 {FETCH} http://localhost:{http_server}/no; then echo "reached a host not allowed"; exit 1; fi
        ```
        """,
    )
    r = repo.doit()
    assert r.returncode == 0, r.stderr + repo.hive("logs", "s:1").stdout
    assert repo.file_on_main("made.txt") == "made-by-the-script\n"
    assert repo.file_on_main("fetched.txt") == "hello /ok\n"
    nothing_escaped(repo, home, tag)
    nothing_escaped(repo, home, f"setup-{tag}")
    assert repo.git("rev-parse", "main^1") == main_before, "main moved only by Hive's merge"
    assert repo.status_json()["tasks"][0]["refused_hosts"] == [f"localhost:{http_server}"]


def test_doctor_says_the_agents_run_sandboxed(repo):
    repo.configure(sandbox=ON)
    r = repo.hive("doctor")
    assert "bubblewrap works: agents run sandboxed ([sandbox] mode = 'on')" in r.stdout, r.stdout


def test_a_verify_runs_in_the_sandbox_writing_only_the_checkout(repo, http_server):
    home, tag = with_a_key(), f"verify-{uuid.uuid4().hex[:8]}"
    repo.configure(sandbox=ON + 'allow = ["127.0.0.1"]\n')
    verify = (
        f"python3 {ESCAPE} {repo.root} {home} {tag} && "
        f"if python3 {FETCH} http://localhost:{http_server}/no; then exit 1; fi; "
        f'test -z "$GITHUB_TOKEN" && python3 {FETCH} http://127.0.0.1:{http_server}/ok && '
        "touch checked-here.txt && test -f a.txt"
    )
    repo.write_plan(
        "s",
        f"""
        ### Task 1: Checked in the sandbox
        **Verify:** {verify}

        fake: write a.txt a
        fake: commit work
        fake: signal done
        """,
    )
    r = repo.doit(env={**os.environ, "GITHUB_TOKEN": "ghp_x"})
    assert r.returncode == 0, r.stderr + repo.hive("logs", "s:1").stdout
    assert repo.file_on_main("a.txt") == "a\n"
    nothing_escaped(repo, home, tag)
    assert repo.status_json()["tasks"][0]["refused_hosts"] == [f"localhost:{http_server}"]


def _program_in_tmp(tmp: Path) -> Path:
    """An agent program right in a folder of /tmp, outside the repository (issue 43: its
    sandbox's /tmp, its own, did not hold it)."""
    program = tmp / "agent.sh"
    program.write_text('#!/bin/sh\nexec "$@"\n')
    program.chmod(0o755)
    return program


def test_an_agent_program_under_tmp_outside_the_repository_runs_in_the_sandbox(repo):
    import tempfile

    from conftest import FAKE_AGENT

    tmp = Path(tempfile.mkdtemp(dir="/tmp", prefix="hive-tools-"))
    try:
        program = _program_in_tmp(tmp)
        command = [str(program), sys.executable, str(FAKE_AGENT), "{context_file}"]
        repo.configure(sandbox=ON, extra=f"\n[agents.mine]\ncommand = {json.dumps(command)}\n")
        repo.write_plan(
            "t", "# T\n\n### Task 1: W\nfake: write a.txt a\nfake: commit a\nfake: signal done\n", front="agent: mine\n"
        )
        doctor = repo.hive("doctor")
        assert f"✓ [mine] in the sandbox: `{program}` is found in an agent's sandbox" in doctor.stdout, doctor.stdout
        r = repo.doit()
        assert r.returncode == 0, r.stdout + r.stderr
        assert repo.state("t", "1")["state"] == "done" and repo.file_on_main("a.txt") == "a\n"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_doit_refuses_to_start_an_agent_its_sandbox_cannot_see_and_says_why(repo):
    import tempfile

    tmp = Path(tempfile.mkdtemp(dir="/tmp", prefix="hive-tools-"))
    try:
        program = _program_in_tmp(tmp)
        repo.configure(
            sandbox=ON + f"hide = [{json.dumps(str(tmp))}]\n",
            extra=f'\n[agents.mine]\ncommand = ["{program}", "{{context_file}}"]\n',
        )
        repo.write_plan("t", "# T\n\n### Task 1: W\nfake: signal done\n", front="agent: mine\n")
        r = repo.doit()
        assert r.returncode == 3, r.stdout + r.stderr
        assert (
            f"agent profile 'mine' (used by plan t task 1): `{program}` cannot start in an agent's sandbox" in r.stderr
        )
        assert repo.state("t", "1") == {"state": "planned"} and repo.worktrees() == []
        doctor = repo.hive("doctor")
        assert doctor.returncode == 1 and "✗ [mine] in the sandbox:" in doctor.stdout, doctor.stdout
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
