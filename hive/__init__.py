"""Hive: run a markdown plan of coding tasks with LLM agents, the way make runs a Makefile."""

try:  # written by setuptools-scm as Hive is built or installed: the version names its commit
    from hive._version import __version__ as __version__
except ImportError:  # a copy of the files that was never built or installed
    __version__ = "0.1.0"

__all__ = ["__version__"]
