"""A cluster address where nothing answers is a clear error at once: `ray.init` would retry for
a quarter of an hour (20 tries of ~40 s, measured with Ray 2.60), printing only Ray's warnings,
while `doit` or `hive status` seemed to hang. Ray is stood in for: its init must not be reached."""

from __future__ import annotations

import socket
import time
import types
from collections.abc import Iterator

import pytest

from hive.errors import HiveError
from hive.executors.ray import cluster as cluster_module
from hive.executors.ray.cluster import Cluster


@pytest.fixture
def inits(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    calls: list[dict] = []
    ray = types.SimpleNamespace(is_initialized=lambda: False, init=lambda **kw: calls.append(kw))
    monkeypatch.setattr(cluster_module, "ray", ray)
    monkeypatch.setattr(cluster_module.atexit, "register", lambda fn: None)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return calls


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as server:
        return int(server.getsockname()[1])  # closed again: nothing listens there now


@pytest.mark.parametrize("form", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}"])
def test_nothing_answering_at_the_address_is_said_at_once(inits: list[dict], closed_port: int, form: str) -> None:
    address = form.format(port=closed_port)
    began = time.monotonic()
    with pytest.raises(HiveError) as e:
        Cluster(address, "hive_agent", "~/.hive-node", "p").connect()
    assert time.monotonic() - began < cluster_module.PROBE_TIMEOUT
    assert str(e.value) == (
        f"cannot reach the Ray cluster at [executor] address = {address!r}: nothing answers at "
        f"127.0.0.1:{closed_port} (Connection refused); start it (`ray start --head`), or fix the address in "
        ".hive/config.toml"
    )
    assert inits == []


def test_auto_goes_where_ray_address_says(inits: list[dict], closed_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{closed_port}")
    with pytest.raises(HiveError, match=f"address = 'auto': nothing answers at 127.0.0.1:{closed_port}"):
        Cluster("auto", "hive_agent", "~/.hive-node", "p").connect()
    assert inits == []


def test_an_address_that_answers_is_for_ray_to_connect_to(inits: list[dict], listening: int) -> None:
    Cluster(f"127.0.0.1:{listening}", "hive_agent", "~/.hive-node", "p").connect()
    Cluster("auto", "hive_agent", "~/.hive-node", "q").connect()  # Ray looks for one on this machine itself
    assert [call["address"] for call in inits] == [f"127.0.0.1:{listening}", "auto"]
