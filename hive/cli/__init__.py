"""The `hive` command: `main` parses and dispatches; one module per verb does the work."""

from hive.cli.main import main

__all__ = ["main"]
