"""hive/doitargs.py: doit's command line, read once for the loader, the start-of-run checks
and the reconcile (it was parsed three ways in three places; issue 22)."""

from __future__ import annotations

import pytest

from hive.doitargs import parse


@pytest.mark.parametrize(
    "argv, command, names, processes, parallel",
    [
        ([], "run", (), 0, ""),
        (["-n", "2"], "run", (), 2, ""),
        (["-n2", "auth"], "run", ("auth",), 2, ""),
        (["--process=3", "auth:1", "db"], "run", ("auth:1", "db"), 3, ""),
        (["run", "-n", "4", "-P", "thread", "db"], "run", ("db",), 4, "thread"),
        (["-Pprocess", "--parallel-type=thread"], "run", (), 0, "thread"),
        (["-v", "2", "auth"], "run", ("auth",), 0, ""),  # a value is not a task name
        (["-c", "-n", "x"], "run", ("x",), 0, ""),  # -n without a number: doit's own error, not ours
        (["list", "--all"], "list", (), 0, ""),
        (["-k", "info", "auth:3"], "info", ("auth:3",), 0, ""),
        (["-f", "other.py", "forget"], "forget", (), 0, ""),
        (["HIVE_X=1", "auth"], "run", ("auth",), 0, ""),
    ],
)
def test_a_command_line_reads_as_doit_reads_it(argv, command, names, processes, parallel):
    args = parse(argv)
    assert (args.command, args.names, args.processes, args.parallel_type) == (command, names, processes, parallel)
    assert args.runs_tasks is (command == "run")
