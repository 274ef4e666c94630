"""hive/sandbox/gitdir.py with real git: an attempt's private git directory, and bringing the
agent's commits back into the task's branch — once, after a kill -9 at any line, whatever the
agent did to its directory's config."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hive.adapters import git
from hive.sandbox import gitdir
from hive.store.files import NotAFile

BRANCH = "hive/t-1-a1"


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env={**os.environ, **(env or {})}
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(root, worktree, private git directory) of an attempt on BRANCH."""
    root = tmp_path / "repo"
    root.mkdir()
    run(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    run(root, "add", "a.txt")
    run(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "initial")
    wt = tmp_path / "wt"
    run(root, "worktree", "add", "-q", "-b", BRANCH, str(wt), "main")
    private = tmp_path / "gitdirs" / "t-1-a1"
    start = run(root, "rev-parse", "main")
    shown = gitdir.create(private, wt, BRANCH, {BRANCH: start, "main": start}, tmp_path / "excludes")
    assert shown.read_text() == f"gitdir: {private}\n"
    return root, wt, private


def agent_commit(wt: Path, private: Path, name: str, *extra: str) -> str:
    """A commit as the sandboxed agent makes it: through its own git directory."""
    env = {"GIT_DIR": str(private), "GIT_WORK_TREE": str(wt)}
    (wt / name).write_text(f"{name}\n")
    run(wt, "add", name, env=env)
    run(wt, "-c", "user.name=agent", "-c", "user.email=a@a", "commit", "-q", *extra, "-m", name, env=env)
    return run(wt, "rev-parse", "HEAD", env=env)


def test_the_agents_commits_reach_the_branch_and_nothing_else_moves(repo):
    root, wt, private = repo
    main = run(root, "rev-parse", "main")
    run(wt, "update-ref", "refs/heads/main", main, env={"GIT_DIR": str(private)})  # its own main only
    tip = agent_commit(wt, private, "b.txt")
    assert run(root, "rev-parse", BRANCH) == main, "the main repository is untouched while it works"
    assert "brought its commits back" in gitdir.bring_back(root, wt, private, BRANCH)
    assert run(root, "rev-parse", BRANCH) == tip and run(root, "rev-parse", "main") == main
    assert run(wt, "status", "--porcelain") == "", "the worktree's index matches its commit"
    assert gitdir.bring_back(root, wt, private, BRANCH) == "", "nothing new the second time"
    assert not list((root / ".git" / "objects" / "pack").glob("*.pack")), "a few objects are stored loose"


def test_a_kill_between_the_ref_and_the_index_is_finished_by_the_next_call(repo):
    root, wt, private = repo
    tip = agent_commit(wt, private, "b.txt")
    gitdir._copy_objects(root, private, tip, run(root, "rev-parse", BRANCH))
    git.update_ref(root, f"refs/heads/{BRANCH}", tip)  # ...killed here: index and marker not yet
    gitdir.bring_back(root, wt, private, BRANCH)
    assert run(wt, "status", "--porcelain") == ""
    assert (private / gitdir.SYNCED).read_text().strip() == tip


def test_history_the_agent_rewrote_is_what_the_branch_becomes(repo):
    root, wt, private = repo
    agent_commit(wt, private, "b.txt")
    gitdir.bring_back(root, wt, private, BRANCH)
    amended = agent_commit(wt, private, "c.txt", "--amend")
    gitdir.bring_back(root, wt, private, BRANCH)
    assert run(root, "rev-parse", BRANCH) == amended
    assert run(root, "cat-file", "-t", amended) == "commit", "its objects are the main repository's own now"


def test_packed_refs_are_read_and_a_missing_branch_brings_nothing(repo):
    root, wt, private = repo
    tip = agent_commit(wt, private, "b.txt")
    run(wt, "pack-refs", "--all", env={"GIT_DIR": str(private)})
    assert not (private / "refs" / "heads" / BRANCH).exists()
    assert gitdir.tip(private, BRANCH) == tip
    (private / "packed-refs").write_text("# nothing\n")
    assert gitdir.bring_back(root, wt, private, BRANCH) == ""


def test_hive_never_runs_what_the_agents_git_config_says(repo, tmp_path):
    root, wt, private = repo
    marker = tmp_path / "pwned"
    with open(private / "config", "a") as f:
        f.write(f"[core]\n\tfsmonitor = touch {marker}\n\thooksPath = {tmp_path}\n")
        f.write(f"[uploadpack]\n\tpackObjectsHook = touch {marker}\n")
    env = {"GIT_DIR": str(private), "GIT_WORK_TREE": str(wt), "GIT_CONFIG_GLOBAL": "/dev/null"}
    (wt / "b.txt").write_text("b\n")
    subprocess.run(["git", "-c", "core.fsmonitor=false", "add", "b.txt"], cwd=wt, env={**os.environ, **env}, check=True)
    subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qm", "b"],
        cwd=wt,
        env={**os.environ, **env},
        check=True,
    )
    assert gitdir.bring_back(root, wt, private, BRANCH)
    assert not marker.exists()


def test_remove_leaves_nothing(repo):
    _, _, private = repo
    gitdir.remove(private)
    assert not private.exists() and not gitdir.gitfile(private).exists()


