"""The one user-error exception, caught at the CLI and dodo boundaries."""

from __future__ import annotations

from hive.output import tail


class HiveError(Exception):
    """A problem the user can fix: bad plan, bad config, bad state or command.

    `problems` holds one line per problem (file:line, what, how to fix), so a
    plan with several mistakes is reported all at once.
    """

    def __init__(self, *problems: str) -> None:
        self.problems = [p for p in problems if p] or ["unknown error"]
        super().__init__("\n".join(self.problems))

    def __reduce__(self) -> tuple[type[HiveError], tuple[str, ...]]:
        # pickled whole (a Ray node's error reaches the controller so): not by its message alone
        return (type(self), tuple(self.problems))


class CommandError(Exception):
    """A subprocess failed: shows the command, exit code and output tail."""

    def __init__(self, argv: list[str], code: int, output: str) -> None:
        self.argv = argv
        self.code = code
        self.output = output
        super().__init__(f"`{' '.join(argv)}` exited with {code}:\n{tail(output, 15)}")

    def __reduce__(self) -> tuple[type[CommandError], tuple[list[str], int, str]]:
        # by default an exception is pickled as its class and message, which this __init__ does not take
        return (type(self), (self.argv, self.code, self.output))


def user_message(exc: BaseException) -> str | None:
    """What to tell the user about an error without a traceback; None for a bug.

    The one error edge shared by the CLI and the doit task runner: a git or tmux
    failure is a clear failure that shows the command and its output, never an
    "internal error"."""
    if isinstance(exc, HiveError):
        return "\n".join(exc.problems)
    if isinstance(exc, CommandError):
        return str(exc)
    return None
