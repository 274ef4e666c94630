"""`python -m hive` is the `hive` command (used by the per-repo shim agents call)."""

import sys

from hive.cli.main import main

sys.exit(main())
