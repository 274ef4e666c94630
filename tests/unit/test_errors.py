"""Hive's two exceptions survive pickling whole: Ray ships an error raised on a node to the
controller so (an exception pickled by its message alone failed to unpickle there, and a
node's plain git failure became an "internal error")."""

from __future__ import annotations

import pickle

from hive.errors import CommandError, HiveError, user_message


def test_a_command_error_comes_back_whole() -> None:
    e = pickle.loads(pickle.dumps(CommandError(["git", "status"], 128, "fatal: not a git repository\n")))
    assert (type(e), e.argv, e.code, e.output) == (
        CommandError,
        ["git", "status"],
        128,
        "fatal: not a git repository\n",
    )
    assert user_message(e) == "`git status` exited with 128:\nfatal: not a git repository"


def test_a_hive_error_keeps_its_problems() -> None:
    e = pickle.loads(pickle.dumps(HiveError("plan.md:3: no title", "plan.md:9: unknown dependency")))
    assert type(e) is HiveError and e.problems == ["plan.md:3: no title", "plan.md:9: unknown dependency"]
