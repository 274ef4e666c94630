"""`hive --version | head -1`, `hive --help | head`: a reader that closes the pipe early gets
what it read, and Hive leaves quietly (exit 0, no traceback), as it does for a verb's output."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_output_to_a_pipe_its_reader_closed_is_no_traceback(args: list[str]):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before Hive writes a byte
    try:
        r = subprocess.run(
            [sys.executable, "-m", "hive", *args], stdout=write, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(write)
    assert "Traceback" not in r.stderr and "Error" not in r.stderr, r.stderr
    assert r.returncode == 0
