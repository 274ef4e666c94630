"""How Hive starts its standard-library-only helpers as processes of their own — envexec (every
unsandboxed agent's pane, a check's proxy), the sandbox's relay and proxy, `hive done`
(agentshim), the log's writer (logcap): `python -I -S` (isolated, no site: nothing of Hive's venv
to import), the helper imported rather than run as a file. A file run is compiled anew at every
start (~1.5 ms of envexec's ~12); an import comes from its cached bytecode (issue 44: two of them
are on every sandboxed task's way).
Its folder goes last on the path: no name of Hive's there hides one of the standard library's."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path


def argv(module_file: str | os.PathLike[str]) -> list[str]:
    """The command that runs the helper module at `module_file` as `main(sys.argv[1:])` would be
    run by its `if __name__ == "__main__"` (its arguments follow)."""
    return list(_command(os.fspath(module_file)))


@functools.cache
def _command(module_file: str) -> tuple[str, ...]:
    """Made once a process: asked at each agent's start, and resolving the path walks it."""
    path = Path(module_file).resolve()
    name = path.stem
    code = f"import sys; sys.path.append({str(path.parent)!r}); import {name}; sys.exit({name}.main(sys.argv[1:]))"
    return (sys.executable, "-I", "-S", "-c", code)