def test_its_config_reads_back_as_written_and_starts_no_maintenance(tmp_path: Path):
    """A path with a `#` (a comment in a git config file, unquoted), quotes and a backslash."""
    root = tmp_path / 'my #repo; "x" \\ y'
    root.mkdir()
    run(root, "init", "-q", "-b", "main")
    run(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "initial")
    wt = tmp_path / "wt"
    run(root, "worktree", "add", "-q", "-b", BRANCH, str(wt), "main")
    private, excludes = tmp_path / "private", root / ".hive" / "excludes" / "t-1-a1"
    start = run(root, "rev-parse", "main")
    gitdir.create(private, wt, BRANCH, {BRANCH: start}, excludes)
    env = {"GIT_DIR": str(private), "GIT_WORK_TREE": str(wt)}
    assert run(wt, "config", "core.excludesFile", env=env) == str(excludes)
    assert run(wt, "config", "--bool", "maintenance.auto", env=env) == "false"
    excludes.parent.mkdir(parents=True)
    excludes.write_text("/brief.md\n")
    (wt / "brief.md").write_text("Hive's\n")
    assert run(wt, "status", "--porcelain", env=env) == "", "the excludes file is the one git reads"
    trace = tmp_path / "trace"
    agent_commit(wt, private, "b.txt")  # GIT_TRACE would show `git maintenance run --auto`
    run(
        wt,
        "-c",
        "user.name=a",
        "-c",
        "user.email=a@a",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "c",
        env={**env, "GIT_TRACE": str(trace)},
    )
    assert "maintenance" not in trace.read_text()


# --- what the agent left in its directory is checked before git reads it (issue 37) ---------------


def _commit_then(wt: Path, private: Path, trap) -> str:
    tip = agent_commit(wt, private, "b.txt")
    trap(private)
    return tip


@pytest.mark.parametrize(
    ("trap", "named"),
    [
        (lambda p: (p / "refs" / "heads" / BRANCH).unlink() or os.mkfifo(p / "refs" / "heads" / BRANCH), BRANCH),
        (lambda p: os.mkfifo(p / "objects" / "info" / "commit-graph"), "objects/info/commit-graph"),
        (lambda p: (p / "objects" / "ab").mkdir() or os.symlink("/dev/zero", p / "objects" / "ab" / "cd"), "ab/cd"),
        (lambda p: (p / "objects" / "info" / "alternates").write_text("/etc\n"), "objects/info/alternates"),
        (lambda p: (p / gitdir.SYNCED).unlink() or os.mkfifo(p / gitdir.SYNCED), gitdir.SYNCED),
    ],
)
def test_a_trap_in_the_private_directory_is_refused_before_git_reads_it_and_nothing_moves(repo, trap, named):
    root, wt, private = repo
    before = run(root, "rev-parse", BRANCH)
    _commit_then(wt, private, trap)
    with pytest.raises(NotAFile) as e:
        gitdir.bring_back(root, wt, private, BRANCH)
    assert named in str(e.value.path)
    assert run(root, "rev-parse", BRANCH) == before


def big_commit(wt: Path, private: Path, *small: str) -> str:
    """The agent's commit of a 3,000-byte big.bin beside the small text files `small`."""
    env = {"GIT_DIR": str(private), "GIT_WORK_TREE": str(wt)}
    for name in small:
        (wt / name).write_text(f"{name}\n")
    (wt / "big.bin").write_bytes(os.urandom(3000))
    run(wt, "add", "-A", env=env)
    run(wt, "-c", "user.name=agent", "-c", "user.email=a@a", "commit", "-q", "-m", "big", env=env)
    return run(wt, "rev-parse", "HEAD", env=env)


def test_new_files_over_the_limit_are_not_copied_and_those_under_it_are(repo):
    root, wt, private = repo
    agent_commit(wt, private, "small.txt")
    tip = big_commit(wt, private)
    with pytest.raises(gitdir.TooBig) as e:
        gitdir.bring_back(root, wt, private, BRANCH, max_bytes=1000)
    assert e.value.files == [("big.bin", 3000)]
    assert subprocess.run(["git", "cat-file", "-e", tip], cwd=root).returncode != 0, "never copied"
    assert gitdir.bring_back(root, wt, private, BRANCH, max_bytes=5000)
    assert run(root, "rev-parse", BRANCH) == tip


def test_a_usual_bring_back_under_a_limit_walks_the_agents_objects_once(repo, monkeypatch):
    """Its pack leaves big files out and its strict store would refuse it: the big files are
    looked for only then (issue 44: one git command less on every sandboxed task's way)."""
    root, wt, private = repo
    tip = agent_commit(wt, private, "b.txt")

    def never(*_args: object, **_kwargs: object) -> list[tuple[str, int]]:
        raise AssertionError("looked for big files in a pack that had none")

    monkeypatch.setattr(git, "big_files", never)
    assert gitdir.bring_back(root, wt, private, BRANCH, max_bytes=1000)
    assert run(root, "rev-parse", BRANCH) == tip


def test_a_big_file_among_many_new_objects_is_refused_with_nothing_left_in_the_repository(repo):
    """More objects than git.UNPACK_LIMIT are stored as a pack, whose store would leave a
    half-written one when it refuses: they are looked through first."""
    root, wt, private = repo
    tip = big_commit(wt, private, *(f"f{n}.txt" for n in range(git.UNPACK_LIMIT)))
    with pytest.raises(gitdir.TooBig) as e:
        gitdir.bring_back(root, wt, private, BRANCH, max_bytes=1000)
    assert e.value.files == [("big.bin", 3000)]
    assert subprocess.run(["git", "cat-file", "-e", tip], cwd=root).returncode != 0, "never copied"
    assert not list((root / ".git" / "objects" / "pack").iterdir()), "no pack, not even half of one"
    assert gitdir.bring_back(root, wt, private, BRANCH, max_bytes=5000)
    assert run(root, "rev-parse", BRANCH) == tip
