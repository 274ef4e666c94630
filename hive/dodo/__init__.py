"""Where Hive plugs into doit: the loader a `dodo.py` hands over to, the `uptodate`
checks, the reporter, and the start-of-run reconcile."""

from hive.dodo.loader import load_dodo

__all__ = ["load_dodo"]
