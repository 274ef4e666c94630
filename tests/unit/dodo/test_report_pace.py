"""The run's report.md is rewritten at most once a REPORT_EVERY while tasks end, and every end is
in it within that time (a failure's at once): rendered whole at each end, a run of n tasks cost
O(n²) (issue 44)."""

from __future__ import annotations

import io
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from hive.dodo import reporter
from hive.reports import execution


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    times: list[float] = []
    monkeypatch.setattr(execution, "write_report", lambda *_args: times.append(time.monotonic()))
    monkeypatch.setattr(reporter, "REPORT_EVERY", 0.3)
    return times


def _reporter(tmp_path: Path) -> reporter.HiveReporter:
    r = reporter.HiveReporter(io.StringIO(), {})
    r.plans = (SimpleNamespace(name="p"),)  # type: ignore[assignment]
    r.project = SimpleNamespace(paths=SimpleNamespace(root=tmp_path))  # type: ignore[assignment]
    return r


def test_ends_close_together_are_written_once_then_once_more_within_the_pace(tmp_path: Path, written: list[float]):
    r = _reporter(tmp_path)
    start = time.monotonic()
    for _ in range(5):
        r._report_soon(at_once=False)
    assert len(written) == 1  # the first end at once, the next four wait
    deadline = time.monotonic() + 5
    while len(written) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(written) == 2 and written[1] - start >= 0.25  # not before its time
    time.sleep(0.4)
    assert len(written) == 2  # nothing more was due


def test_a_failure_is_written_at_once_and_takes_the_place_of_the_one_due(tmp_path: Path, written: list[float]):
    r = _reporter(tmp_path)
    r._report_soon(at_once=False)
    r._report_soon(at_once=False)  # due in 0.3 s
    r._report_soon(at_once=True)
    assert len(written) == 2 and r.report_due is None
    time.sleep(0.5)
    assert len(written) == 2
