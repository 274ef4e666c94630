"""The scripted forge of the tests (tests/forge), for the trials in pull-request mode: imported
as `forge` when tests/ is on sys.path (pytest), else as `tests.forge` (`python -m tests.soak`)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # one name for the type checker, which sees tests/ as pytest does
    from forge import Forge
else:
    try:
        Forge = importlib.import_module("forge").Forge
    except ImportError:  # python -m tests.soak, from the repository's root
        Forge = importlib.import_module("tests.forge").Forge

__all__ = ["Forge"]
