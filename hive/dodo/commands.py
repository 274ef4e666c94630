"""doit's `list --status` and `info`, made to read well for Hive's tasks (issue 43): a legend for
the letters `list --status` prints, and `info` without doit's internals — the arguments of an
uptodate check (always none for Hive's) and the rank Hive keeps its queue in (hive.dodo.dispatch)."""

from __future__ import annotations

import functools
from typing import Any

LEGEND = (
    "R: not done, runs at the next `doit` · U: up to date (done) · I: ignored (`doit ignore`) · E: doit could not tell"
)


def explained() -> None:
    from doit.cmd_info import Info
    from doit.cmd_list import List

    listing: Any = List
    execute = listing._execute
    if getattr(execute, "hive_wrapped", False):
        return

    # doit passes a command's options by the names of `_execute`'s parameters (inspect.signature,
    # which follows functools.wraps to the original's)
    @functools.wraps(execute)
    def _execute(self: Any, **options: Any) -> Any:
        code = execute(self, **options)
        if options.get("status"):
            self.outstream.write(f"\n{LEGEND}\n")
        return code

    _execute.hive_wrapped = True  # type: ignore[attr-defined]
    listing._execute = _execute
    info: Any = Info
    reasons = info.get_reasons

    def get_reasons(found: dict[str, Any]) -> str:
        text: str = reasons(found)
        return text.replace(" (args=[], kwargs={})", "")

    info.get_reasons = staticmethod(get_reasons)
