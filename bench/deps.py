#!/usr/bin/env python3
"""The figures behind Hive's dependency decisions: what each dependency costs at import,
and what one command costs through `subprocess` against the `sh` package Hive replaced
(Hive's one chokepoint, hive/adapters/proc.py; about 20 commands per task, docs/performance.md).

    .venv/bin/python bench/deps.py [--python PY] [--calls 50] [--json]

Import times use `--python` (default: this interpreter): each module in a fresh interpreter,
median of 7 after one warm-up run. Per-call times use the interpreter running this script,
so run it with one that has `sh` (e.g. `pip install sh` in a scratch venv) to compare.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The dodo loader is hive.dodo; hive.compiler is what older dodo.py files import. Either may be absent.
MODULES = (
    "sh",
    "doit",
    "networkx",
    "markdown_it",
    "jinja2",
    "yaml",
    "subprocess",
    "hive.cli",
    "hive.compiler",
    "hive.dodo",
    # `hive web` alone imports these (issue 26)
    "starlette",
    "uvicorn",
    "sse_starlette",
    "hive.web.app",
)
RUNS = 7
TASK_CALLS = 20
COMMANDS = (["git", "--version"], ["true"])
# What sh adds to a `hive` or `doit list` start, which share much of what sh imports (logging, importlib.metadata).
HIVE_ENTRY = ("hive.cli", "hive.dodo", "hive.compiler")

# Timed inside the child so interpreter start-up is left out. A module the interpreter
# loaded during start-up (site, .pth files) would time as ~0, so it says so instead.
PROBE = """\
import importlib, sys, time
name, *before = sys.argv[1:]
for b in before:
    try: importlib.import_module(b)
    except ImportError: pass
if name in sys.modules:
    print("preloaded"); raise SystemExit
t = time.perf_counter()
try:
    importlib.import_module(name)
except ImportError as e:
    print("not installed" if e.name and (name + ".").startswith(e.name + ".") else f"needs {e.name}"); raise SystemExit
print(time.perf_counter() - t)
"""


def import_ms(python: str, name: str, before: tuple[str, ...] = ()) -> float | str:
    """Median ms, or why there is no figure; the first run only warms the bytecode cache."""
    # hive comes from this checkout whether or not `python` has it installed.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    times = []
    for _ in range(RUNS + 1):
        out = subprocess.run([python, "-c", PROBE, name, *before], capture_output=True, text=True, env=env, check=True)
        try:
            times.append(float(out.stdout) * 1000)
        except ValueError:
            return out.stdout.strip()
    return statistics.median(times[1:])


def call_ms(fn: Callable[[], object], calls: int) -> float:
    fn()  # the first call pays for PATH lookup and lazy imports, which a long run pays once
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def runners(argv: list[str]) -> dict[str, Callable[[], object]]:
    proc = _module("hive.adapters.proc") or _module("hive.proc")  # the chokepoint moved in the package split
    assert proc is not None, "Hive's subprocess chokepoint not found"
    found: dict[str, Callable[[], object]] = {
        "subprocess.run": lambda: subprocess.run(argv, capture_output=True, check=True),
        f"{proc.__name__}.run": lambda: proc.run(argv),
    }
    sh = _module("sh")
    if sh is not None:
        found["sh, defaults"] = lambda: getattr(sh, argv[0])(*argv[1:])
        # sh gives the child a pty by default; Hive's sh-based proc.run (3d4a9de) used pipes and a fresh Command.
        found["sh, as Hive used it"] = lambda: sh.Command(argv[0])(
            *argv[1:], _tty_out=False, _return_cmd=True, _env=proc.clean_env()
        )
    return found


def _module(name: str) -> ModuleType | None:
    # By name, so mypy needs neither sh (not a dependency) nor a fixed place for Hive's modules.
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def measure(python: str, calls: int) -> dict[str, Any]:
    sh = _module("sh")
    per_call: dict[str, dict[str, float]] = {}
    for argv in COMMANDS:
        for label, fn in runners(argv).items():
            per_call.setdefault(label, {})[" ".join(argv)] = call_ms(fn, calls)
    return {
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "import_python": python,
        "call_python": sys.executable,
        "python": platform.python_version(),
        "sh_version": getattr(sh, "__version__", None),
        "runs": RUNS,
        "calls": calls,
        "import_ms": {
            **{name: import_ms(python, name) for name in MODULES},
            "sh after Hive's own": import_ms(python, "sh", HIVE_ENTRY),
        },
        "per_call_ms": per_call,
    }


def table(fig: dict[str, Any]) -> str:
    def ms(v: float | str) -> str:
        return f"{v:10.1f} ms" if isinstance(v, float) else f"{v:>13}"

    lines = [f"import (fresh {fig['import_python']}, median of {fig['runs']})"]
    lines += [f"  {name:<20}{ms(v)}" for name, v in fig["import_ms"].items()]
    cmds = [" ".join(a) for a in COMMANDS]
    lines += [
        "",
        f"per call (python {fig['python']}, sh {fig['sh_version'] or 'not installed'}, median of {fig['calls']})",
        f"  {'':<26}" + "".join(f"{c:>15}" for c in cmds),
    ]
    per_call = fig["per_call_ms"]
    lines += [f"  {label:<26}" + "".join(ms(row[c]).rjust(15) for c in cmds) for label, row in per_call.items()]
    base = per_call["subprocess.run"]
    for label in [k for k in per_call if k.startswith("sh")]:
        extra = [per_call[label][c] - base[c] for c in cmds]
        lines.append(f"  {label + ' − run':<26}" + "".join(ms(e).rjust(15) for e in extra))
        lines.append(f"  {f'  × {TASK_CALLS} calls/task':<26}" + "".join(ms(e * TASK_CALLS).rjust(15) for e in extra))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=sys.executable, help="interpreter for the import timings")
    ap.add_argument("--calls", type=int, default=50, help="calls per command and method")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON instead of a table")
    args = ap.parse_args()
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # Hive's chokepoint from this checkout, even under a venv without Hive
    fig = measure(args.python, args.calls)
    print(json.dumps(fig, indent=2) if args.json else table(fig))


if __name__ == "__main__":
    main()
