"""The one user-error exception, caught at the CLI and dodo boundaries."""
from __future__ import annotations


class HiveError(Exception):
    """A problem the user can fix: bad plan, bad config, bad state or command.

    `problems` holds one line per problem (file:line, what, how to fix), so a
    plan with several mistakes is reported all at once.
    """

    def __init__(self, *problems: str) -> None:
        self.problems = [p for p in problems if p] or ["unknown error"]
        super().__init__("\n".join(self.problems))


class CommandError(Exception):
    """A subprocess failed: shows the command, exit code and output tail."""

    def __init__(self, argv: list[str], code: int, output: str) -> None:
        self.argv = argv
        self.code = code
        self.output = output
        tail = "\n".join(output.strip().splitlines()[-15:])
        super().__init__(f"`{' '.join(argv)}` exited with {code}:\n{tail}")
