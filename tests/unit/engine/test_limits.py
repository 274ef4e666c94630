"""hive/engine/limits.py: the back-off of a rate-limited task and the hold that keeps
new tasks off a rate-limited profile."""

from __future__ import annotations

from pathlib import Path

from hive.engine.limits import MAX_PAUSE, ProfilePause, pause_profile, pause_until, profile_pauses, read_pause
from hive.store.paths import Paths


def test_a_reset_time_the_cli_gave_wins_else_the_back_off_doubles_up_to_an_hour():
    now = 1000.0
    assert pause_until(now + 500, 3, now) == now + 500
    assert [pause_until(0, n, now) - now for n in range(8)] == [60, 120, 240, 480, 960, 1920, MAX_PAUSE, MAX_PAUSE]
    assert pause_until(now - 5, 0, now) == now + 60  # a reset time already past: back off


def test_a_hold_is_per_profile_and_a_later_one_wins(tmp_path: Path):
    paths = Paths(tmp_path)
    pause_profile(paths, "claude", 500.0, "rate limited")
    pause_profile(paths, "claude", 400.0, "earlier")  # does not shorten it
    assert read_pause(paths.pause_file("claude")) == ProfilePause("claude", 500.0, "rate limited")
    assert read_pause(paths.pause_file("codex")) is None
    pause_profile(paths, "my agent/../x", 1.0, "odd name")
    assert read_pause(paths.pause_file("my agent/../x")) == ProfilePause("my agent/../x", 1.0, "odd name")
    assert all(p.parent == paths.hive / "holds" for p in (paths.hive / "holds").iterdir())
    assert [h.profile for h in profile_pauses(paths)] == ["claude", "my agent/../x"]
