"""Durations in messages, as people write them (issue 10: "0.0833333 min")."""

from __future__ import annotations

import pytest

from hive.output import duration


@pytest.mark.parametrize(
    "seconds, shown",
    [
        (0.5, "0.5s"),
        (5, "5s"),
        (5 / 60 * 60, "5s"),
        (59.6, "1m"),
        (60, "1m"),
        (65, "1m05s"),
        (150, "2m30s"),
        (300, "5m"),
        (3600, "1h"),
        (3660, "1h01m"),
        (7800, "2h10m"),
    ],
)
def test_durations_read_like_people_write_them(seconds, shown):
    assert duration(seconds) == shown
