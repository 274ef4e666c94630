"""Paths with `#` through tmux (hive.adapters.tmux), which expands formats in a session's start
directory and in pipe-pane's command: `#S` is the session's name, `#(...)` runs a command."""

from __future__ import annotations

import os
import time
from pathlib import Path

from hive.adapters import tmux


def test_a_folder_named_with_tmux_formats_is_where_the_agent_runs_and_logs(tmp_path: Path):
    folder = tmp_path / "C#Sharp ##{pane_id} #(touch formatted)"
    folder.mkdir()
    log, exit_file, where = folder / "logs" / "task.log", folder / "exit", folder / "pwd"
    program = tmux.Program(
        ["sh", "-c", 'pwd > "$0"; echo agent-words', str(where)], {"PATH": os.environ["PATH"]}, tmp_path / "env"
    )
    tmux.new_session("formats", folder, program, log, exit_file)
    try:
        deadline = time.monotonic() + 30
        while not (exit_file.exists() and log.exists() and b"agent-words" in log.read_bytes()):
            assert time.monotonic() < deadline, sorted(p.name for p in folder.rglob("*"))
            time.sleep(0.05)
    finally:
        tmux.kill_session("formats")
    assert where.read_text().strip() == str(folder)
    assert not (folder / "formatted").exists() and not (Path.cwd() / "formatted").exists()


def test_a_literal_is_what_tmux_shows():
    assert tmux.literal("C#Sharp #{pane_id} ##") == "C##Sharp ##{pane_id} ####"
