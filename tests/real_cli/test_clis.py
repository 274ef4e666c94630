"""tests/clis.py's cache of installed CLIs, with a stand-in `npm` (the real installs are
exercised by every test that takes the `cli_paths` fixture)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import clis
import pytest

FAKE_NPM = """#!/bin/sh
# a stand-in for `npm install --prefix DIR ... PKGS`: counts its runs, fails on demand
echo run >> "$FAKE_NPM_LOG"
[ -n "$FAKE_NPM_FAIL" ] && { echo "npm ERR! 404 Not Found - $FAKE_NPM_FAIL" >&2; exit 1; }
sleep "${FAKE_NPM_SLEEP:-0}"
prefix="$3"
mkdir -p "$prefix/node_modules/.bin"
for cli in claude codex gemini; do printf '#!/bin/sh\\necho %s\\n' $cli > "$prefix/node_modules/.bin/$cli"; done
chmod +x "$prefix"/node_modules/.bin/*
"""


@pytest.fixture
def fake_npm(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = isolated / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    log = isolated / "npm.log"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NPM_LOG", str(log))
    return log


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_installs_once_then_reuses_the_cache(isolated, fake_npm):
    cache = isolated / "cache"
    bin_dir = clis.ensure_installed("codex", cache)
    assert bin_dir == cache / "npm" / "node_modules" / ".bin"
    assert (bin_dir / "codex").exists() and (cache / "npm").is_symlink()
    assert clis.ensure_installed("claude", cache) == bin_dir
    assert runs(fake_npm) == 1


def test_concurrent_callers_install_once(isolated, fake_npm, monkeypatch):
    monkeypatch.setenv("FAKE_NPM_SLEEP", "0.5")
    cache = isolated / "cache"
    got: list[Path] = []
    threads = [threading.Thread(target=lambda: got.append(clis.ensure_installed("gemini", cache))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 3 and len(set(got)) == 1
    assert runs(fake_npm) == 1


def test_a_failed_install_raises_with_npms_output_and_leaves_nothing_that_looks_installed(
    isolated, fake_npm, monkeypatch
):
    cache = isolated / "cache"
    monkeypatch.setenv("FAKE_NPM_FAIL", "@openai/codex")
    with pytest.raises(clis.CLIInstallError, match="npm ERR! 404 Not Found - @openai/codex"):
        clis.ensure_installed("codex", cache)
    assert sorted(p.name for p in cache.iterdir()) == [".lock"]
    monkeypatch.delenv("FAKE_NPM_FAIL")
    assert (clis.ensure_installed("codex", cache) / "codex").exists()


def test_a_killed_install_is_redone_and_its_leftovers_removed(isolated, fake_npm):
    cache = isolated / "cache"
    half = cache / "npm.killed"
    (half / "node_modules" / ".bin").mkdir(parents=True)  # no marker, no symlink to it
    clis.ensure_installed("claude", cache)
    assert runs(fake_npm) == 1
    assert not half.exists()


def test_other_pins_install_again(isolated, fake_npm, monkeypatch):
    cache = isolated / "cache"
    first = (cache / "npm").resolve() if clis.ensure_installed("claude", cache) else None
    monkeypatch.setitem(clis.NPM_PACKAGES, "claude", "@anthropic-ai/claude-code@9.9.9")
    clis.ensure_installed("claude", cache)
    assert runs(fake_npm) == 2
    assert first is not None and not first.exists() and (cache / "npm").resolve().exists()


def test_an_unknown_cli_is_refused():
    with pytest.raises(ValueError, match="unknown CLI"):
        clis.cli_bin_dir("cursor")
