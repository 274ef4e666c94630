"""doit entry point written by `hive init`: every approved plan in plans/ becomes doit tasks."""

from hive.dodo import load_dodo

globals().update(load_dodo(__file__))
