"""A Ray cluster that uses token authentication (Ray 2.5x turns it on by itself for a
`ray start` where ~/.ray/auth_token exists, e.g. after one local `ray.init()`): a controller
without the token is told what to set, one with it runs the plan on the cluster."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from conftest import Repo, assert_finished_exactly_once
from ray_cluster import LocalRayCluster
from test_ray_executor import TEN_TASKS, started_on, use_ray

TOKEN = "hive-tests-0123456789abcdef0123456789abcdef"

# Ray tries the GCS once a second, 20 times, before it gives up on a cluster that refuses it:
# the test's run gives up after 2
QUICK_REFUSAL = {"RAY_gcs_server_port_wait_time_s": "2"}


@pytest.mark.ray_cluster(workers=1, auth_token=TOKEN)
def test_without_the_token_the_run_says_what_to_set_and_with_it_the_plan_runs(
    repo: Repo, ray_cluster: LocalRayCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)  # and $HOME is a fresh one: no ~/.ray/auth_token
    use_ray(repo, ray_cluster)
    repo.write_plan("p", TEN_TASKS.split("### Task 3")[0])
    r = repo.doit(env=QUICK_REFUSAL, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "uses token authentication" in out and "RAY_AUTH_MODE=token" in out, out
    assert "Traceback" not in out and "cannot reach" not in out, out
    assert repo.git("ls-files").split() == ["README.md"]  # nothing ran
    rows = {f"{row['plan']}:{row['id']}": row for row in json.loads(repo.hive("status", "--json").stdout)["tasks"]}
    assert rows["p:1"]["state"] == "failed" and "uses token authentication" in rows["p:1"]["reason"], rows

    r = repo.doit("-n", "2", env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": TOKEN}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert_finished_exactly_once(repo, {"p:1": "part 1", "p:2": "part 2"})
    assert started_on(r.stdout) == {"p:1": {"127.0.0.3"}, "p:2": {"127.0.0.3"}}, r.stdout


CONNECT = """
import sys
from hive.errors import HiveError
from hive.executors.ray.cluster import Cluster
try:
    Cluster(sys.argv[1], "hive_agent", "~/.hive-node", "p").connect()
except HiveError as e:
    print(e)
"""


def test_token_mode_without_a_token_says_where_the_token_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Half of what the message above asks for: Ray refuses before it connects, with an error of
    its own that is not one of the connection's."""
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    with socket.create_server(("127.0.0.1", 0)) as server:  # answers: Ray is asked to connect
        address = f"127.0.0.1:{server.getsockname()[1]}"
        r = subprocess.run(
            [sys.executable, "-c", CONNECT, address],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "RAY_AUTH_MODE": "token"},
        )
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stdout.startswith(f"the Ray cluster at [executor] address = {address!r} turned this controller away"), (
        r.stdout
    )
    assert "in $RAY_AUTH_TOKEN, in the file $RAY_AUTH_TOKEN_PATH names, or in ~/.ray/auth_token" in r.stdout
