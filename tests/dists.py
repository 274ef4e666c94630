"""Hive's wheel and sdist as a user gets them, built once per source tree and cached.

    from dists import built
    wheel, sdist = built()  # -> <cache>/<tree hash>/hive_agents-*.whl and .tar.gz

The tree is what `git ls-files` shows (tracked and untracked-but-not-ignored files of this
checkout), copied to a scratch directory first: a stale `build/` or `*.egg-info` of an earlier
in-place build can neither add a module that no longer exists nor hide one that is missing.
`python -m build` makes the sdist from that copy and the wheel *from the sdist*, so a file the
sdist forgets is missing from the wheel too. Both land in ``$HIVE_TEST_DIST_CACHE`` (else
``~/.cache/hive-test-dists`` of the real user) under the tree's hash: an unchanged tree is
built once, any edit builds again. A build goes to a fresh directory that is renamed into
place once complete, under a lock, so a killed build never looks like a cached one.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clis import REAL_HOME, install_env

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("HIVE_TEST_DIST_CACHE") or REAL_HOME / ".cache" / "hive-test-dists")
BUILD_TIMEOUT = 600.0
STALE = 24 * 3600.0


class BuildError(RuntimeError):
    """`python -m build` or pip failed; the message carries its output."""


def run(cmd: list[str], what: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    try:
        r = subprocess.run(
            cmd, cwd=cwd, env=env or install_env(), capture_output=True, text=True, timeout=BUILD_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except subprocess.TimeoutExpired as e:
        raise BuildError(f"{what}: timed out after {BUILD_TIMEOUT}s: {' '.join(cmd)}") from e
    if r.returncode != 0:
        raise BuildError(f"{what} failed (exit {r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def tree_files() -> list[str]:
    out = run(["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard"], "git ls-files", env=None)
    return sorted(p for p in out.split("\0") if p and os.path.lexists(ROOT / p))


def tree_hash(files: list[str]) -> str:
    h = hashlib.sha256()
    for rel in files:
        path = ROOT / rel
        body = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
        h.update(rel.encode() + b"\0" + hashlib.sha256(body).digest())
    return h.hexdigest()[:16]


def version() -> str:
    """The version a build of this checkout carries (setuptools-scm: its commit, and whether the
    tree was modified): the copy built below has no git history to tell it."""
    return run([sys.executable, "-m", "setuptools_scm"], "python -m setuptools_scm", cwd=ROOT, env=None).strip()


def built() -> tuple[Path, Path]:
    """(wheel, sdist) of the current tree, building them if the cache has not got them."""
    files = tree_files()
    named = version()
    target = CACHE / f"{tree_hash(files)}-{hashlib.sha256(named.encode()).hexdigest()[:8]}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not target.is_dir():
            _build(files, target, named)
    wheels, sdists = sorted(target.glob("*.whl")), sorted(target.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        raise BuildError(f"{target} holds {wheels + sdists}, not one wheel and one sdist")
    return wheels[0], sdists[0]


def _build(files: list[str], target: Path, named: str) -> None:
    work = Path(tempfile.mkdtemp(prefix="build.", dir=CACHE))
    try:
        src = work / "src"
        for rel in files:
            dest = src / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if (ROOT / rel).is_symlink():
                dest.symlink_to(os.readlink(ROOT / rel))
            else:
                shutil.copy2(ROOT / rel, dest)
        # sdist first, then the wheel built from it (build's default with neither flag)
        env = {**install_env(), "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_HIVE_AGENTS": named}
        run([sys.executable, "-m", "build", "--outdir", str(work / "dist"), str(src)], "python -m build", env=env)
        os.rename(work / "dist", target)  # atomic: a complete build or none
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for old in CACHE.iterdir():  # earlier trees' builds and leftovers of killed ones, once
        # surely unused (another checkout's test may be installing one right now)
        if old != target and old.is_dir() and time.time() - old.stat().st_mtime > STALE:
            shutil.rmtree(old, ignore_errors=True)


if __name__ == "__main__":  # python tests/dists.py: build (or find) and print the paths
    print(*built(), sep="\n")
