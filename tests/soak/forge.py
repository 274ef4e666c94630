"""The scripted forge of the tests (tests/forge), for the trials in pull-request mode: imported
as `forge` when tests/ is on sys.path (pytest), else as `tests.forge` (`python -m tests.soak`)."""

from __future__ import annotations

try:
    from forge import Forge
except ImportError:  # python -m tests.soak, from the repository's root
    from tests.forge import Forge

__all__ = ["Forge"]
