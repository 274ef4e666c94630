"""Kept for the `dodo.py` files older `hive init`s wrote (`from hive.compiler import
load_dodo`): users' repositories must keep working after an upgrade."""

from hive.dodo import load_dodo

__all__ = ["load_dodo"]
