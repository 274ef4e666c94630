"""The real agent CLIs (Claude Code, Codex, Gemini CLI, Aider), installed on first use into a
cache outside the repository and outside Hive's own environment.

    from tests.clis import cli_path
    cli_path("claude")  # -> <cache>/npm/node_modules/.bin/claude, installing it if needed

Layout of the cache (``$HIVE_TEST_CLI_CACHE``, else ``~/.cache/hive-test-clis`` of the real
user, whatever ``$HOME`` a test has set):

    .lock                     flock(2) held by whoever checks or installs
    npm -> npm.<random>/      symlink, swapped atomically once an install is complete
    npm.<random>/             ``npm install --prefix``; .hive-installed.json lists the pins
    aider -> aider.<random>/  the same for the venv holding aider-chat

An install goes into a fresh ``<kind>.<random>`` directory that nothing points at; only after
it succeeded and its marker (the pinned versions) is written does the symlink move to it. A
killed install leaves an unreferenced directory (removed by the next install), never a cache
that looks complete. A venv can't be renamed (its scripts name their interpreter by absolute
path), hence the symlink rather than a rename of the directory itself. A change of pins
installs again. A failed install raises `CLIInstallError` with npm's or pip's output: the
tests that need a CLI fail, they don't skip.
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NPM_PACKAGES: dict[str, str] = {
    "claude": "@anthropic-ai/claude-code@2.1.197",
    "codex": "@openai/codex@0.169.0",
    "gemini": "@google/gemini-cli@0.61.0",
}
AIDER_PACKAGE = "aider-chat==0.86.2"
CLIS = ("claude", "codex", "gemini", "aider")

# The real home, read from the password database: tests set $HOME to a temp dir.
REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)
CACHE = Path(os.environ.get("HIVE_TEST_CLI_CACHE") or REAL_HOME / ".cache" / "hive-test-clis")
MARKER = ".hive-installed.json"
INSTALL_TIMEOUT = 900.0


class CLIInstallError(RuntimeError):
    """npm or pip failed; the message carries its output."""


def _kind(name: str) -> str:
    if name in NPM_PACKAGES:
        return "npm"
    if name == "aider":
        return "aider"
    raise ValueError(f"unknown CLI {name!r}: one of {', '.join(CLIS)}")


def _pins(kind: str) -> list[str]:
    return sorted(NPM_PACKAGES.values()) if kind == "npm" else [AIDER_PACKAGE]


def _bin(kind: str, root: Path) -> Path:
    return root / "node_modules" / ".bin" if kind == "npm" else root / "bin"


def _complete(kind: str, cache: Path) -> bool:
    try:
        marker = json.loads((cache / kind / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("packages") == _pins(kind)


def install_env() -> dict[str, str]:
    """npm and pip read their registry settings and caches from the real home (tests set $HOME
    to a temp dir), and must not install into the test's venv or see this checkout."""
    drop = ("npm_", "NPM_CONFIG_PREFIX", "VIRTUAL_ENV", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["HOME"] = str(REAL_HOME)
    return env


def _base_python() -> str:
    """A plain python3 (not Hive's venv) to make aider's venv from."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = Path(sys.base_prefix) / "bin" / version
    if base.is_file() and os.access(base, os.X_OK):
        return str(base)
    found = shutil.which("python3")
    if not found:
        raise CLIInstallError("no python3 on PATH to make aider's venv with")
    return found


def _run(cmd: list[str], what: str) -> None:
    try:
        r = subprocess.run(
            cmd, capture_output=True, text=True, env=install_env(), timeout=INSTALL_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as e:
        raise CLIInstallError(
            f"{what}: timed out after {INSTALL_TIMEOUT}s: {' '.join(cmd)}\n{e.stdout!r}\n{e.stderr!r}"
        ) from e
    except OSError as e:
        raise CLIInstallError(f"{what}: cannot run {cmd[0]}: {e}") from e
    if r.returncode != 0:
        raise CLIInstallError(f"{what} failed (exit {r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")


def _install(kind: str, cache: Path) -> None:
    target = Path(tempfile.mkdtemp(prefix=f"{kind}.", dir=cache))
    try:
        if kind == "npm":
            _run(["npm", "install", "--prefix", str(target), "--no-audit", "--no-fund", *_pins(kind)], "npm install")
        else:
            _run([_base_python(), "-m", "venv", str(target)], "python3 -m venv")
            _run([str(target / "bin" / "pip"), "install", "-q", *_pins(kind)], "pip install")
        (target / MARKER).write_text(json.dumps({"packages": _pins(kind)}) + "\n")
        link = cache / kind
        tmp_link = cache / f".{kind}.link.{os.getpid()}"
        tmp_link.unlink(missing_ok=True)
        tmp_link.symlink_to(target.name)
        os.replace(tmp_link, link)  # atomic: the old install or the new one, never half of one
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    for old in cache.glob(f"{kind}.*"):  # earlier installs and leftovers of killed ones
        if old != target and old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)


@contextmanager
def _locked(cache: Path) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_installed(name: str, cache: Path | None = None) -> Path:
    """The bin directory holding `name`, installing its kind (all three npm CLIs in one
    install, or aider's venv) first if the cache lacks it or holds other versions."""
    kind = _kind(name)
    cache = cache or CACHE
    if not _complete(kind, cache):
        with _locked(cache):
            if not _complete(kind, cache):
                _install(kind, cache)
    return _bin(kind, cache / kind)


def cli_bin_dir(name: str) -> Path:
    return ensure_installed(name)


def cli_path(name: str) -> Path:
    path = cli_bin_dir(name) / name
    if not path.exists():
        raise CLIInstallError(f"{name} is not in {path.parent} after the install")
    return path


if __name__ == "__main__":  # python tests/clis.py [name...]: install and print the paths
    for cli in sys.argv[1:] or CLIS:
        print(cli, cli_path(cli))
