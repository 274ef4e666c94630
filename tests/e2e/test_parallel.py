"""`doit -n N`: agents really overlap, dependents wait for merged work, modules and
Parallel-safe: no are never concurrent, max_workers caps everything."""

from __future__ import annotations

import subprocess


def intervals(repo) -> dict[str, tuple[float, float]]:
    """task → (agent start, agent signal) from the fake agent's own log."""
    out: dict[str, list[float]] = {}
    for task, _, at, event in repo.timeline():
        out.setdefault(task, [at, at])
        if event == "start":
            out[task][0] = at
        else:
            out[task][1] = at
    return {k: (v[0], v[1]) for k, v in out.items()}


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_n2_runs_two_agents_at_once(repo):
    repo.write_plan(
        "p",
        """
    ### Task a: Left
    fake: wait-start p:b 20
    fake: write a.txt a
    fake: commit a
    fake: signal done

    ### Task b: Right
    fake: wait-start p:a 20
    fake: write b.txt b
    fake: commit b
    fake: signal done
    """,
    )
    r = repo.doit("-n", "2")
    assert r.returncode == 0, r.stderr
    iv = intervals(repo)
    assert overlap(iv["p:a"], iv["p:b"]), iv
    workers = {e["task"]: e for e in repo.events() if e["to"] == "in_progress" and e["from"] == "planned"}
    assert set(workers) == {"p:a", "p:b"}
    states = [repo.state("p", t) for t in "ab"]
    assert {s["worker"] for s in states} == {"w1", "w2"}, "each agent has its own worker identity"
    assert all(s["session"].startswith(f"hive-{s['worker']}-") for s in states)
    assert repo.main_log().count("a") == 1 and repo.main_log().count("b") == 1


def test_dependents_start_only_after_their_dependencies_are_merged(repo):
    repo.write_plan(
        "d",
        """
    ### Task 1: Base
    fake: write base.txt base
    fake: commit base
    fake: signal done

    ### Task 2: Left
    **Depends on:** 1
    fake: wait-start d:3 20
    fake: write left.txt left
    fake: commit left
    fake: signal done

    ### Task 3: Right
    **Depends on:** 1
    fake: wait-start d:2 20
    fake: write right.txt right
    fake: commit right
    fake: signal done

    ### Task 4: Top
    **Depends on:** 2, 3
    **Verify:** test -f base.txt && test -f left.txt && test -f right.txt
    fake: write top.txt top
    fake: commit top
    fake: signal done
    """,
    )
    r = repo.doit("-n", "2")
    assert r.returncode == 0, r.stderr
    merged = {e["task"]: e["time"] for e in repo.events() if e["to"] == "done"}
    started = {e["task"]: e["time"] for e in repo.events() if e["to"] == "in_progress" and e["from"] == "planned"}
    assert started["d:2"] > merged["d:1"] and started["d:3"] > merged["d:1"]
    assert started["d:4"] > max(merged["d:2"], merged["d:3"])
    assert overlap(intervals(repo)["d:2"], intervals(repo)["d:3"])
    # each dependent branched from the main that already had its dependencies
    base4 = repo.state("d", "4")["history"][0]["base"]
    for dep in ("2", "3"):
        merge = repo.state("d", dep)["merge_commit"]
        ancestor = ["git", "-C", str(repo.root), "merge-base", "--is-ancestor", merge, base4]
        assert subprocess.run(ancestor).returncode == 0


def test_a_task_of_the_longest_chain_starts_first_when_its_dependency_merges(repo):
    """Task 6 waits for 5 while the fillers 1-4 are queued; when 5 merges, the free worker takes
    6 (longest chain first), not the next filler. doit alone put 6 behind every filler queued
    while it waited (hive.dodo.dispatch). Task 1 holds the other worker until 6 has started."""
    fillers = "".join(
        f"""
    ### Task {n}: Filler {n}
    {"fake: wait-start o:6 60" if n == 1 else ""}
    fake: write f{n}.txt {n}
    fake: commit f{n}
    fake: signal done
"""
        for n in range(1, 5)
    )
    chain = "".join(
        f"""
    ### Task {n}: Chain {n}
    {f"**Depends on:** {n - 1}" if n > 5 else ""}
    fake: write c{n}.txt {n}
    fake: commit c{n}
    fake: signal done
"""
        for n in range(5, 8)
    )
    repo.write_plan("o", fillers + chain)
    r = repo.doit("-n", "2")
    assert r.returncode == 0, r.stderr
    starts = repo.starts()
    assert sorted(starts[:2]) == ["o:1", "o:5"], starts  # Hive's order: 5, 6, 1, 2, 3, 4, 7
    assert starts[2] == "o:6", starts


def test_tasks_sharing_a_module_never_overlap(repo):
    repo.write_plan(
        "m",
        """
    ### Task x: First in the module
    **Module:** src/models
    fake: sleep 1
    fake: write x.txt x
    fake: commit x
    fake: signal done

    ### Task y: Second in the module
    **Module:** src/models
    fake: sleep 1
    fake: write y.txt y
    fake: commit y
    fake: signal done

    ### Task z: Elsewhere
    fake: wait-start m:y 30
    fake: write z.txt z
    fake: commit z
    fake: signal done
    """,
    )
    r = repo.doit("-n", "3")
    assert r.returncode == 0, r.stdout
    iv = intervals(repo)
    assert not overlap(iv["m:x"], iv["m:y"]), iv
    assert overlap(iv["m:z"], iv["m:y"]), "other tasks still run in parallel"
    assert "waiting for another task in module 'src/models'" in r.stdout


def test_parallel_safe_no_runs_alone(repo):
    repo.write_plan(
        "s",
        """
    ### Task a: Alone
    **Parallel-safe:** no
    fake: sleep 1
    fake: signal done

    ### Task b: Normal
    fake: sleep 1
    fake: signal done

    ### Task c: Normal too
    fake: sleep 1
    fake: signal done
    """,
    )
    r = repo.doit("-n", "3")
    assert r.returncode == 0, r.stderr
    iv = intervals(repo)
    assert not overlap(iv["s:a"], iv["s:b"]) and not overlap(iv["s:a"], iv["s:c"]), iv


def test_max_workers_caps_parallel_agents_with_a_clear_message(repo):
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text() + "\n[parallel]\nmax_workers = 1\n")
    repo.write_plan(
        "c",
        """
    ### Task a: One
    fake: sleep 0.5
    fake: signal done

    ### Task b: Two
    fake: sleep 0.5
    fake: signal done
    """,
    )
    r = repo.doit("-n", "2")
    assert r.returncode == 0, r.stdout
    assert "doit -n 2, but [parallel] max_workers = 1" in r.stdout
    iv = intervals(repo)
    assert not overlap(iv["c:a"], iv["c:b"]), iv
    assert {repo.state("c", t)["worker"] for t in "ab"} == {"w1"}
