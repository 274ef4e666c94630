"""Hive installed as users install a command-line tool — `pip install .` or pipx, not editable —
starts and works. A hand-kept package list in setup.cfg once left four packages out of the
wheel, and every command failed with ModuleNotFoundError while every editable test passed
(issue 21)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from clis import install_env
from dists import ROOT, built, run
from dists import version as dist_version


def _install(dist: Path, venv: Path) -> Path:
    """A fresh venv holding `dist` and its dependencies, not editable; returns its bin dir.
    The venv has no pip of its own (ensurepip costs seconds): this pip installs into it."""
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], "python -m venv")
    run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", str(dist)],
        f"pip install {dist.name}",
    )
    return venv / "bin"


def _hive(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    # the new venv's commands on PATH instead of the test venv's; nothing of this checkout importable
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    outer = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([str(bin_dir), *(p for p in env["PATH"].split(os.pathsep) if p != outer)])
    argv = [str(bin_dir / "hive"), *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def test_the_wheel_and_the_sdist_installed_not_editable_run_the_demo_and_the_doctor(isolated: Path):
    wheel, sdist = built()
    with ThreadPoolExecutor(2) as pool:
        installs = pool.map(_install, (wheel, sdist), (isolated / "vw", isolated / "vs"))
        bins = dict(zip(("wheel", "sdist"), installs, strict=True))
    for kind, bin_dir in bins.items():
        where = subprocess.run(
            [str(bin_dir / "python"), "-c", "import hive; print(hive.__file__)"],
            cwd=isolated, env=install_env(), capture_output=True, text=True,
        ).stdout  # fmt: skip
        assert where.startswith(str(bin_dir.parent)), f"{kind}: hive imported from {where}, not its venv"

        version = _hive(bin_dir, "--version", cwd=isolated)
        assert version.returncode == 0, version.stderr
        # the build names the commit it was made from (issue 44), and whether the tree was modified
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        said = version.stdout.splitlines()[0]
        assert said == f"hive-agents {dist_version()}" and f"+g{commit[:7]}" in said, (said, commit)

        demo = isolated / f"demo-{kind}"
        r = _hive(bin_dir, "demo", "--dir", str(demo), cwd=isolated)
        assert r.returncode == 0, f"{kind}: hive demo exited {r.returncode}\n{r.stdout}\n{r.stderr}"
        assert "all tasks merged" in r.stdout
        history = subprocess.run(["git", "-C", str(demo), "log", "--format=%s", "main"], capture_output=True, text=True)
        assert "Add a command line entry point" in history.stdout

        doctor = _hive(bin_dir, "doctor", "--json", cwd=demo)
        assert "internal error" not in doctor.stderr, doctor.stderr
        report = json.loads(doctor.stdout)
        status = {c["name"]: c["status"] for c in report["checks"]}
        assert status["git"] == status["tmux"] == status["main branch"] == "ok", report
        # this machine has no agent CLI: only the default profile's checks may fail, and say so
        failed = [c for c in report["checks"] if c["status"] == "fail"]
        assert all(c["profile"] and c["fix"] for c in failed), failed
        assert doctor.returncode == (1 if failed else 0)
        _web_serves_its_page_and_scripts(bin_dir, demo)


def _web_serves_its_page_and_scripts(bin_dir: Path, cwd: Path) -> None:
    """`hive web` from the install: its templates and vendored htmx are package data, or the page
    would have no scripts (issue 26)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    argv = [str(bin_dir / "hive"), "web", "--port", "0"]
    server = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        ready, _, _ = select.select([server.stdout], [], [], 60)
        line = server.stdout.readline() if ready else ""
        assert "the dashboard is at http://127.0.0.1:" in line, line
        address = line.split("http://")[1].split("/")[0]
        for path in ("/", "/static/htmx.min.js", "/static/htmx-sse.min.js", "/static/hive.css"):
            with urllib.request.urlopen(f"http://{address}{path}", timeout=30) as r:
                assert r.status == 200 and r.read(), path
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
