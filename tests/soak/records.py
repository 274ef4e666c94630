"""Reading what Hive and the fake agents write in a trial's repository: `.hive/events.jsonl`, the
task state files and the agents' spawns.log; `EventWatch` follows the first and last as they grow,
to time a fault against a phase of Hive's."""

from __future__ import annotations

import json
from pathlib import Path

from .scenario import PLAN, TRIGGERS


def read_spawns(log: Path) -> list[tuple[str, int, float, str]]:
    """(task, attempt, time, event) of every fake-agent start and signal, from its spawns.log."""
    rows = []
    for line in log.read_text().splitlines() if log.exists() else []:
        parts = line.split()
        if len(parts) == 4:  # a line being written right now is skipped
            rows.append((parts[0], int(parts[1]), float(parts[2]), parts[3]))
    return rows


def read_events(root: Path) -> list[dict]:
    path = root / ".hive" / "events.jsonl"
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def read_state(root: Path, task_id: str) -> dict:
    try:
        return json.loads((root / ".hive" / "state" / PLAN / f"{task_id}.json").read_text())
    except (OSError, ValueError):
        return {}


class EventWatch:
    """Hive's progress as it happens, read from the end of events.jsonl and of the
    agents' spawns.log, so that a fault can be timed against a phase (TRIGGERS)."""

    def __init__(self, root: Path, spawns: Path) -> None:
        self.paths = {"events": root / ".hive" / "events.jsonl", "spawns": spawns}
        self.offsets = {k: (p.stat().st_size if p.exists() else 0) for k, p in self.paths.items()}
        self.seen: dict[str, list[float]] = {t: [] for t in TRIGGERS}

    def poll(self, now: float) -> None:
        for name, line in self._new_lines():
            if name == "spawns":
                phase = "signal" if line.endswith(" signal-done") else ""
            else:
                try:
                    phase = {"in_progress": "claim", "merging": "merging", "pr_merging": "merging"}.get(
                        json.loads(line).get("event"), ""
                    )
                except ValueError:
                    phase = ""
            if phase:
                self.seen[phase].append(now)

    def when(self, trigger: str, nth: int) -> float | None:
        """The monotonic time the n-th occurrence was seen, None if not yet."""
        return self.seen[trigger][nth - 1] if len(self.seen[trigger]) >= nth else None

    def _new_lines(self) -> list[tuple[str, str]]:
        out = []
        for name, path in self.paths.items():
            try:
                with open(path, "rb") as f:
                    f.seek(self.offsets[name])
                    data = f.read()
            except FileNotFoundError:
                continue
            complete = data[: data.rfind(b"\n") + 1]  # a line being written is read next time
            self.offsets[name] += len(complete)
            out += [(name, ln) for ln in complete.decode(errors="replace").splitlines()]
        return out
