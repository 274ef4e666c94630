"""hive/adapters/envexec.py run as agents' panes run it: exactly the environment of its file,
the file gone after, and a file it cannot read told, never half-used."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hive.adapters import envexec

ODD = {
    "PATH": "/usr/bin:/bin",
    "WITH_EQUALS": "a=b==c",
    "LINES": "one\ntwo\n",
    "UNICODE": "réseau — 网络 🐝",
    "RAW_BYTES": os.fsdecode(b"\xff\xfe"),  # not UTF-8: kept byte for byte, as the kernel does
    "EMPTY": "",
}
SHOW = "import os, sys; sys.stdout.buffer.write(b''.join(k + b'=' + v + b'\\0' for k, v in os.environb.items()))"


def run(path: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-I", "-S", envexec.__file__, path, sys.executable, "-I", "-c", SHOW]
    return subprocess.run(argv, capture_output=True, env=env, timeout=30, check=False)


def test_the_program_gets_exactly_the_files_environment_and_the_file_is_gone(tmp_path: Path):
    env_file = tmp_path / "agent.env"
    env_file.write_bytes(envexec.encode(ODD))
    r = run(str(env_file), env={"PATH": "/usr/bin:/bin", "NOT_PASSED": "x"})
    assert r.returncode == 0, r.stderr
    got = dict(entry.split(b"=", 1) for entry in r.stdout.split(b"\0")[:-1])
    assert got.pop(b"LC_CTYPE", None) in (None, b"C.UTF-8")  # Python may set it for itself (PEP 538)
    assert got == {os.fsencode(k): os.fsencode(v) for k, v in ODD.items()}
    assert not env_file.exists(), "it may hold credentials"


def test_dash_keeps_its_own_environment(tmp_path: Path):
    r = run("-", env={"PATH": "/usr/bin:/bin", "KEPT": "yes"})
    assert r.returncode == 0 and b"KEPT=yes\0" in r.stdout


@pytest.mark.parametrize("data", [b"PATH=/bin\0HALF=writ", b"NOEQUALS\0"])
def test_a_file_it_cannot_read_whole_runs_nothing(tmp_path: Path, data: bytes):
    env_file = tmp_path / "agent.env"
    env_file.write_bytes(data)
    r = run(str(env_file))
    assert r.returncode == 127 and r.stdout == b""
    assert b"hive: cannot read the agent's environment from" in r.stderr


@pytest.mark.parametrize("env", [{"A=B": "x"}, {"": "x"}, {"A": "x\0y"}])
def test_no_environment_can_hold_these(env: dict[str, str]):
    with pytest.raises(ValueError, match="no environment can hold"):
        envexec.encode(env)
