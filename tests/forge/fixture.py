"""The `forge` fixture: a started Forge whose problems (an unknown call, a request or an answer
that does not fit GitHub's description) fail the test that used it.

A test module takes it with `from forge.fixture import forge_fixture  # noqa: F401`; its name
in the tests is `forge`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from . import Forge

TOKEN = "t0k"


@pytest.fixture(name="forge")
def forge_fixture(tmp_path: Path) -> Iterator[Forge]:
    with Forge(tmp_path / "forge", token=TOKEN) as fake:
        yield fake
    fake.check()
