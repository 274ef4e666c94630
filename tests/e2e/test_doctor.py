"""`hive doctor`, and doit's cheap check of the same things before a run, as a user
meets them: a real repo set up by `hive init`, approved plans, real `doit` runs."""

from __future__ import annotations

import json

GHOST = """
[agents.ghost]
command = ["hive-test-ghost-agent", "{context_file}"]
"""

PLAN = """
# Work

### Task 1: First
fake: write one.txt one
fake: commit one
fake: signal done

### Task 2: Scripted
**Type:** script

```sh
echo scripted > s.txt && git add s.txt && git commit -qm scripted
```

### Task 3: Third
**Depends on:** 1
fake: signal done
"""


def test_doctor_passes_for_an_agent_profile_whose_program_exists(repo):
    repo.write_plan("work", PLAN)
    r = repo.hive("doctor")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"hive doctor: {repo.root}"
    for start in ("✓ git: git version", "✓ tmux: tmux", "✓ git identity: author Test Author", "✓ main branch:"):
        assert any(line.startswith(start) for line in lines), (start, r.stdout)
    [fake] = [line for line in lines if line.startswith("✓ [fake] binary: ")]
    assert fake.endswith("(used by plan work tasks 1, 3)") and "Python 3." in fake
    assert "✗" not in r.stdout and lines[-1].endswith("0 failed")
    data = json.loads(repo.hive("doctor", "--json").stdout)
    assert data["ok"] is True and {"name", "status", "detail", "fix", "profile"} <= set(data["checks"][0])


def test_doctor_fails_with_the_fix_when_a_profiles_program_is_missing(repo):
    repo.configure(extra=GHOST)
    repo.write_plan("work", PLAN, front="agent: ghost\n")
    r = repo.hive("doctor")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    lines = r.stdout.splitlines()
    at = lines.index("✗ [ghost] binary: `hive-test-ghost-agent` is not on PATH (used by plan work tasks 1, 3)")
    assert lines[at + 1] == "    fix: install it or set [agents.ghost] command in .hive/config.toml"
    assert lines[-1].endswith("1 failed")
    data = json.loads(repo.hive("doctor", "--json").stdout)
    assert data["ok"] is False
    assert [c["name"] for c in data["checks"] if c["status"] == "fail"] == ["[ghost] binary"]


def test_doit_with_a_missing_agent_program_stops_at_once_with_one_message(repo):
    repo.configure(extra=GHOST)
    repo.write_plan("work", PLAN, front="agent: ghost\n")
    r = repo.doit()
    assert r.returncode == 3, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert "Traceback" not in out
    message = (
        "hive: agent profile 'ghost' (used by plan work tasks 1, 3): `hive-test-ghost-agent` is not on PATH — "
        "install it or set [agents.ghost] command in .hive/config.toml; "
        "nothing was started (`hive doctor` checks everything)"
    )
    assert message in r.stderr and out.count("hive-test-ghost-agent") == 1, out
    # nothing started: no worktree, no branch, no state, no attempt, no agent
    assert repo.worktrees() == [] and "hive/" not in repo.git("branch", "--list", "hive/*")
    assert repo.events() == [] and not (repo.root / ".hive" / "state").exists()
    assert repo.state("work", "1") == {"state": "planned"} and repo.starts() == []
    # looking at the plan still works on a machine without the agent
    listed = repo.doit("list")
    assert listed.returncode == 0 and "work:1" in listed.stdout, listed.stderr


def test_doit_counts_only_the_plans_it_runs_and_the_tasks_not_done(repo):
    repo.configure(extra=GHOST)
    repo.write_plan("work", PLAN)  # the fake agent, which exists
    repo.write_plan("other", "# Other\n\n### Task 1: Ghostly\nfake: signal done\n", front="agent: ghost\n")
    assert repo.doit("other").returncode == 3
    r = repo.doit("work")
    assert r.returncode == 0, r.stderr
    assert [repo.state("work", i)["state"] for i in ("1", "2", "3")] == ["done", "done", "done"]
    # its tasks are done: a profile they would now name is not needed by this run
    repo.write_plan("work", PLAN, front="agent: ghost\n")
    again = repo.doit("work")
    assert again.returncode == 0 and "ghost" not in again.stderr, again.stderr


def test_doctor_never_runs_an_agent_program_it_does_not_know(repo):
    """Issue 43: `hive doctor` ran the user's own agent script as `--version`, in the checkout,
    and it committed to main."""
    tools = repo.root / "tools"
    tools.mkdir()
    agent = tools / "agent.sh"
    agent.write_text('#!/bin/sh\necho work >> work.txt\ngit add work.txt && git commit -qm "agent work"\nexit 3\n')
    agent.chmod(0o755)
    repo.git("add", "tools")
    repo.git("commit", "-qm", "the user's agent")
    repo.configure(extra='\n[agents.mine]\ncommand = ["./tools/agent.sh"]\n')
    repo.write_plan("work", "# Work\n\n### Task 1: Do it\nwork\n", front="agent: mine\n")
    before = repo.main_log()
    r = repo.hive("doctor")
    assert repo.main_log() == before and not (repo.root / "work.txt").exists(), r.stdout
    [line] = [line for line in r.stdout.splitlines() if line.startswith("✓ [mine] binary: ")]
    assert "(not run: Hive asks only the agent CLIs it knows for their version)" in line, r.stdout
    assert "✗" not in r.stdout, r.stdout
