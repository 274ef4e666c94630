"""One check's result: what was found (never a secret) and, when it is not fine,
how to fix it. Every doctor check returns these, the agent CLIs' own checks too (so it sits
below both `doctor` and `agent_clis`); the CLI prints one per line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

OK, WARN, FAIL = "ok", "warn", "fail"
MARKS = {OK: "✓", WARN: "!", FAIL: "✗"}


@dataclass(frozen=True)
class Check:
    name: str  # "git identity", "[claude] credentials"
    status: str  # OK, WARN or FAIL; only FAIL makes `hive doctor` exit 1
    detail: str  # what was found: a source's name, a version, a path — never a value
    fix: str = ""  # for WARN and FAIL: what to do about it
    profile: str = ""  # the agent profile it is about, if any

    @property
    def failed(self) -> bool:
        return self.status == FAIL

    def lines(self) -> list[str]:
        out = [f"{MARKS[self.status]} {self.name}: {self.detail}"]
        if self.fix and self.status != OK:
            out.append(f"    fix: {self.fix}")
        return out

    def to_json(self) -> dict[str, str]:
        return {
            "name": self.name,
            "status": self.status,
            "detail": self.detail,
            "fix": self.fix,
            "profile": self.profile,
        }


def ok(name: str, detail: str, profile: str = "") -> Check:
    return Check(name, OK, detail, profile=profile)


def warn(name: str, detail: str, fix: str, profile: str = "") -> Check:
    return Check(name, WARN, detail, fix, profile)


def fail(name: str, detail: str, fix: str, profile: str = "") -> Check:
    return Check(name, FAIL, detail, fix, profile)


def shown(path: Path, home: Path) -> str:
    """A path as the user would type it: `~/.claude.json`, not /home/me/.claude.json."""
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)
