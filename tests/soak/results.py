"""What a trial found (its violated invariants, grouped by kind), its result, and how results
are printed: one trial's report and the summary of many."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


class Findings:
    """One trial's violated invariants, grouped by kind: the kind names the failure
    (the summary counts trials per kind), the details say where and what exactly."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[str]] = {}

    def add(self, kind: str, detail: str = "") -> None:
        details = self.by_kind.setdefault(kind, [])
        if detail and detail not in details:
            details.append(detail)

    def __bool__(self) -> bool:
        return bool(self.by_kind)

    def lines(self, max_details: int = 4) -> list[str]:
        out = []
        for kind, details in self.by_kind.items():
            out.append(kind)
            out += [f"    {d}" for d in details[:max_details]]
            if len(details) > max_details:
                out.append(f"    ... and {len(details) - max_details} more")
        return out


@dataclass
class TrialResult:
    seed: int
    faults: list[str]
    runs: list[str]
    findings: dict[str, list[str]]  # kind -> details
    notes: list[str]
    duration: float
    dir: Path

    @property
    def passed(self) -> bool:
        return not self.findings


def report(res: TrialResult) -> None:
    print(f"seed {res.seed}: faults: {', '.join(res.faults) or 'none'}")
    for line in res.runs:
        print(f"  {line}")
    for note in res.notes:
        print(f"  note: {note}")
    verdict = "PASS" if res.passed else "FAIL"
    print(f"  {verdict} ({res.duration:.1f}s)" + (f"  kept: {res.dir}" if res.dir.exists() else ""))
    findings = Findings()
    findings.by_kind = res.findings
    for line in findings.lines():
        print(f"    {line}" if line.startswith(" ") else f"    - {line}")
    sys.stdout.flush()


def summary(results: list[TrialResult], elapsed: float) -> str:
    failed = [r for r in results if not r.passed]
    lines = [
        f"soak: {len(results)} trials, {len(results) - len(failed)} passed, {len(failed)} failed"
        + (f" (seeds {' '.join(str(r.seed) for r in failed)})" if failed else "")
        + f", {elapsed:.1f}s total, {sum(r.duration for r in results) / max(len(results), 1):.1f}s per trial"
    ]
    seeds_by_kind: dict[str, list[int]] = {}
    for r in failed:
        for kind in r.findings:
            seeds_by_kind.setdefault(kind, []).append(r.seed)
    for kind, seeds in sorted(seeds_by_kind.items(), key=lambda kv: -len(kv[1])):
        lines.append(
            f"  {len(seeds):3d} trial(s): {kind}  (seeds {' '.join(map(str, seeds[:8]))}"
            f"{' ...' if len(seeds) > 8 else ''})"
        )
    return "\n".join(lines)
