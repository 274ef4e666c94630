"""Where Hive plugs into doit: the loader a `dodo.py` hands over to, the `uptodate`
checks, the reporter, the start-of-run reconcile, and doit's workers made safe to stop."""

from hive import crashsafe

# First, before the rest of Hive loads: a Ctrl-C or SIGTERM that arrives while it does
# is handled like any later one (exit 130/143, no traceback; seen in the soak).
crashsafe.install_for_doit()

from hive.dodo.loader import load_dodo  # noqa: E402

__all__ = ["load_dodo"]
