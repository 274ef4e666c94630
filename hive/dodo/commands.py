"""doit's `list --status` and `info`, made to read well for Hive's tasks (issue 43): a legend for
the letters `list --status` prints, and `info` without doit's internals — the arguments of an
uptodate check (always none for Hive's) and the rank Hive keeps its queue in (hive.dodo.dispatch)."""

from __future__ import annotations

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

    # doit passes a command's options by the names of `_execute`'s parameters: doit 0.37's, spelt out
    def _execute(
        self: Any,
        subtasks: bool = False,
        quiet: bool = True,
        status: bool = False,
        private: bool = False,
        list_deps: bool = False,
        template: str | None = None,
        sort: str = "name",
        pos_args: list[str] | None = None,
    ) -> Any:
        code = execute(self, subtasks, quiet, status, private, list_deps, template, sort, pos_args)
        if status:
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
