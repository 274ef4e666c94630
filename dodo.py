"""doit entry point written by `hive init`: every approved plan in plans/ becomes doit tasks."""

import os
import sys

# doit puts this folder first on sys.path: a module an agent's commit left here (a `hive/`, a
# `json.py`) must never be imported instead of Hive's own or Python's
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]

from hive.dodo import load_dodo  # noqa: E402

globals().update(load_dodo(__file__))
