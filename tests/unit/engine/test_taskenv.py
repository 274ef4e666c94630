"""hive/engine/taskenv.py: the task's variables, the same for every command run for it."""

from __future__ import annotations

from pathlib import Path

from hive.engine import taskenv
from hive.store import names


def test_a_workers_block_is_ten_ports_and_blocks_never_overlap():
    assert list(taskenv.ports(1)) == list(range(41010, 41020))
    assert all(set(taskenv.ports(n)).isdisjoint(taskenv.ports(n + 1)) for n in range(1, 64))


def test_the_variables_name_the_task_its_ports_and_its_compose_project(tmp_path: Path):
    env = taskenv.variables("auth", "2.1", tmp_path, 2)
    assert env == {
        "HIVE_TASK": "auth:2.1",
        "HIVE_ROOT": str(tmp_path),
        "HIVE_PORT": "41020",
        "HIVE_PORTS": "41020 41021 41022 41023 41024 41025 41026 41027 41028 41029",
        "COMPOSE_PROJECT_NAME": names.compose_project("auth", "2.1"),
    }
