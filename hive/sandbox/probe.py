"""Can an agent's program start in its sandbox? `hive doctor` and doit's pre-flight ask before a
run, without running the program (a check that runs the user's own agent runs it with the user's
rights: issue 43): inside a sandbox laid out as the agent's — its binds, its hidden folders, a
scratch folder for its checkout, no network — a few lines of Python find the program by the
agent's PATH, as exec would, and the interpreter its `#!` line names."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from hive.sandbox import bwrap, policy
from hive.settings.config import Config

TIMEOUT = 10.0

# Run inside the sandbox as `python -I -S -c FIND PROGRAM PATH`: prints why PROGRAM cannot start
# there (exit 1), or nothing. Standard library only, no site: it starts in a few milliseconds.
FIND = r"""
import os, sys
name, path = sys.argv[1], sys.argv[2]
def found(p):
    return os.path.isfile(p) and os.access(p, os.X_OK)
def which(n):
    if os.sep in n:
        return n if found(n) else None
    return next((os.path.join(d, n) for d in path.split(os.pathsep) if d and found(os.path.join(d, n))), None)
program = which(name)
if program is None:
    there = os.path.exists(name) if os.sep in name else False
    sys.exit(f"{name!r} is not executable in the sandbox" if there else f"{name!r} is not there in the sandbox")
try:
    with open(program, "rb") as f:
        first = f.read(256).split(b"\n", 1)[0]
except OSError as e:
    sys.exit(f"{program!r} cannot be read in the sandbox: {e.strerror}")
if first.startswith(b"#!"):
    words = first[2:].decode(errors="replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
        if words and which(words[0]) is None:
            sys.exit(f"{program!r} runs {words[0]!r} (its #! line), which is not on PATH in the sandbox")
    elif words and not found(words[0]):
        sys.exit(f"{program!r} runs {words[0]!r} (its #! line), which is not there in the sandbox")
"""


def cannot_start(config: Config, root: Path, program: str, env: Mapping[str, str]) -> str:
    """Why `program` (a profile's command[0], run from a checkout of `root` with `env`) would
    not start in an agent's sandbox here; "" when it would, or when agents run unsandboxed."""
    if not policy.sandboxed(config):
        return ""
    with tempfile.TemporaryDirectory(prefix="hive-probe-") as scratch:
        checkout = Path(scratch)
        rules = replace(policy.rules(config), network="none")
        box = policy.Box(root, (program,), (checkout,), f"probe {scratch}", checkout / "refused")
        view, _ = policy.layout(rules, box)
        python = os.path.realpath(sys.executable)
        argv = bwrap.command(view, [python, "-I", "-S", "-c", FIND, program, env.get("PATH", os.defpath)])
        try:
            r = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=TIMEOUT, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"the sandbox did not answer ({e})"
    if r.returncode == 0:
        return ""
    said = (r.stderr or r.stdout).strip().splitlines()
    return said[-1] if said else f"the check in the sandbox exited with {r.returncode}"
