"""hive/store/paths.py: every path built from a plan or task name stays inside `.hive/`."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hive.errors import HiveError
from hive.store.paths import Paths, find_root

# "1\n": a regex ending in `$` would let a trailing newline through
HOSTILE = ["../x", "..", "../../etc/passwd", "/abs", "a/b", ".hidden", "", "a b", "~root", "a\nb", "1\n"]
ODD_BUT_VALID = ["_gate-1", "2.1", "a..b", "x" * 80]


def named_methods() -> list[str]:
    """Every Paths method that takes a plan, task or other name (salvaged takes a directory's name)."""
    return [
        name
        for name, fn in inspect.getmembers(Paths, inspect.isfunction)
        if not name.startswith("_")
        and name != "salvaged"
        and any(p.annotation == "str" for p in inspect.signature(fn).parameters.values())
    ]


def calls(method: str, name: str) -> Iterator[tuple[Any, ...]]:
    """Argument lists for `method`: `name` for every str parameter, and each choice for the others."""
    params = list(inspect.signature(getattr(Paths, method)).parameters.values())[1:]
    choices: list[list[Any]] = []
    for p in params:
        if p.name == "kind":
            choices.append(["brief", "log", "exit"])
        elif p.annotation == "str":
            choices.append([name])
        elif p.annotation == "int":
            choices.append([1, 12])
        elif p.annotation == "bool":
            choices.append([False, True])
        else:
            raise AssertionError(f"Paths.{method}: parameter {p.name} of type {p.annotation} is new to this test")
    yield from _product(choices)


def _product(choices: list[list[Any]]) -> Iterator[tuple[Any, ...]]:
    if not choices:
        yield ()
        return
    for first in choices[0]:
        for rest in _product(choices[1:]):
            yield (first, *rest)


def inside(path: Path, folder: Path) -> bool:
    return Path(os.path.normpath(path)).is_relative_to(folder) and path != folder


def test_the_methods_under_test_are_found():
    found = named_methods()
    assert {
        "state_file",
        "signal_file",
        "log_file",
        "stop_file",
        "exit_file",
        "planning_file",
        "discovered_item",
        "module_lock",
        "claim_lock",
    } <= set(found)


@pytest.mark.parametrize("method", named_methods())
def test_every_named_path_stays_inside_dot_hive(tmp_path: Path, method: str):
    paths = Paths(tmp_path)
    for name in HOSTILE + ODD_BUT_VALID:
        for args in calls(method, name):
            try:
                path = getattr(paths, method)(*args)
            except HiveError:
                assert name in HOSTILE, (method, args)
                continue
            assert inside(path, paths.hive), (method, args, path)


@pytest.mark.parametrize("bad", ["../x", "..", "a/b", "", ".hidden"])
def test_unsafe_plan_or_task_names_are_rejected(tmp_path: Path, bad: str):
    paths = Paths(tmp_path)
    for build in (
        lambda: paths.state_file(bad, "1"),
        lambda: paths.state_file("auth", bad),
        lambda: paths.log_file("auth", bad),
        lambda: paths.checkpoint_file(bad, "1"),
        lambda: paths.discovered_dir(bad),
        lambda: paths.discovered_item("auth", bad),
        lambda: paths.planning_file(bad, "brief"),
    ):
        with pytest.raises(HiveError, match="is not a valid plan or task ID"):
            build()


def test_salvaged_names_stay_in_the_salvage_folder(tmp_path: Path):
    paths = Paths(tmp_path)
    for name in ("w1-auth-1-abc-a1", "..", ".git"):
        aside = paths.salvaged(name)
        assert aside.parent == paths.salvage and aside.name.startswith(f"{name}-")


def test_attempt_files_are_per_attempt(tmp_path: Path):
    paths = Paths(tmp_path)
    for method in (paths.signal_file, paths.stop_file, paths.exit_file, paths.context_copy, paths.script_file):
        assert method("auth", "1", 1) != method("auth", "1", 2)
        assert method("auth", "2.1", 1) != method("auth", "2_1", 1)
    assert paths.signal_file("auth", "1", 1) != paths.stop_file("auth", "1", 1)


def test_find_root(tmp_path: Path):
    (tmp_path / ".hive").mkdir()
    (tmp_path / "src" / "deep").mkdir(parents=True)
    assert find_root(tmp_path / "src" / "deep") == tmp_path.resolve()
    other = tmp_path / "elsewhere"
    (other / "plans").mkdir(parents=True)
    (other / "dodo.py").write_text("")
    assert find_root(other / "plans") == other.resolve()


def test_find_root_outside_a_hive_repo_says_what_to_do(tmp_path: Path):
    with pytest.raises(HiveError, match="hive init"):
        find_root(tmp_path)
