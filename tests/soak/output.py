"""Reading a command's output for what must never be there: tracebacks and Hive's internal errors,
each named without paths, task names or hashes so that one bug seen in many trials is one kind."""

from __future__ import annotations

import re
from pathlib import Path

from .scenario import PLAN

_EXCEPTION = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b")


def output_errors(text: str) -> list[tuple[str, str]]:
    """(kind, detail) for every traceback and internal error in a command's output.
    The kind names the failure without paths, task names or numbers, so one bug
    seen in many trials counts as one kind."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last)"):
            # other processes' lines may be interleaved with the traceback's
            end = next((j for j in range(i + 1, min(i + 200, len(lines))) if _EXCEPTION.match(lines[j])), None)
            exc = lines[end] if end is not None else "?"
            frames = [ln.strip() for ln in lines[i + 1 : end] if ln.strip().startswith("File ")]
            out.append((f"traceback: {_generic(exc)[:90]}", f"{exc[:160]} (last frame: {_frame(frames)})"))
        elif "internal error:" in line:
            msg = line.split("internal error:", 1)[1].strip()
            out.append((f"internal error: {_generic(_internal(msg))[:110]}", msg[:300]))
    return out


def _internal(msg: str) -> str:
    """`CommandError("`git -C /x add -A` exited with 128:\\nfatal: cannot change to ...")` ->
    `git add -A: exit 128: fatal: cannot change to ...`."""
    m = re.search(r"`git -C \S+ ([^`]*)` exited with (\d+):(?:\\n)?(.*)", msg)
    if not m:
        return msg
    detail = re.split(r"\\n|\"\)", m.group(3))[0]
    return f"git {m.group(1)}: exit {m.group(2)}: {detail}"


def _generic(text: str) -> str:
    # a path is noise, except the name of a lock file
    text = re.sub(
        r"'?/(?:tmp|work)/\S*?([^/\s']*\.lock)?'?(?=[\s:,)]|$)",
        lambda m: f"<path>/{m.group(1)}" if m.group(1) else "<path>",
        text,
    )
    text = re.sub(r"hive/[\w.-]+-a\d+", "<branch>", text)
    text = re.sub(rf"\b{PLAN}:[\w.-]+", "<task>", text)
    return re.sub(r"\b[0-9a-f]{7,40}\b", "<sha>", text)


def _frame(frames: list[str]) -> str:
    if not frames:
        return "?"
    m = re.match(r'File "([^"]+)", line (\d+), in (\S+)', frames[-1])
    return f"{Path(m.group(1)).name}:{m.group(2)} in {m.group(3)}" if m else frames[-1][:80]


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def tail(text: str, lines: int) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])
